"""The first screen's downloads: the de-biased set, and rotated copies for a model audit.

Each button queues a background export job through the services (the job the REST API's
``POST /api/datasets/{id}/exports`` queues: the same :class:`ExportRequest`, so the same file as
``orientscope export``); ``frontend_assets/panels.js`` follows the job at ``GET /api/jobs/{job_id}``
with a progress bar, then offers its files as download links. Exports only read the store, so they
work on read-only servers too.
"""

from __future__ import annotations

from pathlib import Path

import dash
from dash import ALL, ClientsideFunction, Input, Output, State, ctx, dcc, html, no_update

from orientscope.app import data, ids
from orientscope.app.upload_widgets import POLL_MS
from orientscope.services import formats
from orientscope.services.exports import ExportRequest

AUDIT_COPIES = 5  # as the model audit section's `orientscope export DATASET --mode random --copies 5`
# kind -> (button label, what the button says it gives, the export request's fields). Every export field
# is passed as the REST API's body would be: the dataset's own format unless one is named. The copies are in the
# registry's default export format (extended XYZ: every property kept), whatever the dataset's format.
DOWNLOADS = {
    "debiased": (
        "Download the de-biased set",
        "every molecule uniformly rotated (orientscope export DATASET --mode random), with each rotation as CSV",
        {"mode": "random"},
    ),
    "copies": (
        f"Download {AUDIT_COPIES} rotated copies",
        f"{AUDIT_COPIES} randomly rotated copies for a model audit "
        f"(orientscope export DATASET --mode random --copies {AUDIT_COPIES} --format {formats.DEFAULT_EXPORT})",
        {"mode": "random", "copies": AUDIT_COPIES, "format": formats.DEFAULT_EXPORT},
    ),
}


def export_request(kind: str) -> ExportRequest:
    """The export a download button asks for (ValueError naming the kinds for another)."""
    if kind not in DOWNLOADS:
        raise ValueError(f"unknown download {kind!r}; known: {', '.join(DOWNLOADS)}")
    return ExportRequest(**DOWNLOADS[kind][2])


def download_buttons() -> list:
    """The two buttons (pattern ids, so they may sit in the verdict panel's children)."""
    return [
        html.Button(label, id={"type": ids.DOWNLOAD, "kind": kind}, title=tip, className="button download")
        for kind, (label, tip, _) in DOWNLOADS.items()
    ]


def download_status() -> html.Div:
    """Where a download's progress and then its links show, with the stores and timer that follow the job."""
    return html.Div(
        [
            html.Div(id=ids.DOWNLOAD_STATUS, className="download-status", role="status"),
            dcc.Store(id=ids.DOWNLOAD_JOB),
            dcc.Interval(id=ids.DOWNLOAD_POLL, interval=POLL_MS, disabled=True),
        ]
    )


def start(data_dir: Path, dataset: str | None, kind: str) -> tuple[dict | None, str]:
    """(the job to follow, the status line) for a click on the ``kind`` button."""
    if not dataset:
        return None, "Choose a dataset first."
    try:
        job = data.submit_export(data_dir, dataset, export_request(kind))
    except (data.OrientScopeError, ValueError) as err:
        return None, f"The export could not start: {err}"
    request = job["input"]
    return {
        "job_id": job["id"],
        "export_id": job["export_id"],
        "dataset": dataset,
        "kind": kind,
        "copies": request.get("copies"),
    }, f"export {job['state']}…"


def register(app: dash.Dash, data_dir: Path, callback) -> None:
    """The buttons' callback (a job queued on the server) and the clientside poll that follows it."""

    @callback(
        Output(ids.DOWNLOAD_JOB, "data"),
        Output(ids.DOWNLOAD_STATUS, "children"),
        Input({"type": ids.DOWNLOAD, "kind": ALL}, "n_clicks"),
        State(ids.DATASET, "value"),
        prevent_initial_call=True,
    )
    def start_download(clicks, dataset):
        if not ctx.triggered_id or not any(clicks or []):  # a re-render of the buttons, not a click
            return no_update, no_update
        return start(data_dir, dataset, ctx.triggered_id["kind"])

    app.clientside_callback(
        ClientsideFunction("orientscope_panels", "downloadPoll"),
        Output(ids.DOWNLOAD_STATUS, "children", allow_duplicate=True),
        Output(ids.DOWNLOAD_POLL, "disabled"),
        Input(ids.DOWNLOAD_POLL, "n_intervals"),
        Input(ids.DOWNLOAD_JOB, "data"),
        prevent_initial_call=True,
    )
