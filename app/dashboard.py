"""The Dash app: layout and thin callbacks over backend services and pure figure builders.

``create_dash(server, data_dir, read_only)`` mounts it at "/" on a FastAPI app
(Dash 4's FastAPI backend), so one uvicorn process serves the API and the UI.
"""

from __future__ import annotations

import logging
from pathlib import Path

import dash
from dash import ALL, Input, Output, State, ctx, dash_table, dcc, html, no_update
from dash.development.base_component import Component
from fastapi import FastAPI

from orientscope.app import downloads, ids, panels, pins, scatter_panel, selection_panel, smarts_progress
from orientscope.app.audit_panel import audit_section, register_audit
from orientscope.app.audit_panel import first_view_props as audit_first_view
from orientscope.app.compat import first_screen_scripts
from orientscope.app.initial_view import (
    BASE_COLOR_OPTIONS,
    color_options,
    dataset_options,
    page_query,
    resolve_view,
)
from orientscope.app.offload import guarded
from orientscope.app.pages_upload import register_upload, upload_section
from orientscope.app.state import control_values
from orientscope.core.groups import GROUP_KINDS
from orientscope.core.resources import frontend_asset
from orientscope.figures.mapfigure import region_viewport
from orientscope.figures.plots import message_figure
from orientscope.figures.state import PLANE_VIEWS, URL_FIELDS, ViewState
from orientscope.services.report_format import GROUP_COLUMN_NOTES

log = logging.getLogger(__name__)

ASSETS = frontend_asset()
LAZY_ASSETS = r"3Dmol-min\.js$"  # served from /assets/, but not put into the page
MAP_WHILE_LOADING = {"visibility": "visible", "opacity": 0.5}
VIEW_TIPS = {
    "density": "How densely the principal axes cover the sky, ÷ uniform (1 = uniform), beside the random-rotation "
    "control on the same scale",
    "map": "Every molecule's axes as points (Mollweide projection); click one to see the molecule",
    "sphere": "The axes on a rotatable unit sphere (a sample on large sets)",
    "scatter": "A stored property against a coordinate of one axis (longitude, latitude or a component); click a "
    "point to see the molecule",
}


