"""The Dash app: layout and thin callbacks over backend services and pure figure builders.

``create_dash(server, data_dir, read_only)`` mounts it at "/" on a FastAPI app
(Dash 4's FastAPI backend), so one uvicorn process serves the API and the UI.
"""

from __future__ import annotations

import logging
from pathlib import Path

import dash
from dash import ALL, Input, Output, Patch, State, ctx, dash_table, dcc, html, no_update
from fastapi import FastAPI

from app import data
from app.figures import (
    TRACE,
    angle_histogram_figure,
    message_figure,
    selected_points,
)
from app.mapfigure import density_figure, map_figure_json, selected_xy
from app.mapview import clicked_row, map_layers
from app.offload import offloaded
from app.pages_upload import register_upload, upload_section
from app.request_guard import DashRequestGuard
from app.state import GROUPINGS, ViewState, parse_query
from app.static_report import static_report_html
from app.verdict import verdict_children
from app.viewer import group_scenes, molecule_scenes, viewer_spec

log = logging.getLogger(__name__)

ASSETS = Path(__file__).resolve().parent.parent / "frontend_assets"
DEFAULT_DATASET = "qm9"
GROUP_TABLE_ROWS = 200
BASE_COLOR_OPTIONS = [
    {"label": "axis", "value": "axis"},
    {"label": "group", "value": "group"},
    {"label": "classifier score", "value": "score"},
]
GROUP_VIEWER_MEMBERS = 8
N_NEIGHBOURS = 6


# ----------------------------------------------------------------- layout
def _header(read_only: bool) -> html.Header:
    return html.Header(
        [
            html.H1(["Orient", html.Span("Scope")]),
            html.Label(["Dataset", dcc.Dropdown(id="dataset-select", clearable=False, className="dataset-select")]),
            html.Button("Copy link", id="copy-link", className="button"),
            html.Span(id="copy-status", className="note"),
            html.A("Upload a dataset", id="upload-link", href="/upload", className="nav-link", hidden=read_only),
            html.Span("read-only lab dashboard", className="badge") if read_only else None,
        ],
        className="topbar",
    )


def _controls() -> html.Div:
    return html.Div(
        [
            html.Label(
                className="control",
                children=[
                    "View",
                    dcc.RadioItems(
                        id="view-mode",
                        options=[
                            {"label": "Mollweide map", "value": "map"},
                            {"label": "density", "value": "density"},
                            {"label": "3D sphere", "value": "sphere"},
                        ],
                        value="map",
                        inline=True,
                    ),
                ],
            ),
            html.Label(
                className="control",
                children=[
                    "Axes",
                    dcc.Checklist(
                        id="axes-select",
                        options=[{"label": f" {a}", "value": str(a)} for a in (1, 2, 3)],
                        value=["1", "2", "3"],
                        inline=True,
                    ),
                ],
            ),
            html.Label(
                className="control",
                children=[
                    "Colour by",
                    dcc.Dropdown(id="color-by", clearable=False, value="axis", options=BASE_COLOR_OPTIONS),
                ],
            ),
            html.Label(
                className="control",
                children=[
                    "Grouping",
                    dcc.Dropdown(id="grouping", options=list(GROUPINGS), value="formula", clearable=False),
                ],
            ),
            html.Label(
                className="control",
                children=["Only group", dcc.Dropdown(id="group-filter", placeholder="all molecules")],
            ),
            html.Label(
                className="control",
                children=[
                    "SMARTS highlight",
                    dcc.Input(id="smarts", type="text", debounce=True, placeholder="e.g. C=O", className="smarts"),
                ],
            ),
            html.Div(
                [
                    html.Button("PNG", id="export-png", className="button small"),
                    html.Button("SVG", id="export-svg", className="button small"),
                    html.Button("HTML report", id="download-report-btn", className="button small"),
                ],
                className="exports",
            ),
        ],
        className="controls",
    )


def _molecule_panel() -> html.Div:
    return html.Div(
        [
            html.H3(["Molecule ", html.Span(id="molecule-id", className="molecule-id")]),
            html.Div(id="molecule-info", className="molecule-info"),
            html.Div(id="molecule-viewer", className="viewer"),
            html.Div(id="molecule-extra"),
        ],
        id="molecule-panel",
        className="panel molecule-panel",
    )


