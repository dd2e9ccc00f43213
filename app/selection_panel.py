"""The list of the molecules a box or lasso on the flat map selects: a count, a paged table (each id opens
its molecule) and a CSV link, all answered by the services (``orientscope.services.map_selection``).

The map's renderer hands a box or lasso to the selection store in the URL's form (``sel=``,
backend/figures/state.py; ``frontend_assets/map_draw.js`` selectionText, written by ``orientscope.js`` drawPlane, and
by the page's first paint before Dash has loaded), so a reload or a shared link lists the same molecules.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote, urlencode

from dash import Input, Output, State, ctx, dcc, html, no_update

from orientscope.app import data, ids
from orientscope.figures.mapview import map_layers, shown_query
from orientscope.figures.state import ViewState
from orientscope.services.map_selection import selection_page
from orientscope.services.map_view import MapQuery

PAGE_ROWS = 20
HINT = "Box select or Lasso (the map's toolbar) lists the molecules in a region; a click with either on clears it."

OUT = {
    "hidden": (ids.SELECTION_PANEL, "hidden"),
    "count": (ids.SELECTION_COUNT, "children"),
    "table": (ids.SELECTION_TABLE, "children"),
    "csv": (ids.SELECTION_CSV, "href"),
    "prev_disabled": (ids.SELECTION_PREV, "disabled"),
    "next_disabled": (ids.SELECTION_NEXT, "disabled"),
    "page": (ids.SELECTION_PAGE, "data"),
}


def selection_section() -> html.Div:
    """The panel under the map, hidden until something is selected."""
    return html.Div(
        [
            html.P(
                [
                    html.Span(id=ids.SELECTION_COUNT),
                    html.A("Download CSV", id=ids.SELECTION_CSV, href="", download="", className="button small"),
                    html.Button("Clear selection", id=ids.SELECTION_CLEAR, className="button small"),
                ],
                className="selection-head",
            ),
            html.Table(id=ids.SELECTION_TABLE, className="selection-table"),
            html.Div(
                [
                    html.Button("‹ previous", id=ids.SELECTION_PREV, className="button small", disabled=True),
                    html.Button("next ›", id=ids.SELECTION_NEXT, className="button small", disabled=True),
                ],
                className="selection-pages",
            ),
            dcc.Store(id=ids.SELECTION_PAGE, data=0),
        ],
        id=ids.SELECTION_PANEL,
        className="selection",
        hidden=True,
    )


def _api_query(query: MapQuery, sel: str) -> str:
    params = {"axes": query.axes, "color": query.color, "grouping": query.grouping, "table": query.table}
    params |= {k: v for k, v in (("group", query.group), ("smarts", query.smarts)) if v}
    return urlencode(params | {"sel": sel})


def panel_props(data_dir: Path, st: ViewState, sel: str | None, page: int = 0) -> dict:
    """The panel's outputs (keys of :data:`OUT`) for selection ``sel`` on ``st``'s flat map, at ``page``."""
    hidden = {"hidden": True, "count": "", "table": [], "csv": "", "prev_disabled": True, "next_disabled": True}
    if not sel or not st.ready or st.view != "map":
        return hidden | {"page": 0}
    try:
        query = shown_query(st, map_layers(data_dir, st))
        answer = selection_page(data_dir, query, sel, page * PAGE_ROWS, PAGE_ROWS)
    except data.OrientScopeError as err:
        return hidden | {"hidden": False, "count": f"selection not listed: {err}", "page": 0}
    total, molecules = answer["total"], answer["molecules"]
    first = page * PAGE_ROWS
    shown = f"; {first + 1:,}–{first + len(molecules):,} shown" if total > PAGE_ROWS else ""
    head = html.Tr([html.Th("molecule"), html.Th("formula"), html.Th(answer["color"])])
    rows = [
        html.Tr(
            [
                # a neighbour-list button: the same callback opens the molecule (app/dashboard.py click_neighbour)
                html.Td(
                    html.Button(
                        m["id"], id={"type": ids.NEIGHBOUR, "list": "selection", "id": m["id"]}, className="link-button"
                    )
                ),
                html.Td(m["formula"]),
                html.Td(_value(m["value"])),
            ],
            className="selection-row",
        )
        for m in molecules
    ]
    return {
        "hidden": False,
        "count": f"{total:,} molecule{'s' if total != 1 else ''} selected{shown}",
        "table": [html.Thead(head), html.Tbody(rows)],
        "csv": f"/api/datasets/{quote(st.dataset, safe='')}/map/selection.csv?{_api_query(query, sel)}",
        "prev_disabled": page <= 0,
        "next_disabled": first + len(molecules) >= total,
        "page": page,
    }


def _value(value) -> str:
    if value is None:
        return "no value"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def first_view_props(data_dir: Path, st: ViewState) -> dict[str, dict]:
    """Component id -> props of the panel for a page URL's view (a reload lists the URL's selection)."""
    props: dict[str, dict] = {}
    for name, value in panel_props(data_dir, st, st.sel).items():
        component, prop = OUT[name]
        props.setdefault(component, {})[prop] = value
    return props


def register(app, data_dir: Path, callback) -> None:
    """The panel's callbacks (``callback``: the app's guarded callback decorator)."""

    @callback(
        output={name: Output(c, p) for name, (c, p) in OUT.items()},
        inputs={
            "sel": Input(ids.MAP_SELECTION, "data"),
            "st": Input(ids.MAP_STATE, "data"),
            "_prev": Input(ids.SELECTION_PREV, "n_clicks"),
            "_next": Input(ids.SELECTION_NEXT, "n_clicks"),
        },
        state={"page": State(ids.SELECTION_PAGE, "data")},
        prevent_initial_call=True,
    )
    def list_selection(sel, st, _prev, _next, page):
        step = {ids.SELECTION_PREV: -1, ids.SELECTION_NEXT: 1}.get(ctx.triggered_id)
        page = max(0, (page or 0) + step) if step else 0  # a new selection or view starts at its first page
        return panel_props(data_dir, ViewState.from_map_state(st), sel, page)

    @callback(
        Output(ids.MAP_SELECTION, "data", allow_duplicate=True),
        Input(ids.SELECTION_CLEAR, "n_clicks"),
        prevent_initial_call=True,
    )
    def clear_selection(n):
        return None if n else no_update