# ----------------------------------------------------------------- layout
def _header(read_only: bool) -> html.Header:
    return html.Header(
        [
            html.H1(["Orient", html.Span("Scope")]),
            html.Label(["Dataset", dcc.Dropdown(id=ids.DATASET, clearable=False, className="dataset-select")]),
            html.Button("Copy link", id=ids.COPY_LINK, className="button"),
            html.Span(id=ids.COPY_STATUS, className="note"),
            html.A("Upload a dataset", id=ids.UPLOAD_LINK, href="/upload", className="nav-link", hidden=read_only),
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
                        id=ids.VIEW_MODE,
                        options=[
                            {"label": html.Span("density vs control", title=VIEW_TIPS["density"]), "value": "density"},
                            {"label": html.Span("Mollweide points", title=VIEW_TIPS["map"]), "value": "map"},
                            {"label": html.Span("3D sphere", title=VIEW_TIPS["sphere"]), "value": "sphere"},
                            {"label": html.Span("property vs axis", title=VIEW_TIPS["scatter"]), "value": "scatter"},
                        ],
                        value="density",
                        inline=True,
                    ),
                ],
            ),
            html.Label(
                className="control axes-control",
                children=[
                    "Axes",
                    dcc.Checklist(
                        id=ids.AXES,
                        options=[{"label": f" {a}", "value": str(a)} for a in (1, 2, 3)],
                        value=["1", "2", "3"],
                        inline=True,
                    ),
                    html.Span(id=ids.AXES_HINT, className="note"),
                ],
            ),
            html.Label(
                className="control color-control",
                children=[
                    "Colour by",
                    dcc.Dropdown(
                        id=ids.COLOR,
                        clearable=False,
                        value="axis",
                        options=BASE_COLOR_OPTIONS,
                        disabled=True,  # the default density view is not coloured by points
                    ),
                ],
            ),
            html.Label(
                className="control",
                children=[
                    "Grouping",
                    dcc.Dropdown(id=ids.GROUPING, options=list(GROUP_KINDS), value="formula", clearable=False),
                ],
            ),
            html.Label(
                className="control",
                # Searched on the server, as typed (app/panels.py group_search_options), and listed in its order.
                children=[
                    "Only group",
                    dcc.Dropdown(id=ids.GROUP_FILTER, placeholder="all molecules", search_order="original"),
                ],
            ),
            html.Label(
                className="control",
                children=[
                    "SMARTS highlight",
                    dcc.Input(id=ids.SMARTS, type="text", debounce=True, placeholder="e.g. C=O", className="smarts"),
                    *smarts_progress.widgets(),
                ],
            ),
            html.Div(
                [
                    html.Button("PNG", id=ids.EXPORT_PNG, className="button small"),
                    html.Button("SVG", id=ids.EXPORT_SVG, className="button small"),
                    html.Button("HTML report", id=ids.REPORT_BUTTON, className="button small"),
                ],
                className="exports",
            ),
        ],
        className="controls",
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
                    id=ids.GROUPS_TABLE,
                    sort_action="custom",  # all groups, not only the rows sent (app/panels.py group_outputs)
                    sort_mode="single",
                    sort_by=[],
                    row_selectable="single",
                    page_size=12,
                    style_table={"overflowX": "auto"},
                    # Left-aligned: DataTable puts the sort arrow left of the title, so right-aligned
                    # titles left each arrow beside the previous column's title.
                    style_cell={"fontFamily": "inherit", "fontSize": 13, "textAlign": "left"},
                    style_header={"textAlign": "left", "fontWeight": 600},
                    # Groups by their labels; the code travels in the row data only (the filter's value).
                    columns=[
                        {"name": "group", "id": "label"},
                        {"name": "molecules", "id": "size"},
                        {"name": "spread (°)", "id": "spread_deg"},
                        {"name": "concentration", "id": "concentration"},
                        {"name": "mean P(stored)", "id": "mean_score"},
                    ],
                    tooltip_header=GROUP_COLUMN_NOTES,
                )
            ),
            html.Ul([html.Li(note) for note in GROUP_COLUMN_NOTES.values()], className="note column-notes"),
            html.P(id=ids.GROUPS_SUMMARY, className="note"),
            html.Div(id=ids.GROUP_VIEWER, className="viewer grid"),
        ],
        className="panel",
    )


def _compare_section() -> html.Section:
    return html.Section(
        [
            html.H2("Compare"),
            html.Div(
                [
                    dcc.Dropdown(id=ids.COMPARE_A, placeholder="dataset A, e.g. QM9", clearable=False),
                    dcc.Dropdown(id=ids.COMPARE_B, placeholder="dataset B, e.g. QM9 · control"),
                ],
                className="compare-pickers",
            ),
            dcc.Loading(
                html.Div(
                    [
                        html.Div(id=ids.COMPARE_PANEL_A, className="compare-column"),
                        html.Div(id=ids.COMPARE_PANEL_B, className="compare-column"),
                    ],
                    id=ids.COMPARE_BODY,
                    className="compare",
                )
            ),
        ],
        className="panel",
    )