def _groups_section() -> html.Section:
    return html.Section(
        [
            html.H2("Groups"),
            html.P(
                "Pick a group to filter the map and see its members aligned in the canonical pose.", className="note"
            ),
            dcc.Loading(
                dash_table.DataTable(
                    id="groups-table",
                    sort_action="native",
                    row_selectable="single",
                    page_size=12,
                    style_table={"overflowX": "auto"},
                    style_cell={"fontFamily": "inherit", "fontSize": 13},
                    columns=[
                        {"name": n, "id": n} for n in ("group", "size", "spread_deg", "concentration", "mean_score")
                    ],
                )
            ),
            html.Div(id="group-viewer", className="viewer grid"),
        ],
        className="panel",
    )


def _compare_section() -> html.Section:
    return html.Section(
        [
            html.H2("Compare"),
            html.Div(
                [
                    dcc.Dropdown(id="compare-a", placeholder="dataset A, e.g. QM9"),
                    dcc.Dropdown(id="compare-b", placeholder="dataset B, e.g. QM9 · control"),
                ],
                className="compare-pickers",
            ),
            dcc.Loading(html.Div(id="compare-body", className="compare")),
        ],
        className="panel",
    )


def build_layout(read_only: bool) -> html.Div:
    return html.Div(
        [
            dcc.Location(id="url", refresh=False),
            dcc.Store(id="map-state"),
            dcc.Store(id="map-drawn"),
            dcc.Store(id="selected"),
            dcc.Store(id="viewer-spec"),
            dcc.Store(id="viewer-done"),
            dcc.Store(id="group-spec"),
            dcc.Store(id="group-done"),
            dcc.Store(id="export-done"),
            dcc.Download(id="download-report"),
            dcc.Interval(id="status-poll", interval=2000, disabled=True),
            _header(read_only),
            upload_section(read_only),
            html.Div(id="messages", className="messages"),
            html.Div(id="progress", className="progress"),
            html.Section(
                [
                    html.H2("Verdict"),
                    dcc.Loading(html.Div(id="verdict", className="verdict")),
                    dcc.Graph(id="angle-histogram", config={"displaylogo": False}),
                ],
                className="panel",
            ),
            html.Section(
                [
                    html.H2("Orientations of every molecule"),
                    _controls(),
                    html.Div(id="map-notes", className="note"),
                    html.Div(
                        [
                            html.Div(
                                dcc.Loading(
                                    dcc.Graph(
                                        id="orientation-map",
                                        # WebGL at the screen's own resolution: plotly's default of 2x
                                        # rasterises 4x the pixels, which software WebGL pays for in full.
                                        config={"displaylogo": False, "scrollZoom": True, "plotGlPixelRatio": 1},
                                        figure=message_figure("Loading…"),
                                    )
                                ),
                                className="map",
                            ),
                            _molecule_panel(),
                        ],
                        className="explore",
                    ),
                ],
                className="panel",
            ),
            _groups_section(),
            _compare_section(),
            html.Footer(
                ["OrientScope · 3Dmol.js served locally from frontend_assets · ", html.A("API docs", href="/api/docs")]
            ),
        ],
        className="page",
    )


# ----------------------------------------------------------------- helpers
def _dataset_options(data_dir: Path) -> tuple[list[dict], list[str]]:
    options, ready = [], []
    for info in data.list_datasets(data_dir):
        label = f"{info.name} ({info.n_molecules:,})"
        if info.status != data.READY:
            label += f" · {info.status}"
        options.append({"label": label, "value": info.id})
        if info.status == data.READY:
            ready.append(info.id)
    return options, ready


def _color_options(data_dir: Path, dataset: str | None) -> list[dict]:
    """Colour choices for a dataset: the fixed ones plus one per stored property."""
    try:
        props = data.property_names(data_dir, dataset) if dataset else []
    except data.OrientScopeError:
        props = []
    return BASE_COLOR_OPTIONS + [{"label": f"property: {p}", "value": f"prop:{p}"} for p in props]


def _friendly(err: Exception) -> str:
    return str(err) if isinstance(err, data.OrientScopeError | ValueError | KeyError) else "something went wrong"


