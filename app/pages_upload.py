"""The upload page (``/upload``): send a dataset to ``POST /api/datasets`` and follow its job.

The browser talks to the REST API itself (clientside callbacks), so an upload
from the page meets the same size limit, token check and read-only refusal as
any other client, and no science or storage runs in a Dash callback. The page
is left out entirely on a read-only server.
"""

from __future__ import annotations

import dash
from dash import ClientsideFunction, Input, Output, State, dcc, html

from orientscope.app.upload_widgets import POLL_MS, drop_zone, register_chosen_label
from orientscope.services import formats

FORMAT_OPTIONS = list(formats.INGEST_CHOICES)


def upload_section(read_only: bool) -> html.Section | None:
    """The upload form with its progress bar (None on a read-only server)."""
    if read_only:
        return None
    return html.Section(
        [
            html.H2("Upload a dataset"),
            html.P(
                [
                    f"{formats.upload_summary()}, or a zip/tar of such files. Ids are kept "
                    "as written; what is read differently (a renamed id or property) is listed when the job is "
                    "done. The whole pipeline runs in the background; the dataset then "
                    "appears in the dataset list. Large files: use ",
                    html.Code("orientscope ingest"),
                    " on the server.",
                ]
            ),
            drop_zone(["Drop a file here or ", html.A("choose one")], "upload-file", "upload-drop-text"),
            html.Div(
                [
                    dcc.Input(id="upload-name", placeholder="dataset name", type="text", debounce=False),
                    dcc.Dropdown(id="upload-format", options=FORMAT_OPTIONS, value="auto", clearable=False),
                    dcc.Checklist(
                        id="upload-strict",
                        options=[{"label": " strict (fail on any bad record)", "value": "strict"}],
                        value=[],
                    ),
                    dcc.Input(id="upload-token", placeholder="API token (if the server needs one)", type="password"),
                    html.Button("Upload and analyse", id="upload-submit", n_clicks=0, className="button"),
                ],
                className="upload-form",
            ),
            html.Progress(
                id="upload-progress",
                value="0",
                max="100",
                className="upload-progress",
                title="",
                style={"width": "100%"},
            ),
            html.Div(id="upload-status", className="upload-status", role="status"),
            html.A("Open the dataset", id="upload-open", href="/", hidden=True),
            dcc.Store(id="upload-job"),
            dcc.Interval(id="upload-poll", interval=POLL_MS, disabled=True),
        ],
        id="upload-page",
        className="panel",
        hidden=True,
    )


def register_upload(app: dash.Dash) -> None:
    """Clientside callbacks of the upload page (register only when the section is in the layout)."""
    app.clientside_callback(
        ClientsideFunction("orientscope_panels", "uploadHidden"),
        Output("upload-page", "hidden"),
        Input("url", "pathname"),
    )
    register_chosen_label(app, "upload-file", "upload-drop-text")
    app.clientside_callback(
        ClientsideFunction("orientscope_panels", "uploadSubmit"),
        Output("upload-job", "data"),
        Input("upload-submit", "n_clicks"),
        State("upload-file", "contents"),
        State("upload-file", "filename"),
        State("upload-name", "value"),
        State("upload-format", "value"),
        State("upload-strict", "value"),
        State("upload-token", "value"),
        prevent_initial_call=True,
    )
    app.clientside_callback(
        ClientsideFunction("orientscope_panels", "uploadPoll"),
        Output("upload-progress", "value"),
        Output("upload-status", "children"),
        Output("upload-poll", "disabled"),
        Output("upload-open", "href"),
        Output("upload-open", "hidden"),
        Output("upload-progress", "className"),
        Output("upload-progress", "title"),
        Input("upload-poll", "n_intervals"),
        Input("upload-job", "data"),
    )