def build_layout(read_only: bool) -> html.Div:
    return html.Div(
        [
            dcc.Location(id=ids.URL, refresh=False),
            dcc.Store(id=ids.MAP_STATE),
            dcc.Store(id=ids.SELECTED_RING),
            dcc.Store(id=ids.RING_DONE),
            dcc.Store(id=ids.SELECTED),
            dcc.Store(id=ids.MAP_VIEWPORT),
            dcc.Store(id=ids.MAP_ZOOM),
            dcc.Store(id=ids.MAP_ZOOM_DONE),
            dcc.Store(id=ids.MAP_SELECTION),
            dcc.Store(id=ids.MAP_PAINT_DONE),
            dcc.Store(id=ids.MAP_DRAWN),
            dcc.Store(id=ids.VIEWER_SPEC),
            dcc.Store(id=ids.VIEWER_DONE),
            dcc.Store(id=ids.GROUP_SPEC),
            dcc.Store(id=ids.GROUP_DONE),
            dcc.Store(id=ids.EXPORT_DONE),
            dcc.Download(id=ids.DOWNLOAD_REPORT),
            dcc.Interval(id=ids.STATUS_POLL, interval=2000, disabled=True),
            _header(read_only),
            upload_section(read_only),
            html.Div(id=ids.MESSAGES, className="messages"),
            html.Div(id=ids.PROGRESS, className="progress"),
            html.Section(
                [
                    html.H2("Verdict"),
                    dcc.Loading(html.Div(id=ids.VERDICT, className="verdict")),
                    downloads.download_status(),
                ],
                className="panel verdict-panel",
            ),
            html.Section(
                [
                    html.H2("Orientations of every molecule"),
                    _controls(),
                    scatter_panel.scatter_controls(),
                    html.Div(id=ids.MAP_NOTES, className="note"),
                    html.Div(
                        [
                            html.Div(
                                # The map, the density view and the sphere are drawn by map_draw.js (map_sphere.js)
                                # into the map's box from the paint store (the clientside drawPlane); the scatter view
                                # is a plotly figure, in a graph shown only in that view.
                                # The map stays on screen, dimmed under the spinner, while its paint is computed
                                # (a SMARTS search, a colour): the paint store is what the loading state follows.
                                dcc.Loading(
                                    html.Div(
                                        [
                                            dcc.Store(id=ids.MAP_PAINT),
                                            html.Div(
                                                dcc.Loading(
                                                    dcc.Graph(
                                                        id=ids.MAP_GRAPH,
                                                        # WebGL at the screen's own resolution: plotly's default of 2x
                                                        # rasterises 4x the pixels, which software WebGL pays for in full.
                                                        config={
                                                            "displaylogo": False,
                                                            "scrollZoom": True,
                                                            "plotGlPixelRatio": 1,
                                                        },
                                                        figure=message_figure("Loading…"),
                                                    ),
                                                    # The graph stays on screen, dimmed under the spinner, while it is
                                                    # redrawn (Dash hides it by default: a SMARTS search left it blank).
                                                    overlay_style=MAP_WHILE_LOADING,
                                                ),
                                                id=ids.MAP_GRAPH_BOX,
                                                hidden=False,
                                            ),
                                        ],
                                        id=ids.MAP,
                                        className="map-host",
                                    ),
                                    target_components={ids.MAP_PAINT: "data"},
                                    parent_className="map-cell",
                                    overlay_style=MAP_WHILE_LOADING,
                                ),
                                className="map",
                            ),
                            panels.molecule_panel(),
                        ],
                        className="explore",
                    ),
                    html.P(id=ids.MAP_HINT, className="note map-hint"),
                    *pins.pin_strip(),
                    selection_panel.selection_section(),
                    # below the map: the frames the verdict rests on and the degeneracy codes
                    html.Div(id=ids.FRAME_NOTES, className="frame-notes"),
                ],
                className="panel",
            ),
            audit_section(read_only),
            # Below the maps: the first screen is the answers and the density beside its control.
            html.Section(
                [
                    html.H2("Angles to the reference orientation"),
                    dcc.Graph(id=ids.ANGLE_HISTOGRAM, config={"displaylogo": False}),
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


# ----------------------------------------------------------------- outputs
# Where each named field of a callback's answer is shown: field -> (component id, property).
# The callbacks answer dicts with these keys, and first_view fills the layout through the same maps.
STATE_OUT = {
    "search": (ids.URL, "search"),
    **{name: ids.CONTROL_OF[name] for name in URL_FIELDS},
    "map_state": (ids.MAP_STATE, "data"),
    "messages": (ids.MESSAGES, "children"),
    "dataset_options": (ids.DATASET, "options"),
    # With the value, not later: a dropdown drops a value that is not among its options yet.
    "color_options": (ids.COLOR, "options"),
    "prop_options": (ids.SCATTER_PROP, "options"),
    "scale_hint": (ids.SCATTER_SCALE_HINT, "children"),
    "compare_a": (ids.COMPARE_A, "value"),  # dataset A of the compare view is the page's dataset
}
MAP_OUT = {
    "figure": (ids.MAP_GRAPH, "figure"),
    "paint": (ids.MAP_PAINT, "data"),
    "notes": (ids.MAP_NOTES, "children"),
    "graph_hidden": (ids.MAP_GRAPH_BOX, "hidden"),
    "color_disabled": (ids.COLOR, "disabled"),
}
VERDICT_OUT = {
    "verdict": (ids.VERDICT, "children"),
    "histogram": (ids.ANGLE_HISTOGRAM, "figure"),
    "progress": (ids.PROGRESS, "children"),
    "poll_disabled": (ids.STATUS_POLL, "disabled"),
    "frames": (ids.FRAME_NOTES, "children"),
}
MOLECULE_OUT = {
    "molecule_id": (ids.MOLECULE_ID, "children"),
    "info": (ids.MOLECULE_INFO, "children"),
    "viewer": (ids.VIEWER_SPEC, "data"),
}
GROUPS_OUT = {
    "options": (ids.GROUP_FILTER, "options"),
    "rows": (ids.GROUPS_TABLE, "data"),
    "picked": (ids.GROUPS_TABLE, "selected_rows"),
    "summary": (ids.GROUPS_SUMMARY, "children"),
}
COMPARE_OUT = {"a": (ids.COMPARE_A, "options"), "b": (ids.COMPARE_B, "options")}
COMPARE_PANELS_OUT = {"a": (ids.COMPARE_PANEL_A, "children"), "b": (ids.COMPARE_PANEL_B, "children")}


def _outputs(spec: dict[str, tuple[str, str]]) -> dict[str, Output]:
    return {name: Output(component, prop) for name, (component, prop) in spec.items()}


def _put(props: dict[str, dict], spec: dict[str, tuple[str, str]], values: dict) -> None:
    """Add named ``values`` to ``props`` (component id -> props) where ``spec`` shows them."""
    for name, value in values.items():
        component, prop = spec[name]
        props.setdefault(component, {})[prop] = value


def _warnings(messages: list[str]) -> list:
    return [html.P(m, className="warning") for m in messages]


def first_view(data_dir: Path, search: str) -> dict[str, dict]:
    """Component id -> props that show the view of a page URL, as the callbacks would after loading it.

    With these in the layout no callback has to run when the page opens (they
    all skip the initial call); ``url.search`` is set so that dcc.Location
    does not report the URL as a change either.
    """
    resolved = resolve_view(data_dir, search)
    st, scale_hint = scatter_panel.resolved(data_dir, resolved.state)  # the controls show what is drawn
    drawn = ViewState.from_map_state(st.map_state())  # what the callbacks read from the map-state store
    props: dict[str, dict] = {}
    _put(
        props,
        STATE_OUT,
        {
            "search": search,
            **control_values(st),
            "map_state": st.map_state(),
            "messages": _warnings(resolved.messages),
            "dataset_options": resolved.dataset_options,
            "color_options": color_options(data_dir, st.dataset),
            "prop_options": scatter_panel.property_options(data_dir, st.dataset),
            "scale_hint": scale_hint,
            "compare_a": st.dataset,
        },
    )
    # Left unset when the URL named something unknown: sync_state then reports it and cleans the URL.
    if resolved.messages:
        del props[ids.URL]
    # A Store given data=None reports a change when it mounts, which would fire its callbacks.
    if not st.molecule:
        del props[ids.SELECTED]
    if not st.pins:
        del props[ids.PINS]
    if not st.sel:
        del props[ids.MAP_SELECTION]
    viewport = None
    if st.region is not None:  # the zoomed region, at the first draw's pixel size: a colour change then keeps it
        viewport = region_viewport(st.region)
        props[ids.MAP_VIEWPORT] = {"data": viewport}
    elif st.scatter_region is None:  # no zoom: the store stays empty (a None would fire its callbacks)
        del props[ids.MAP_ZOOM]
    _put(props, MAP_OUT, panels.map_outputs(data_dir, drawn, viewport, st.zoom)._asdict())
    _put(props, VERDICT_OUT, panels.verdict_outputs(data_dir, drawn)._asdict())
    molecule = panels.molecule_outputs(data_dir, drawn, st.molecule)
    _put(props, MOLECULE_OUT, molecule._asdict())
    if molecule.viewer is None:
        del props[ids.VIEWER_SPEC]
    _put(props, GROUPS_OUT, panels.group_outputs(data_dir, drawn)._asdict())
    a_options, b_options = panels.compare_choices(data_dir)
    _put(props, COMPARE_OUT, {"a": a_options, "b": b_options})
    if st.compare:
        _put(
            props,
            COMPARE_PANELS_OUT,
            dict(zip("ab", panels.compare_panels(data_dir, st.dataset, st.compare), strict=True)),
        )
    props[ids.SELECTED_RING] = {"data": panels.ring_points(data_dir, drawn, st.molecule)}
    props[ids.MOLECULE_EXTRA] = {"children": panels.neighbour_lists(data_dir, drawn, st.molecule)}
    props[ids.GROUP_SPEC] = {"data": panels.group_members_spec(data_dir, drawn)}
    props.update(audit_first_view(data_dir, st.dataset))
    props.update(selection_panel.first_view_props(data_dir, drawn.with_(sel=st.sel)))
    return props


def components_of(root: Component) -> list[Component]:
    """``root`` and every component under it, through their public ``children``.

    Dash's private tree walk would do, but is no faster: 0.30 ms against 0.07 ms for this layout.
    """
    found, stack = [], [root]
    while stack:
        node = stack.pop()
        found.append(node)
        kids = getattr(node, "children", None)
        if isinstance(kids, Component):
            stack.append(kids)
        elif isinstance(kids, list | tuple):
            stack.extend(k for k in kids if isinstance(k, Component))
    return found


def page_layout(read_only: bool, data_dir: Path) -> html.Div:
    """The layout, with the requesting page's view filled in when its URL is known."""
    layout = build_layout(read_only)
    search = page_query()
    if search is None:
        return layout
    try:
        props = first_view(data_dir, search)
    except Exception:  # the plain layout still works: the callbacks resolve the URL
        # Not the query itself: it may carry a secret (?token=) or personal search terms.
        log.exception("cannot prepare the requested page's view; serving the plain layout")
        return layout
    for component in components_of(layout):
        ident = getattr(component, "id", None)
        for name, value in (props.get(ident, {}) if isinstance(ident, str) else {}).items():
            setattr(component, name, value)
    return layout


# ----------------------------------------------------------------- app
def create_dash(server: FastAPI, data_dir: Path, read_only: bool = False) -> dash.Dash:
    """The Dash app at "/" of ``server`` (a FastAPI app), with its layout and callbacks.

    What else the dashboard adds to the server (middleware, routes, patches) is ``orientscope.app.mounting``'s.
    """
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
        # Only what the first screen draws with loads with the page (app/compat.py, section 4);
        # 3Dmol.js loads when a molecule is first shown (frontend_assets/orientscope.js).
        eager_loading=False,
        external_scripts=first_screen_scripts(),
        assets_ignore=LAZY_ASSETS,
    )
    app.layout = lambda: page_layout(read_only, data_dir)
    _register(app, data_dir)
    register_audit(app, data_dir, read_only, guarded(app.callback))
    smarts_progress.register(app, data_dir, guarded(app.callback))
    downloads.register(app, data_dir, guarded(app.callback))
    pins.register(app)
    selection_panel.register(app, data_dir, guarded(app.callback))
    if not read_only:
        register_upload(app)
        _register_upload_refresh(app, data_dir)
    return app


def _register_upload_refresh(app: dash.Dash, data_dir: Path) -> None:
    """When an upload finishes (its "open" link shows), the dataset lists show the new dataset without a reload."""

    @guarded(app.callback)(
        Output(ids.DATASET, "options", allow_duplicate=True),
        Output(ids.COMPARE_A, "options", allow_duplicate=True),
        Output(ids.COMPARE_B, "options", allow_duplicate=True),
        # The link's href is set only while a job is followed (its "hidden" is also set on page load,
        # which must not cost a callback); the lists refresh once the job is done and the link shows.
        Input("upload-open", "href"),
        State("upload-open", "hidden"),
        prevent_initial_call=True,
    )
    def refresh_lists(_href, hidden):
        if hidden:
            return no_update, no_update, no_update
        a, b = panels.compare_choices(data_dir)
        return dataset_options(data_dir)[0], a, b


# A change of these makes the scatter view's zoom (in its data units) mean nothing: it shows its home region again.
SCATTER_UNITS = (ids.DATASET, ids.SCATTER_PROP, ids.SCATTER_AXIS, ids.SCATTER_COORD, ids.SCATTER_SCALE)


def _fresh_view(trigger: str | None, before: str | None, st: ViewState) -> dict:
    """What a change of control ``trigger`` resets of the state ``st`` the controls show, the view having been
    ``before``: a new property or dataset, or the scatter view opened, draws the scale that suits the data; a
    zoom does not outlive the units it was made in (the scatter's axes, or a view of other units: the map and
    the density view share the Mollweide plane)."""
    fresh: dict = {}
    opened = trigger == ids.VIEW_MODE and st.view != before
    if trigger in (ids.DATASET, ids.SCATTER_PROP) or (opened and st.view == "scatter"):
        fresh["yscale"] = None
    if trigger in SCATTER_UNITS or (opened and not (before in PLANE_VIEWS and st.view in PLANE_VIEWS)):
        fresh["zoom"] = None
    return fresh


def _register(app: dash.Dash, data_dir: Path) -> None:  # one place for all callbacks
    callback = guarded(app.callback)

    @callback(
        output=_outputs(STATE_OUT),
        inputs={
            "search": Input(ids.URL, "search"),
            "compare_a": Input(ids.COMPARE_A, "value"),
            **{n: Input(c, p) for n, (c, p) in ids.CONTROL_OF.items()},
        },
        state={"current": State(ids.MAP_STATE, "data")},
        # dcc.Location reports the URL when the page opens unless the layout already holds it
        prevent_initial_call=True,
    )
    def sync_state(search, current, compare_a, **shown):
        """The URL and the controls mirror each other; map-state changes only when the map must redraw.

        Compare's dataset A is the page's dataset: picking A there changes the dataset.
        """
        out = dict.fromkeys(STATE_OUT, no_update)
        trigger = ctx.triggered_id
        if trigger == ids.COMPARE_A:
            if not compare_a or compare_a == shown["dataset"]:
                return out
            shown["dataset"] = out["dataset"] = compare_a
            trigger = ids.DATASET
        from_url = trigger in (None, ids.URL)
        messages: list[str] = []
        if from_url:
            resolved = resolve_view(data_dir, search)
            st, messages, options = resolved.state, resolved.messages, resolved.dataset_options
            st, out["scale_hint"] = scatter_panel.resolved(data_dir, st)
            showing = control_values(ViewState.from_controls(**shown))
            # Only what differs: a layout served for this URL already shows it (app/initial_view.py).
            out |= {name: value for name, value in control_values(st).items() if value != showing[name]}
            out["search"] = st.to_query() if messages else no_update
        else:
            options, _ = dataset_options(data_dir)
            if trigger == ids.DATASET:
                color = shown["color"]
                shown |= {
                    "molecule": None,
                    "group": None,
                    "color": "axis" if (color or "").startswith("prop:") else color,
                    "pins": None,  # ids of another dataset
                    "sel": None,
                    "prop": None,
                }
                out |= {
                    "color": shown["color"],
                    "group": None,
                    "molecule": None,
                    "pins": None,
                    "sel": None,
                    "prop": None,
                }
            if trigger == ids.GROUPING:
                shown["group"] = out["group"] = None
            shown |= _fresh_view(trigger, (current or {}).get("view"), ViewState.from_controls(**shown))
            st, out["scale_hint"] = scatter_panel.resolved(data_dir, ViewState.from_controls(**shown))
            drawn = control_values(st)  # the controls show what is drawn: a chosen property, a possible scale
            out |= {name: drawn[name] for name in ("prop", "yscale", "zoom") if drawn[name] != shown[name]}
            out["search"] = st.to_query()
        # Also when the store is still empty: the panels then say that no dataset is ready, and poll.
        if current is None or ViewState.from_map_state(current) != ViewState.from_map_state(st.map_state()):
            out["map_state"] = st.map_state()
        out["messages"] = _warnings(messages) if messages else ([] if from_url else no_update)
        out["dataset_options"] = options
        if trigger in (None, ids.URL, ids.DATASET):
            out["color_options"] = color_options(data_dir, st.dataset)
            out["prop_options"] = scatter_panel.property_options(data_dir, st.dataset)
        if st.dataset != compare_a:
            out["compare_a"] = st.dataset
        return out

    @callback(
        output=_outputs(VERDICT_OUT),
        inputs=[Input(ids.MAP_STATE, "data"), Input(ids.STATUS_POLL, "n_intervals")],
        prevent_initial_call=True,
    )
    def show_verdict(st, _n):
        return panels.verdict_outputs(data_dir, ViewState.from_map_state(st))._asdict()

    @callback(
        output=_outputs(MAP_OUT),
        # SMARTS_DONE: a background SMARTS search finished, so the map now shows its matches
        # The viewport is a State: a zoom or pan draws its region through GET .../map/paint, and then
        # tells this store, so that a new colour or filter keeps the region shown; the scatter view keeps
        # its zoom (the URL's, in its data units) the same way.
        inputs=[Input(ids.MAP_STATE, "data"), Input(ids.SMARTS_DONE, "data")],
        state=[State(ids.MAP_VIEWPORT, "data"), State(ids.MAP_ZOOM, "data")],
        prevent_initial_call=True,
    )
    def draw_map(st, _search_done, viewport, zoom):
        """The view's map in the region the browser shows, e.g. after a new colour or filter."""
        return panels.map_outputs(data_dir, ViewState.from_map_state(st), viewport, zoom)._asdict()

    @callback(
        Output(ids.SELECTED_RING, "data"),
        Input(ids.SELECTED, "data"),
        Input(ids.MAP_STATE, "data"),
        prevent_initial_call=True,
    )
    def mark_selected(selected, st):
        return panels.ring_points(data_dir, ViewState.from_map_state(st), selected)

    @callback(
        Output(ids.SELECTED, "data", allow_duplicate=True),
        Input({"type": ids.NEIGHBOUR, "list": ALL, "id": ALL}, "n_clicks"),
        prevent_initial_call=True,
    )
    def click_neighbour(clicks):
        if not ctx.triggered_id or not any(clicks or []):
            return no_update
        return ctx.triggered_id["id"]

    @callback(
        output=_outputs(MOLECULE_OUT),
        inputs=[Input(ids.SELECTED, "data"), Input(ids.MAP_STATE, "data")],
        prevent_initial_call=True,
    )
    def show_molecule(selected, st):
        return panels.molecule_outputs(data_dir, ViewState.from_map_state(st), selected)._asdict()

    # Separate from the viewer: a neighbour search over the whole dataset must not delay the 3D view.
    @callback(
        Output(ids.MOLECULE_EXTRA, "children"),
        Input(ids.SELECTED, "data"),
        Input(ids.MAP_STATE, "data"),
        prevent_initial_call=True,
    )
    def show_neighbours(selected, st):
        return panels.neighbour_lists(data_dir, ViewState.from_map_state(st), selected)

    app.clientside_callback(
        dash.ClientsideFunction("orientscope", "renderViewer"),
        Output(ids.VIEWER_DONE, "data"),
        Input(ids.VIEWER_SPEC, "data"),
        State(ids.MOLECULE_VIEWER, "id"),
        State(ids.SELECTED, "data"),  # a spec of an earlier selection, answered late, is not drawn
    )
    app.clientside_callback(
        dash.ClientsideFunction("orientscope", "renderViewer"),
        Output(ids.GROUP_DONE, "data"),
        Input(ids.GROUP_SPEC, "data"),
        State(ids.GROUP_VIEWER, "id"),
    )
    app.clientside_callback(
        dash.ClientsideFunction("orientscope", "watchMap"),
        Output(ids.MAP_DRAWN, "data"),
        Input(ids.MAP_GRAPH, "figure"),
        State(ids.MAP, "id"),
    )
    app.clientside_callback(  # map_draw.js draws the paint, any view but scatter (taking the first paint's over)
        dash.ClientsideFunction("orientscope", "drawPlane"),
        Output(ids.MAP_PAINT_DONE, "data"),
        Input(ids.MAP_PAINT, "data"),
        State(ids.MAP, "id"),
    )
    app.clientside_callback(  # the last shown axis cannot be unticked: a map of no axis shows nothing
        dash.ClientsideFunction("orientscope", "keepOneAxis"),
        Output(ids.AXES, "options"),
        Output(ids.AXES_HINT, "children"),
        Input(ids.AXES, "value"),
        State(ids.AXES, "options"),
    )
    app.clientside_callback(  # the scatter view's controls show in that view only
        dash.ClientsideFunction("scatter", "showControls"),
        Output(ids.SCATTER_CONTROLS, "hidden"),
        Input(ids.VIEW_MODE, "value"),
    )
    app.clientside_callback(  # the back button's zoom (the URL's), drawn
        dash.ClientsideFunction("orientscope", "applyZoom"),
        Output(ids.MAP_ZOOM_DONE, "data"),
        Input(ids.MAP_ZOOM, "data"),
        State(ids.MAP, "id"),
        State(ids.MAP_STATE, "data"),  # a zoom dropped as the view changes is not drawn in the old view
        prevent_initial_call=True,
    )
    app.clientside_callback(
        dash.ClientsideFunction("orientscope", "markSelected"),
        Output(ids.RING_DONE, "data"),
        Input(ids.SELECTED_RING, "data"),
        State(ids.MAP, "id"),
    )
    app.clientside_callback(
        dash.ClientsideFunction("orientscope", "copyLink"),
        Output(ids.COPY_STATUS, "children"),
        Input(ids.COPY_LINK, "n_clicks"),
        prevent_initial_call=True,
    )
    app.clientside_callback(
        dash.ClientsideFunction("orientscope", "exportMap"),
        Output(ids.EXPORT_DONE, "data"),
        Input(ids.EXPORT_PNG, "n_clicks"),
        Input(ids.EXPORT_SVG, "n_clicks"),
        State(ids.MAP_STATE, "data"),
        prevent_initial_call=True,
    )

    @callback(
        output=_outputs(GROUPS_OUT),
        inputs=[Input(ids.MAP_STATE, "data"), Input(ids.GROUPS_TABLE, "sort_by")],  # sorted on the server
        prevent_initial_call=True,
    )
    def list_groups(st, sort_by):
        return panels.group_outputs(data_dir, ViewState.from_map_state(st), sort_by)._asdict()

    @callback(
        Output(ids.GROUP_FILTER, "options", allow_duplicate=True),
        Input(ids.GROUP_FILTER, "search_value"),
        State(ids.MAP_STATE, "data"),
        State(ids.GROUP_FILTER, "value"),
        prevent_initial_call=True,
    )
    def search_groups(text, st, current):
        return panels.group_search_options(data_dir, ViewState.from_map_state(st), text, current)

    @callback(
        Output(ids.GROUP_FILTER, "value", allow_duplicate=True),
        Input(ids.GROUPS_TABLE, "selected_rows"),
        State(ids.GROUPS_TABLE, "data"),
        State(ids.GROUP_FILTER, "value"),
        prevent_initial_call=True,
    )
    def pick_group(selected_rows, rows, current):
        if not selected_rows or not rows:
            return no_update
        group = rows[selected_rows[0]]["group"]
        return no_update if group == current else group

    @callback(Output(ids.GROUP_SPEC, "data"), Input(ids.MAP_STATE, "data"), prevent_initial_call=True)
    def show_group_members(st):
        return panels.group_members_spec(data_dir, ViewState.from_map_state(st))

    @callback(
        Output(ids.DOWNLOAD_REPORT, "data"),
        Input(ids.REPORT_BUTTON, "n_clicks"),
        State(ids.MAP_STATE, "data"),
        prevent_initial_call=True,
    )
    def download_report(_n, st):
        st = ViewState.from_map_state(st)
        return panels.report_download(data_dir, st) if st.ready else no_update

    @callback(output=_outputs(COMPARE_OUT), inputs=[Input(ids.MAP_STATE, "data")], prevent_initial_call=True)
    def compare_options(_st):
        a, b = panels.compare_choices(data_dir)
        return {"a": a, "b": b}

    @callback(
        output=_outputs(COMPARE_PANELS_OUT),
        inputs=[Input(ids.COMPARE_A, "value"), Input(ids.COMPARE_B, "value")],
        prevent_initial_call=True,
    )
    def compare(a, b):
        return dict(zip("ab", panels.compare_panels(data_dir, a, b), strict=True))