def _neighbour_list(title: str, result: dict | None, metric: str, fmt: str) -> html.Div:
    if result is None:
        return html.Div([html.H4(title), html.P("not computed for this dataset", className="note")])
    items = [
        html.Li(
            html.Button(
                f"{it['id']} · {it.get('smiles') or ''} · {fmt.format(it[metric])}",
                id={"type": "neighbour", "id": it["id"]},
                className="link-button",
            )
        )
        for it in result["items"]
    ]
    return html.Div([html.H4(title), html.Ul(items, className="neighbours")])


def _molecule_info(detail: dict) -> list:
    score = detail.get("classifier_score")
    rows = [
        ("SMILES", detail.get("smiles") or "–"),
        ("formula", detail.get("formula") or "–"),
        ("atoms", str(len(detail["elements"]))),
        ("classifier score P(stored)", "not computed" if score is None else f"{score:.3f}"),
        ("degenerate frame", f"yes ({detail.get('degenerate_reason')})" if detail.get("degenerate") else "no"),
    ]
    rows += [(f"{k} group", v) for k, v in (detail.get("groups") or {}).items() if v is not None]
    props = [
        (p["name"] + (f" ({p['unit']})" if p.get("unit") else ""), "–" if p["value"] is None else f"{p['value']:.5g}")
        for p in detail.get("properties", [])
    ]
    table = html.Table(
        [html.Tr([html.Th(k), html.Td(v, className="smiles" if k == "SMILES" else None)]) for k, v in rows],
        className="kv",
    )
    ptable = html.Details(
        [
            html.Summary(f"{len(props)} properties"),
            html.Table([html.Tr([html.Th(k), html.Td(v)]) for k, v in props], className="kv"),
        ]
    )
    return [table, ptable]


# ----------------------------------------------------------------- app
def create_dash(server: FastAPI, data_dir: Path, read_only: bool = False) -> dash.Dash:
    """Mount the dashboard at "/" of ``server`` (a FastAPI app) and return the Dash app."""
    data_dir = Path(data_dir)
    has_gzip = any(
        getattr(m.cls, "__name__", "") in ("GZipMiddleware", "SelectiveGZip")
        for m in getattr(server, "user_middleware", [])
    )
    app = dash.Dash(
        __name__,
        server=server,
        backend="fastapi",
        assets_folder=str(ASSETS),
        title="OrientScope",
        compress=not has_gzip,
        serve_locally=True,
        update_title=None,
        eager_loading=True,  # plotly.js loads with the page instead of after the first callbacks
    )
    app.layout = lambda: build_layout(read_only)
    # Added after Dash's own middleware, so it runs first.
    server.add_middleware(DashRequestGuard, dash_app=app)
    _register(app, data_dir)
    if not read_only:
        register_upload(app)
    return app


