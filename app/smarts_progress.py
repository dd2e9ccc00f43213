"""The progress of a background SMARTS search under the SMARTS box, and the map redrawn when it is done.

On a sharded set above ``ORIENTSCOPE_SMARTS_JOB_ABOVE`` molecules a SMARTS pattern
is searched by a background job on the engine (``POST /api/datasets/{id}/smarts``
does the same for REST clients). The map draws without the highlight meanwhile and
says so. The browser follows the job at ``GET /api/jobs/{job_id}`` (``pollRecord``,
as the upload page and the model audit do), showing the shards scanned; when it is
done the map is drawn again, now from the kept result, as fast as any recolour.
"""

from __future__ import annotations

from pathlib import Path

import dash
from dash import ClientsideFunction, Input, Output, State, dcc, html, no_update

from orientscope.app import data, ids
from orientscope.app.upload_widgets import POLL_MS
from orientscope.figures.state import ViewState

# Only a view with a pattern asks the server (a page without one costs no callback).


def widgets() -> list:
    """The progress line (under the SMARTS box) and the stores and timer that follow the job."""
    return [
        html.Div(id=ids.SMARTS_PROGRESS, className="smarts-progress note", role="status"),
        dcc.Store(id=ids.SMARTS_ASK),
        dcc.Store(id=ids.SMARTS_JOB),
        dcc.Store(id=ids.SMARTS_DONE),
        dcc.Interval(id=ids.SMARTS_POLL, interval=POLL_MS, disabled=True),
    ]


def follow(data_dir: Path, asked: dict | None) -> tuple:
    """(job store, poll disabled, progress text, done signal) for the pattern a view asks for."""
    st = ViewState.from_map_state(asked if asked and asked.get("smarts") else None)
    job = data.smarts_search_job(data_dir, st.dataset, st.smarts) if st.dataset and st.smarts else None
    if job is None:
        return None, True, "", no_update
    if job["state"] == "done":  # e.g. a page opened on a layout drawn while it ran: draw it with the matches
        return None, True, "", {"job_id": job["id"]}
    if job["state"] == "failed":
        return None, True, f"SMARTS search failed: {job['message']}", no_update
    return {"job_id": job["id"]}, False, f"SMARTS search {job['state']}: {job['message']}", no_update


def register(app: dash.Dash, data_dir: Path, callback) -> None:
    app.clientside_callback(
        ClientsideFunction("orientscope_panels", "smartsAsk"),
        Output(ids.SMARTS_ASK, "data"),
        Output(ids.MAP_NOTES, "children", allow_duplicate=True),
        Input(ids.MAP_STATE, "data"),
        State(ids.SMARTS_ASK, "data"),
        prevent_initial_call="initial_duplicate",  # it runs when the page opens, and shares the notes
    )

    @callback(
        Output(ids.SMARTS_JOB, "data"),
        Output(ids.SMARTS_POLL, "disabled"),
        Output(ids.SMARTS_PROGRESS, "children"),
        Output(ids.SMARTS_DONE, "data"),
        Input(ids.SMARTS_ASK, "data"),
        prevent_initial_call=True,
    )
    def follow_search(asked):
        return follow(data_dir, asked)

    app.clientside_callback(
        ClientsideFunction("orientscope_panels", "smartsPoll"),
        Output(ids.SMARTS_PROGRESS, "children", allow_duplicate=True),
        Output(ids.SMARTS_POLL, "disabled", allow_duplicate=True),
        Output(ids.SMARTS_DONE, "data", allow_duplicate=True),
        Input(ids.SMARTS_POLL, "n_intervals"),
        State(ids.SMARTS_JOB, "data"),
        prevent_initial_call=True,
    )
