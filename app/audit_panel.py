"""The "Model audit" section: upload a model's predictions, and read its audit beside the regression.

What a model *could* take from the pose (the dataset's orientation-only
regression) sits in the same table row as what this model *did* (its
reliance on the pose). Like the upload page, the browser posts the file to
the REST API itself (``POST /api/datasets/{id}/model-audits``) and follows the
audit there, so the same size limit, token and read-only rules apply and no
science runs in a callback; the upload box is left out on a read-only server.
"""

from __future__ import annotations

from pathlib import Path

import dash
from dash import ClientsideFunction, Input, Output, State, dash_table, dcc, html

from orientscope.app import data, ids
from orientscope.app.initial_view import color_options
from orientscope.app.upload_widgets import POLL_MS, drop_zone, register_chosen_label
from orientscope.core.numbers import format_count
from orientscope.services.audit_table import COLUMNS, audit_rows, provenance


def _upload_form(read_only: bool) -> html.Div | None:
    if read_only:
        return None
    return html.Div(
        [
            drop_zone(
                ["Drop a predictions file (CSV or Parquet) or ", html.A("choose one")],
                ids.AUDIT_FILE,
                ids.AUDIT_DROP,
                padding="1em",
            ),
            html.Div(
                [
                    dcc.Input(id=ids.AUDIT_NAME, placeholder="audit name, e.g. my GNN", type="text"),
                    dcc.Input(id=ids.AUDIT_TOKEN, placeholder="API token (if the server needs one)", type="password"),
                    html.Button("Audit", id=ids.AUDIT_SUBMIT, n_clicks=0, className="button"),
                ],
                className="upload-form",
            ),
            html.Div(id=ids.AUDIT_STATUS, className="upload-status", role="status"),
            dcc.Store(id=ids.AUDIT_JOB),
            dcc.Interval(id=ids.AUDIT_POLL, interval=POLL_MS, disabled=True),
        ]
    )


def audit_section(read_only: bool) -> html.Section:
    return html.Section(
        [
            html.H2("Model audit"),
            html.P(
                [
                    "Does your model lean on the pose? Run it on the stored poses and on rotated copies (",
                    html.Code("orientscope export DATASET --mode random --copies 5 --purpose audit --format extxyz"),
                    "), then upload a file with the columns id, property, stored, rotated "
                    "(optional: copy, true, split). ",
                    html.Em("Pose alone predicts"),
                    " is what any model could take from the poses; ",
                    html.Em("reliance"),
                    " is how much this model's error grows on the rotated copies; the ",
                    html.Em("rotation shift"),
                    " is how far its predictions move when a molecule is rotated (property unit).",
                ],
                className="note",
            ),
            _upload_form(read_only),
            dcc.Store(id=ids.AUDIT_DONE),
            html.Label(
                ["Audit", dcc.Dropdown(id=ids.AUDIT_SELECT, placeholder="no audit of this dataset yet")],
                className="control",
            ),
            dash_table.DataTable(
                id=ids.AUDIT_TABLE,
                columns=[{"name": label, "id": key} for key, label in COLUMNS],
                page_size=25,
                style_table={"overflowX": "auto"},
                style_cell={"fontFamily": "inherit", "fontSize": 13},
            ),
            html.Div(id=ids.AUDIT_TEXT, className="audit-text"),
        ],
        className="panel",
    )


def audit_texts(record: dict) -> list:
    """The tier sentences (all molecules), the warnings and which rules made the audit, as paragraphs."""
    texts = [
        html.P([html.Strong(p["property"] + ": "), p["verdict"]["text"]])
        for p in record.get("properties", [])
        if not p.get("split")
    ]
    warnings = [html.P(w, className="warning") for w in record.get("warnings", [])]
    unknown = record.get("n_unknown_ids")
    note = (
        [html.P(f"{format_count(unknown)} ids of the file are not in the dataset.", className="note")]
        if unknown
        else []
    )
    rules = [html.P(provenance(record), className="note audit-rules")]
    return texts + note + warnings + rules