def _register(app: dash.Dash, data_dir: Path) -> None:  # noqa: C901 - one place for all callbacks
    callback = offloaded(app.callback)

    @callback(
        Output("url", "search"),
        Output("dataset-select", "value"),
        Output("color-by", "value"),
        Output("grouping", "value"),
        Output("group-filter", "value"),
        Output("smarts", "value"),
        Output("view-mode", "value"),
        Output("axes-select", "value"),
        Output("selected", "data"),
        Output("map-state", "data"),
        Output("messages", "children"),
        Output("dataset-select", "options"),
        # With the value, not later: a dropdown drops a value that is not among its options yet.
        Output("color-by", "options"),
        Input("url", "search"),
        Input("dataset-select", "value"),
        Input("color-by", "value"),
        Input("grouping", "value"),
        Input("group-filter", "value"),
        Input("smarts", "value"),
        Input("view-mode", "value"),
        Input("axes-select", "value"),
        Input("selected", "data"),
        State("map-state", "data"),
    )
    def sync_state(search, dataset, color, grouping, group, smarts, view, axes, selected, current):
        """The URL and the controls mirror each other; map-state changes only when the map must redraw."""
        n_out = 13
        out = [no_update] * n_out
        trigger = ctx.triggered_id
        options, ready = _dataset_options(data_dir)
        messages = []
        if trigger in (None, "url"):
            st, messages = parse_query(search)
            if st.dataset is None:
                st = st.with_(dataset=DEFAULT_DATASET if DEFAULT_DATASET in ready else (ready[0] if ready else None))
            elif st.dataset not in {o["value"] for o in options}:
                messages.append(
                    f"Unknown dataset {st.dataset!r}; showing {ready[0] if ready else 'nothing'} instead. "
                    f"Known datasets: {', '.join(o['value'] for o in options) or 'none'}."
                )
                st = st.with_(dataset=ready[0] if ready else None, molecule=None, group=None)
            if st.molecule and st.dataset:
                try:
                    data.load_map_data(data_dir, st.dataset).row_of(st.molecule)
                except (KeyError, data.OrientScopeError):
                    messages.append(f"Unknown molecule {st.molecule!r} in dataset {st.dataset!r}; nothing selected.")
                    st = st.with_(molecule=None)
            out[1:9] = [
                st.dataset,
                st.color,
                st.grouping,
                st.group,
                st.smarts or "",
                st.view,
                list(st.axes),
                st.molecule,
            ]
            out[0] = st.to_query() if messages else no_update
        else:
            if trigger == "dataset-select":
                selected, group, color = None, None, "axis" if (color or "").startswith("prop:") else color
                out[2], out[4], out[8] = color, None, None
            if trigger == "grouping":
                group = None
                out[4] = None
            st = ViewState(
                dataset=dataset,
                color=color or "axis",
                grouping=grouping or "formula",
                group=group or None,
                smarts=(smarts or "").strip() or None,
                molecule=selected,
                view=view or "map",
                axes="".join(sorted(axes or [])) or "123",
            )
            out[0] = st.to_query()
        new_map = st.map_state()
        out[9] = new_map if new_map != current else no_update
        out[10] = (
            [html.P(m, className="warning") for m in messages]
            if messages
            else ([] if trigger in (None, "url") else no_update)
        )
        out[11] = options
        if trigger in (None, "url", "dataset-select"):
            out[12] = _color_options(data_dir, st.dataset)
        return out

    @callback(
        Output("verdict", "children"),
        Output("angle-histogram", "figure"),
        Output("progress", "children"),
        Output("status-poll", "disabled"),
        Input("map-state", "data"),
        Input("status-poll", "n_intervals"),
    )
    def show_verdict(st, _n):
        if not st or not st.get("dataset"):
            return [html.P("No dataset is ready yet.", className="warning")], message_figure("", 300), None, False
        dataset = st["dataset"]
        try:
            info = data.dataset_info(data_dir, dataset)
        except data.OrientScopeError as err:
            return [html.P(_friendly(err), className="warning")], message_figure("", 300), None, True
        if info.status != data.READY:
            bar = [html.Progress(className="busy"), html.Span(f" {info.name}: {info.status} – {info.message}")]
            return (
                [html.P("Results will appear when the computation finishes.")],
                message_figure("", 300),
                bar,
                info.status != "computing",
            )
        if ctx.triggered_id == "status-poll" and _n:
            return no_update, no_update, None, True
        try:
            report = data.dataset_summary(data_dir, dataset)
        except data.OrientScopeError as err:
            return [html.P(_friendly(err), className="warning")], message_figure("", 300), None, True
        hist = angle_histogram_figure(report.get("angle_histogram"), report.get("control", {}).get("angle_histogram"))
        try:
            children = verdict_children(report)
        except (KeyError, TypeError, ValueError, IndexError):  # a report section in an unexpected shape
            log.exception("cannot render the verdict of %s", dataset)
            children = [html.P((report.get("verdict") or {}).get("text", "No verdict."), className="verdict-line")]
        return children, hist, None, True

    @callback(
        Output("orientation-map", "figure"),
        Output("map-notes", "children"),
        Output("map-drawn", "data"),
        Input("map-state", "data"),
        State("selected", "data"),
    )
    def draw_map(st, selected):
        if not st or not st.get("dataset"):
            return message_figure("Choose a dataset."), None, None
        try:
            fig, layers = map_figure_json(data_dir, st, selected)
        except data.OrientScopeError as err:
            return message_figure(_friendly(err)), None, None
        return fig, [html.Span(n + ". ") for n in layers.notes], st

    @callback(
        Output("orientation-map", "figure", allow_duplicate=True),
        Input("selected", "data"),
        State("map-state", "data"),
        State("map-drawn", "data"),
        prevent_initial_call=True,
    )
    def mark_selected(selected, st, drawn):
        # patch only a map that is already drawn for this state; draw_map marks the selection itself
        if not st or st != drawn or st.get("view", "map") != "map":
            return no_update
        layers = map_layers(data_dir, st)
        sel = selected_xy(layers, selected)
        patch = Patch()
        ring = selected_points(sel)
        patch["data"][TRACE["selected"]]["x"] = ring["x"]
        patch["data"][TRACE["selected"]]["y"] = ring["y"]
        return patch

    @callback(
        Output("selected", "data", allow_duplicate=True),
        Input("orientation-map", "clickData"),
        State("map-state", "data"),
        prevent_initial_call=True,
    )
    def click_point(click, st):
        if not click or not st:
            return no_update
        point = click["points"][0]
        layers = map_layers(data_dir, st)
        row = clicked_row(layers, st.get("view", "map"), point.get("curveNumber", -1), point.get("pointNumber", -1))
        return no_update if row is None else str(layers.md.ids[row])

    @callback(
        Output("selected", "data", allow_duplicate=True),
        Input({"type": "neighbour", "id": ALL}, "n_clicks"),
        prevent_initial_call=True,
    )
    def click_neighbour(clicks):
        if not ctx.triggered_id or not any(clicks or []):
            return no_update
        return ctx.triggered_id["id"]

    @callback(
        Output("molecule-id", "children"),
        Output("molecule-info", "children"),
        Output("viewer-spec", "data"),
        Input("selected", "data"),
        Input("map-state", "data"),
    )
    def show_molecule(selected, st):
        if not selected or not st or not st.get("dataset"):
            return "", html.P("Click a point on the map to see that molecule.", className="note"), None
        try:
            detail = data.molecule_detail(data_dir, st["dataset"], selected)
        except data.OrientScopeError as err:
            return "", html.P(_friendly(err), className="warning"), None
        spec = viewer_spec(molecule_scenes(detail), molecule=str(detail["id"]), cols=2)
        return str(detail["id"]), _molecule_info(detail), spec

    # Separate from the viewer: a neighbour search over the whole dataset must not delay the 3D view.
    @callback(
        Output("molecule-extra", "children"),
        Input("selected", "data"),
        Input("map-state", "data"),
    )
    def show_neighbours(selected, st):
        if not selected or not st or not st.get("dataset"):
            return None
        try:
            pose = data.neighbors(data_dir, st["dataset"], selected, "pose", N_NEIGHBOURS)
            chem = data.neighbors(data_dir, st["dataset"], selected, "chemistry", N_NEIGHBOURS)
        except data.OrientScopeError:
            return None  # show_molecule reports an unknown molecule
        return html.Div(
            [
                _neighbour_list("Nearest in pose", pose, "angle_deg", "{:.1f}°"),
                _neighbour_list("Nearest in chemistry", chem, "tanimoto", "Tanimoto {:.2f}"),
            ],
            className="neighbour-lists",
        )

    app.clientside_callback(
        dash.ClientsideFunction("orientscope", "renderViewer"),
        Output("viewer-done", "data"),
        Input("viewer-spec", "data"),
        State("molecule-viewer", "id"),
    )
    app.clientside_callback(
        dash.ClientsideFunction("orientscope", "renderViewer"),
        Output("group-done", "data"),
        Input("group-spec", "data"),
        State("group-viewer", "id"),
    )
    app.clientside_callback(
        dash.ClientsideFunction("orientscope", "copyLink"),
        Output("copy-status", "children"),
        Input("copy-link", "n_clicks"),
        prevent_initial_call=True,
    )
    app.clientside_callback(
        dash.ClientsideFunction("orientscope", "exportMap"),
        Output("export-done", "data"),
        Input("export-png", "n_clicks"),
        Input("export-svg", "n_clicks"),
        State("map-state", "data"),
        prevent_initial_call=True,
    )

    @callback(
        Output("group-filter", "options"),
        Output("groups-table", "data"),
        Output("groups-table", "selected_rows"),
        Input("map-state", "data"),
    )
    def list_groups(st):
        if not st or not st.get("dataset"):
            return [], [], []
        try:
            rows = _group_rows(data_dir, st["dataset"], st["grouping"])
        except data.OrientScopeError:
            return [], [], []
        options = [{"label": f"{r['group']} ({r['size']})", "value": r["group"]} for r in rows]
        if st.get("group") and st["group"] not in {o["value"] for o in options}:
            options.append({"label": st["group"], "value": st["group"]})
        picked = [i for i, r in enumerate(rows) if r["group"] == st.get("group")]
        return options, rows, picked

    @callback(
        Output("group-filter", "value", allow_duplicate=True),
        Input("groups-table", "selected_rows"),
        State("groups-table", "data"),
        State("group-filter", "value"),
        prevent_initial_call=True,
    )
    def pick_group(selected_rows, rows, current):
        if not selected_rows or not rows:
            return no_update
        group = rows[selected_rows[0]]["group"]
        return no_update if group == current else group

    @callback(Output("group-spec", "data"), Input("map-state", "data"))
    def show_group_members(st):
        if not st or not st.get("group") or not st.get("dataset"):
            return None
        labels = data.group_labels(data_dir, st["dataset"], st["grouping"])
        if labels is None:
            return None
        md = data.load_map_data(data_dir, st["dataset"])
        members = md.ids[labels.astype(str) == str(st["group"])][:GROUP_VIEWER_MEMBERS]
        details = [data.molecule_detail(data_dir, st["dataset"], m) for m in members]
        return viewer_spec(group_scenes(details), molecule=f"group:{st['group']}", cols=4) if details else None

    @callback(
        Output("download-report", "data"),
        Input("download-report-btn", "n_clicks"),
        State("map-state", "data"),
        prevent_initial_call=True,
    )
    def download_report(_n, st):
        if not st or not st.get("dataset"):
            return no_update
        report = data.dataset_summary(data_dir, st["dataset"])
        layers = map_layers(data_dir, {**st, "view": "density"})
        density = density_figure(layers, report.get("reference_orientation"), "Axis density (Mollweide)")
        text = static_report_html(
            report,
            [
                angle_histogram_figure(report.get("angle_histogram"), report.get("control", {}).get("angle_histogram")),
                density,
            ],
        )
        return {"content": text, "filename": f"orientscope-{st['dataset']}-report.html", "type": "text/html"}

    @callback(
        Output("compare-a", "options"),
        Output("compare-b", "options"),
        Input("map-state", "data"),
    )
    def compare_options(_st):
        """Each ready dataset and its control; nothing is computed until two are picked."""
        options, ready = _dataset_options(data_dir)
        opts = []
        for o in options:
            if o["value"] in ready:
                opts += [o, {"label": f"{o['label']} · control", "value": f"{o['value']}::control"}]
        return opts, opts

    @callback(Output("compare-body", "children"), Input("compare-a", "value"), Input("compare-b", "value"))
    def compare(a, b):
        return [_compare_column(data_dir, v) for v in (a, b) if v]


