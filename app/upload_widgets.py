"""What the upload page and the model audit share: the drop zone, its limits and its "Chosen" label.

Both post the file to the REST API from the browser (``postUpload`` in
``frontend_assets/orientscope.js``) and follow the job or audit it starts
(``pollRecord``), so the same size limit, token and read-only rules apply as
for any client.
"""

from __future__ import annotations

import dash
from dash import Input, Output, dcc, html

MAX_BROWSER_UPLOAD_BYTES = 200 * 1024 * 1024  # larger files: the CLI (`orientscope ingest`, `audit-model`)
POLL_MS = 700  # how often a running job or audit is polled


def drop_zone(label: list, upload_id: str, label_id: str, padding: str = "1.5em") -> dcc.Upload:
    """A single-file ``dcc.Upload`` showing ``label`` (id ``label_id``) until a file is chosen."""
    return dcc.Upload(
        html.Div(label, id=label_id),
        id=upload_id,
        multiple=False,
        max_size=MAX_BROWSER_UPLOAD_BYTES,
        className="upload-drop",
        style={"border": "1px dashed #888", "padding": padding, "textAlign": "center", "cursor": "pointer"},
    )


def register_chosen_label(app: dash.Dash, upload_id: str, label_id: str) -> None:
    """Show the chosen file's name in the drop zone (clientside)."""
    app.clientside_callback(
        dash.ClientsideFunction("orientscope", "chosenFile"),
        Output(label_id, "children"),
        Input(upload_id, "filename"),
    )