def audit_choices(data_dir: Path, dataset: str | None) -> list[dict]:
    """Dropdown options: the dataset's finished audits, newest first."""
    if not dataset:
        return []
    try:
        audits = data.list_audits(data_dir, dataset)
    except data.OrientScopeError:
        return []
    done = [a for a in audits if a["state"] == "done"]
    return [{"label": f"{a['name']} ({a['id']})", "value": a["id"]} for a in reversed(done)]


def register_audit(app: dash.Dash, data_dir: Path, read_only: bool, callback) -> None:
    """The section's callbacks; ``callback`` is the dashboard's guarded ``orientscope.app.callback``."""
    if not read_only:
        register_chosen_label(app, ids.AUDIT_FILE, ids.AUDIT_DROP)
        app.clientside_callback(
            ClientsideFunction("orientscope_panels", "auditSubmit"),
            Output(ids.AUDIT_JOB, "data"),
            Input(ids.AUDIT_SUBMIT, "n_clicks"),
            State(ids.AUDIT_FILE, "contents"),
            State(ids.AUDIT_FILE, "filename"),
            State(ids.AUDIT_NAME, "value"),
            State(ids.AUDIT_TOKEN, "value"),
            State(ids.DATASET, "value"),
            prevent_initial_call=True,
        )
        app.clientside_callback(
            ClientsideFunction("orientscope_panels", "auditPoll"),
            Output(ids.AUDIT_STATUS, "children"),
            Output(ids.AUDIT_POLL, "disabled"),
            Output(ids.AUDIT_DONE, "data"),
            Input(ids.AUDIT_POLL, "n_intervals"),
            Input(ids.AUDIT_JOB, "data"),
            prevent_initial_call=True,
        )

    @callback(
        Output(ids.AUDIT_SELECT, "options"),
        Output(ids.AUDIT_SELECT, "value"),
        Output(ids.COLOR, "options", allow_duplicate=True),  # a finished audit adds "prediction shift" colours
        Input(ids.DATASET, "value"),
        Input(ids.AUDIT_DONE, "data"),
        prevent_initial_call=True,
    )
    def list_audits(dataset, finished):
        return (*choose_audit(data_dir, dataset, finished), color_options(data_dir, dataset))

    @callback(
        Output(ids.AUDIT_TABLE, "data"),
        Output(ids.AUDIT_TEXT, "children"),
        Input(ids.AUDIT_SELECT, "value"),
        State(ids.DATASET, "value"),
        prevent_initial_call=True,
    )
    def show_audit(audit_id, dataset):
        return audit_outputs(data_dir, dataset, audit_id)


def choose_audit(data_dir: Path, dataset: str | None, finished: str | None = None) -> tuple[list[dict], str | None]:
    """The audit choices and the one to show: the one just finished, else the newest."""
    options = audit_choices(data_dir, dataset)
    values = [o["value"] for o in options]
    return options, finished if finished in values else (values[0] if values else None)


def audit_outputs(data_dir: Path, dataset: str | None, audit_id: str | None) -> tuple[list[dict], list]:
    """The table rows and the verdict texts of one audit (empty without one)."""
    if not audit_id or not dataset:
        return [], []
    try:
        record = data.get_audit(data_dir, dataset, audit_id)
    except data.OrientScopeError as err:
        return [], [html.P(str(err), className="warning")]
    return audit_rows(record), audit_texts(record)


def first_view_props(data_dir: Path, dataset: str | None) -> dict[str, dict]:
    """Component id -> props of the section for a page's dataset (so no callback runs when it opens)."""
    options, chosen = choose_audit(data_dir, dataset)
    rows, texts = audit_outputs(data_dir, dataset, chosen)
    return {
        ids.AUDIT_SELECT: {"options": options, "value": chosen},
        ids.AUDIT_TABLE: {"data": rows},
        ids.AUDIT_TEXT: {"children": texts},
    }