def _compare_column(data_dir: Path, value: str) -> html.Div:
    dataset, _, table = value.partition("::")
    table = table or "original"
    try:
        report = data.dataset_summary(data_dir, dataset)
    except data.OrientScopeError as err:
        return html.Div(html.P(_friendly(err), className="warning"))
    if table == "control":
        c = report.get("control", {})
        shown = {
            **report,
            **{k: v for k, v in c.items() if k != "description"},
            "control": {},
            "name": f"{report['name']} · control",
        }
        shown["verdict"] = {
            "text": "Control: every molecule rotated by a seeded Haar-uniform rotation",
            "aligned": None,
        }
    else:
        shown = report
    st = ViewState(dataset=dataset, view="density").map_state(table=table)
    fig = density_figure(map_layers(data_dir, st), shown.get("reference_orientation"), shown.get("name", dataset))
    fig.update_layout(height=340)
    return html.Div(
        [html.Div(verdict_children(shown), className="verdict"), dcc.Graph(figure=fig, config={"displaylogo": False})],
        className="compare-column",
    )


def _stat(stats: dict, word: str):
    key = next((k for k in stats if word in k), None)
    value = stats.get(key) if key else None
    return round(float(value), 3) if isinstance(value, int | float) else None


def _group_rows(data_dir: Path, dataset: str, grouping: str) -> list[dict]:
    """Largest groups with size, spread and concentration (the last two when the chemistry stage has run)."""
    groups = data.list_groups(data_dir, dataset, grouping, GROUP_TABLE_ROWS) or []
    return [
        {
            "group": g["group"],
            "size": g["size"],
            "spread_deg": _stat(g.get("statistics") or {}, "spread"),
            "concentration": _stat(g.get("statistics") or {}, "concentration"),
            "mean_score": None if g.get("mean_classifier_score") is None else round(g["mean_classifier_score"], 3),
        }
        for g in groups
    ]
