"""What each dashboard panel shows for a view state: Dash components and figures, nothing else.

The callbacks in ``orientscope.app.dashboard`` return these when a control changes, and
``orientscope.app.dashboard.first_view`` puts the same values into the layout of a page
load, so both paths show exactly the same thing. Everything is read through
``orientscope.app.data`` (backend services); nothing here computes science.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import NamedTuple

from dash import dcc, html

from orientscope.app import data, ids, scatter_panel
from orientscope.app.compare import compare_columns
from orientscope.app.initial_view import dataset_options
from orientscope.app.pins import pin_controls
from orientscope.app.plane_paint import density_paint, flat_paint, frame
from orientscope.app.sphere_paint import sphere_view_paint
from orientscope.app.static_report import static_report_html
from orientscope.app.verdict import frame_children, verdict_children
from orientscope.core.numbers import format_count
from orientscope.figures import data as figure_data
from orientscope.figures.mapfigure import (
    density_figures,
    density_pair_json,
    map_figure,
    map_figure_json,
    selected_ring,
    viewport_of,
)
from orientscope.figures.mapview import map_layers
from orientscope.figures.plots import angle_histogram_figure, message_figure
from orientscope.figures.state import ViewState
from orientscope.figures.viewer import group_scenes, molecule_viewer_spec, viewer_spec
from orientscope.services.map_data import DENSITY_MIN_POINTS
from orientscope.services.report_format import control_report
from orientscope.services.statistics import ANGLE_HISTOGRAM_KEY, REFERENCE_KEY

log = logging.getLogger(__name__)


class MapPanel(NamedTuple):
    figure: dict  # the scatter view's plotly figure, or a message
    paint: dict | None  # the renderer's paint (map_draw.js): the flat map, the density pair or the sphere
    notes: list
    graph_hidden: bool  # the plotly graph is hidden while map_draw.js draws a view
    color_disabled: bool  # "colour by" does nothing in the density view


class VerdictPanel(NamedTuple):
    verdict: list
    histogram: object
    progress: list | None
    poll_disabled: bool
    frames: list = []  # under the map: the frames the verdict rests on, and the degeneracy codes


class MoleculePanel(NamedTuple):
    molecule_id: str
    info: object
    viewer: dict | None


class GroupsPanel(NamedTuple):
    options: list
    rows: list
    picked: list
    summary: str


GROUP_TABLE_ROWS = 200
ALL_GROUPS = 10**9  # a sorted table sorts every group, then lists the first GROUP_TABLE_ROWS
GROUP_SORT_WORDS = {  # the table's columns (app/dashboard.py) as the summary line names them
    "label": "name",
    "size": "size",
    "spread_deg": "spread",
    "concentration": "concentration",
    "mean_score": "mean P(stored)",
}
GROUP_ROW_NAMES = {"formula": "formula group", "scaffold": "scaffold", "cluster": "cluster (representative)"}
GROUP_VIEWER_MEMBERS = 8
N_NEIGHBOURS = 6


def friendly(err: Exception) -> str:
    return str(err) if isinstance(err, data.OrientScopeError | ValueError | KeyError) else "something went wrong"


# ----------------------------------------------------------------- map
def map_outputs(data_dir: Path, st: ViewState, viewport: dict | None = None, zoom: str | None = None) -> MapPanel:
    """The map figure of a view state in the viewport the browser shows (default: the whole map), or the
    scatter view in the region of its ``zoom`` (the URL's, default its home region), the notes under it and,
    in the density view, the control's density.

    Plain JSON only (no components in the figures): Dash then encodes the 2.4 MB answer in one
    orjson pass instead of walking it to convert objects first.
    """
    density = st.view == "density"
    empty = message_figure("", 200)
    if not st.ready:
        return MapPanel(message_figure("Choose a dataset."), None, [], False, density)
    if st.view == "scatter":  # a property against an axis coordinate, coloured as the map
        region = st.with_(zoom=zoom).scatter_region
        figure, notes = scatter_panel.scatter_outputs(data_dir, st, region)
        return MapPanel(figure, None, notes, False, False)
    vp = viewport_of(viewport) if viewport else None
    try:
        if density:  # of the region shown (the viewport store), binned anew
            pair, layers = density_pair_json(data_dir, st, vp)
            paint, figure = {"view": "density", **density_paint(pair), "frame": frame()}, empty
        else:
            figure, layers = map_figure_json(data_dir, st, vp)
            paint = _map_or_sphere_paint(figure, layers, st)
            figure = empty if paint else message_figure("No points to show.")
    except data.OrientScopeError as err:
        return MapPanel(message_figure(friendly(err)), None, [], False, density)
    notes = [html.P(e, className="error", role="alert") for e in layers.errors]
    if layers.notes:
        notes.append(html.P(" ".join(n + "." for n in layers.notes), className="note"))
    if density:
        notes.append(html.P(DENSITY_NOTE, className="note"))
        if layers.n_points < DENSITY_MIN_POINTS:
            notes.append(html.P(too_few_for_density(layers.n_points), className="note"))
    elif st.view == "map" and layers.n_matches:
        notes.append(html.P(HIGHLIGHT_NOTE, className="note"))
    return MapPanel(figure, paint, notes, paint is not None, density)


def _map_or_sphere_paint(figure: dict, layers, st: ViewState) -> dict | None:
    """The renderer's paint of a flat map or sphere figure payload; None for a sphere of no points."""
    if st.view == "sphere":  # Dash rings the selected molecule through its ring store (markSelected)
        paint = sphere_view_paint(figure, layers, st, ring=False)
        return None if paint is None else {"view": "sphere", **paint}
    return {"view": "map", **flat_paint(figure), "frame": frame()}


# The flat map's SMARTS highlight (backend/figures/plots.py): why "colour by" shows no colours while it is on.
HIGHLIGHT_NOTE = "While SMARTS matches are highlighted, the other molecules are grey: clear the SMARTS box for colours"


def too_few_for_density(n_points: int) -> str:
    """Why the density view shows a set's points and no density."""
    return (
        f"Too few points for a density ({format_count(n_points)}; a density needs {format_count(DENSITY_MIN_POINTS)}, "
        "or the coarsest cells would each expect under one): the points themselves are drawn."
    )


DENSITY_NOTE = (
    "Density of the principal axes on the sky, ÷ what uniform random orientations give (1 = uniform); "
    "left the stored poses, right the same molecules randomly rotated (the control), on one colour scale. "
    "Bright spots away from 1 are preferred orientations. Other views: Mollweide points, 3D sphere."
)


def ring_points(data_dir: Path, st: ViewState, selected: str | None) -> list:
    """Map-unit points of the selected molecule, for the ring drawn over the map."""
    if not selected or not st.ready:
        return []
    try:
        md = data.load_map_data(data_dir, st.dataset, st.table)
        return selected_ring(md, st, selected)
    except data.OrientScopeError:
        return []


# ----------------------------------------------------------------- verdict
def verdict_outputs(data_dir: Path, st: ViewState) -> VerdictPanel:
    """The verdict, the angle histogram, the progress bar and whether the status poll stops."""
    if not st.ready:
        return VerdictPanel(
            [html.P("No dataset is ready yet.", className="warning")], message_figure("", 300), None, False
        )
    dataset = st.dataset
    try:
        info = data.dataset_info(data_dir, dataset)
    except data.OrientScopeError as err:
        return VerdictPanel([html.P(friendly(err), className="warning")], message_figure("", 300), None, True)
    if info.status == data.NEEDS_MIGRATION:  # the message names `orientscope migrate`; nothing is computing
        return VerdictPanel([html.P(info.message, className="warning")], message_figure("", 300), None, True)
    if info.status != data.READY:
        bar = [html.Progress(className="busy"), html.Span(f" {info.name}: {info.status} – {info.message}")]
        return VerdictPanel(
            [html.P("Results will appear when the computation finishes.")],
            message_figure("", 300),
            bar,
            info.status != "computing",
        )
    try:
        report = data.dataset_summary(data_dir, dataset)
    except data.OrientScopeError as err:
        return VerdictPanel([html.P(friendly(err), className="warning")], message_figure("", 300), None, True)
    children, hist, frames = data.per_result(data_dir, dataset, "verdict_panel", lambda: _verdict_of(report, dataset))
    return VerdictPanel(children, hist, None, True, frames)


def _verdict_of(report: dict, dataset: str) -> tuple[list, object, list]:
    """Verdict components, angle histogram and the frames' notes of a report (about 40 ms to build)."""
    hist = angle_histogram_figure(report.get(ANGLE_HISTOGRAM_KEY), report.get("control", {}).get(ANGLE_HISTOGRAM_KEY))
    try:
        children, frames = verdict_children(report), frame_children(report)
    except (KeyError, TypeError, ValueError, IndexError):  # a report section in an unexpected shape
        log.exception("cannot render the verdict of %s", dataset)
        children = [html.P((report.get("verdict") or {}).get("text", "No verdict."), className="verdict-line")]
        frames = []
    return children, hist, frames


# ----------------------------------------------------------------- molecule
def molecule_outputs(data_dir: Path, st: ViewState, selected: str | None) -> MoleculePanel:
    """The selected molecule's id, info table and 3D viewer spec."""
    if not selected or not st.ready:
        return MoleculePanel("", html.P("Click a point on the map to see that molecule.", className="note"), None)
    try:
        detail = data.molecule_detail(data_dir, st.dataset, selected)
    except data.OrientScopeError as err:
        return MoleculePanel("", html.P(friendly(err), className="warning"), None)
    return MoleculePanel(str(detail["id"]), _molecule_info(detail), molecule_viewer_spec(detail))


def molecule_panel(shown: MoleculePanel | None = None) -> html.Div:
    """The molecule panel of the layout, empty or showing ``shown`` (its id and info; the viewer stays empty).

    The layout holds it empty and the callbacks fill it; the page's first paint renders it filled, as
    HTML (app/first_paint.py), so that both are the same markup.
    """
    return html.Div(
        [
            html.H3(["Molecule ", html.Span(shown and shown.molecule_id, id=ids.MOLECULE_ID, className="molecule-id")]),
            html.Div(shown and shown.info, id=ids.MOLECULE_INFO, className="molecule-info"),
            pin_controls(),
            html.Div(id=ids.MOLECULE_VIEWER, className="viewer"),
            html.Div(id=ids.MOLECULE_EXTRA),
        ],
        id=ids.MOLECULE_PANEL,
        className="panel molecule-panel",
    )


def neighbour_lists(data_dir: Path, st: ViewState, selected: str | None):
    """Nearest molecules in pose and in chemistry, as clickable lists (None without a valid selection)."""
    if not selected or not st.ready:
        return None
    try:
        pose = data.neighbors(data_dir, st.dataset, selected, "pose", N_NEIGHBOURS)
        chem = data.neighbors(data_dir, st.dataset, selected, "chemistry", N_NEIGHBOURS)
    except data.OrientScopeError:
        return None  # molecule_outputs reports an unknown molecule
    return html.Div(
        [
            _neighbour_list("pose", "Nearest in pose", pose, "angle_deg", "{:.1f}°", "no other molecule"),
            _neighbour_list(
                "chemistry",
                "Nearest in chemistry",
                chem,
                "tanimoto",
                "Tanimoto {:.2f}",
                "no molecule shares a fingerprint bit with it",
            ),
        ],
        className="neighbour-lists",
    )


def _neighbour_list(kind: str, title: str, result: dict | None, metric: str, fmt: str, empty: str) -> html.Div:
    if result is None:
        return html.Div([html.H4(title), html.P("not computed for this dataset", className="note")])
    items = [
        html.Li(
            html.Button(
                " · ".join(part for part in (it["id"], it.get("smiles"), fmt.format(it[metric])) if part),
                # the list is part of the id: a molecule can be a neighbour in pose and in chemistry
                id={"type": "neighbour", "list": kind, "id": it["id"]},
                className="link-button",
            )
        )
        for it in result["items"]
    ]
    if not items:
        return html.Div([html.H4(title), html.P(result.get("note") or empty, className="note")])
    return html.Div([html.H4(title), html.Ul(items, className="neighbours")])


def _orientation_text(o: dict) -> str:
    """What the statistics read of this molecule's pose (its symmetry's class)."""
    kind = (o.get("symmetry") or "").replace("_", " ")
    if o.get("class") == "none":
        return f"none ({kind}): left out of every statistic"
    if o.get("class") == "axis":
        return f"only axis {o.get('defined_axis')} ({kind}): tested by Bingham's axial test"
    return "full frame" if o else "–"


def _smiles_text(detail: dict) -> str:
    """The file's SMILES; else the graph the chemistry stage perceived from the 3D atoms, said so (a set without
    SMILES, e.g. the CCD or an SDF without bonds, still shows the graph its groups and neighbours come from)."""
    if detail.get("smiles"):
        return detail["smiles"]
    chem = detail.get("chemistry") or {}
    if chem.get("graph") and chem.get("smiles"):
        return f"{chem['smiles']} (bonds perceived from 3D)" if chem.get("source") == "3d" else chem["smiles"]
    return "–"


def _molecule_info(detail: dict) -> list:
    score = detail.get("classifier_score")
    rows = [
        ("SMILES", _smiles_text(detail)),
        ("formula", detail.get("formula") or "–"),
        ("atoms", str(len(detail["elements"]))),
        ("classifier score P(stored)", "not computed" if score is None else f"{score:.3f}"),
        ("degenerate frame", f"yes ({detail.get('degenerate_reason')})" if detail.get("degenerate") else "no"),
        ("orientation", _orientation_text(detail.get("orientation") or {})),
    ]
    labels = detail.get("group_labels") or {}
    rows += [(GROUP_ROW_NAMES.get(k, f"{k} group"), v) for k, v in labels.items() if v]
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


# ----------------------------------------------------------------- groups
def group_outputs(data_dir: Path, st: ViewState, sort_by: list | None = None) -> GroupsPanel:
    """The group filter's options, the groups table's rows, the picked row and the line under the table.

    Groups are shown by their labels (formula, scaffold SMILES, representative's SMILES);
    the code only travels as the value. Molecules in no group are an option of their own,
    listed apart from the groups. ``sort_by`` is the table's (``[{"column_id", "direction"}]``):
    all groups are sorted before the first :data:`GROUP_TABLE_ROWS` are listed.
    """
    if not st.ready:
        return GroupsPanel([], [], [], "")
    sort = _table_sort(sort_by)
    listing = data.list_groups(data_dir, st.dataset, st.grouping, ALL_GROUPS if sort else GROUP_TABLE_ROWS)
    if listing is None:
        return GroupsPanel([], [], [], f"{st.grouping} groups are not computed for this dataset.")
    largest = group_rows(listing)
    rows = sorted_rows(largest, *sort)[:GROUP_TABLE_ROWS] if sort else largest
    options = [{"label": f"{r['label']} ({r['size']:,})", "value": r["group"]} for r in largest[:GROUP_TABLE_ROWS]]
    ungrouped = listing.get("ungrouped") or {}
    if ungrouped.get("size"):
        options.append(
            {"label": f"{ungrouped['label']} ({ungrouped['size']:,}, not a group)", "value": ungrouped["label"]}
        )
    if st.group and st.group not in {o["value"] for o in options}:
        options.append({"label": _group_name(data_dir, st), "value": st.group})
    picked = [i for i, r in enumerate(rows) if st.group in (r["group"], r["label"])]
    return GroupsPanel(options, rows, picked, groups_summary(listing, len(rows), sort))


def group_search_options(data_dir: Path, st: ViewState, text: str | None, current: str | None) -> list[dict]:
    """The "only group" choices for the ``text`` typed into it: every group whose label holds it as typed.

    SMILES and formulas are case-sensitive (aromatic c is not aliphatic C, Co is not CO), so "c1ccccc1"
    finds benzene and never cyclohexane, whatever the dropdown's own search (which ignores case) would
    list. Labels equal to the text come first, then those that start with it, then the rest, larger groups
    first within each; the chosen group stays among the choices. No text: the largest groups.
    """
    default = group_outputs(data_dir, st).options
    if not text or not st.ready:
        return default
    listing = data.list_groups(data_dir, st.dataset, st.grouping, ALL_GROUPS)
    if listing is None:
        return default
    found = [(g.get("label") or str(g["group"]), int(g["size"]), str(g["group"])) for g in listing.get("groups") or []]
    found = [f for f in found if text in f[0]]
    found.sort(key=lambda f: (f[0] != text, not f[0].startswith(text), -f[1]))
    options = [{"label": f"{label} ({size:,})", "value": group} for label, size, group in found[:GROUP_TABLE_ROWS]]
    options += [o for o in default if o["value"] == current and o not in options]
    return options


def _table_sort(sort_by: list | None) -> tuple[str, bool] | None:
    """(column, descending) of the table's first sort, or None (the default: largest first)."""
    first = (sort_by or [None])[0]
    if not first or first.get("column_id") not in GROUP_SORT_WORDS:
        return None
    return first["column_id"], first.get("direction") == "desc"


def sorted_rows(rows: list[dict], column: str, descending: bool) -> list[dict]:
    """``rows`` sorted by ``column``; rows without a value come last either way."""
    present = [r for r in rows if r.get(column) is not None]
    missing = [r for r in rows if r.get(column) is None]
    key = (lambda r: str(r[column]).lower()) if column == "label" else (lambda r: r[column])
    return sorted(present, key=key, reverse=descending) + missing


def _group_name(data_dir: Path, st: ViewState) -> str:
    try:
        return data.group_label_map(data_dir, st.dataset, st.grouping).get(st.group, st.group)
    except data.OrientScopeError:
        return st.group


def groups_summary(listing: dict, shown: int, sort: tuple[str, bool] | None = None) -> str:
    """'showing N of M groups' when truncated, and the molecules in no group, counted apart."""
    total = listing.get("total", shown)
    if sort and shown < total:
        column, descending = sort
        order = "descending" if descending else "ascending"
        text = f"showing the first {shown:,} of all {total:,} groups sorted by {GROUP_SORT_WORDS[column]}, {order}"
    else:
        text = f"showing the {shown:,} largest of {total:,} groups" if shown < total else f"{total:,} groups"
    ungrouped = listing.get("ungrouped") or {}
    if ungrouped.get("size"):
        text += f" · {ungrouped['size']:,} molecules {ungrouped['label']} (in no group; not listed, grey on the map)"
    return text + "."


def group_members_spec(data_dir: Path, st: ViewState):
    """Viewer spec of the picked group's first members in their canonical pose (None without a group)."""
    if not st.ready or not st.group:
        return None
    if figure_data.group_labels(data_dir, st.dataset, st.grouping) is None:
        return None
    try:
        mask = figure_data.group_mask(data_dir, st.dataset, st.grouping, st.group)
    except data.OrientScopeError:
        return None
    md = data.load_map_data(data_dir, st.dataset)
    members = md.ids[mask][:GROUP_VIEWER_MEMBERS]
    details = [data.molecule_detail(data_dir, st.dataset, m) for m in members]
    return viewer_spec(group_scenes(details), molecule=f"group:{st.group}", cols=4) if details else None


def group_rows(listing: dict) -> list[dict]:
    """Table rows of the largest groups: label, size, spread and concentration (when computed); code hidden."""
    return [
        {
            "group": str(g["group"]),
            "label": g.get("label") or str(g["group"]),
            "size": g["size"],
            "spread_deg": _stat(g.get("statistics") or {}, "spread"),
            "concentration": _stat(g.get("statistics") or {}, "concentration"),
            "mean_score": None if g.get("mean_classifier_score") is None else round(g["mean_classifier_score"], 3),
        }
        for g in listing.get("groups") or []
    ]


def _stat(stats: dict, word: str):
    key = next((k for k in stats if word in k), None)
    value = stats.get(key) if key else None
    return round(float(value), 3) if isinstance(value, int | float) else None


# ----------------------------------------------------------------- compare
def compare_choices(data_dir: Path) -> tuple[list[dict], list[dict]]:
    """Options of the two pickers: A is a ready dataset (the page's), B any ready dataset or a control.

    Nothing is computed until B is picked.
    """
    options, ready = dataset_options(data_dir)
    a, b = [], []
    for o in options:
        if o["value"] in ready:
            a.append(o)
            b += [o, {"label": f"{o['label']} · control", "value": f"{o['value']}{CONTROL_SUFFIX}"}]
    return a, b


CONTROL_SUFFIX = "::control"


def compare_panels(data_dir: Path, a: str | None, b: str | None) -> tuple[object, object]:
    """The two sides of the compare view (``#compare-panel-a``, ``#compare-panel-b``).

    Each side is a dataset or, as ``<id>::control``, its random-rotation control shown as a
    dataset of its own (the control's own figures, never the dataset's). Both density maps
    share one colour scale.
    """
    if not a or not b:
        return html.P("Pick dataset B (another dataset, or a control) to compare.", className="note"), None
    sides = []
    for value in (a, b):
        dataset, _, table = value.partition("::")
        table = table or "original"
        try:
            report = data.dataset_summary(data_dir, dataset)
            layers = map_layers(data_dir, ViewState(dataset=dataset, view="density", table=table))
        except data.OrientScopeError as err:
            return html.P(friendly(err), className="warning"), None
        shown = control_report(report) if table == "control" else report
        ref = shown.get(REFERENCE_KEY)
        sides.append((shown, (layers, ref, shown.get("name", dataset))))
    figures = density_figures([panel for _, panel in sides])
    graphs = []
    for fig in figures:
        fig.update_layout(height=340)
        graphs.append(dcc.Graph(figure=fig, config={"displaylogo": False}))
    return compare_columns((sides[0][0], sides[1][0]), (graphs[0], graphs[1]))


# ----------------------------------------------------------------- HTML report
def report_download(data_dir: Path, st: ViewState) -> dict:
    """The offline HTML report of the view: its figures follow the active group filter and SMARTS highlight."""
    report = data.dataset_summary(data_dir, st.dataset)
    layers = map_layers(data_dir, st.with_(view="density"))
    panels = [(layers, report.get(REFERENCE_KEY), f"Axis density, {layers.n_molecules:,} molecules")]
    if st.smarts and layers.highlight_rows.size:
        matches = layers.matches()
        panels.append((matches, report.get(REFERENCE_KEY), f"Axis density of the {st.smarts} matches"))
    figures = [
        angle_histogram_figure(report.get(ANGLE_HISTOGRAM_KEY), report.get("control", {}).get(ANGLE_HISTOGRAM_KEY)),
        *density_figures(panels),
        # the map as the dashboard first draws it: above the point budget, the server's image under
        # the vector outline, graticule, reference markers and legend
        map_figure(data_dir, st.with_(view="map"))[0],
    ]
    view = {
        "group": f"{_group_name(data_dir, st)} ({st.grouping})" if st.group else "",
        "SMARTS highlight": f"{st.smarts} ({layers.n_matches or 0:,} matching molecules)" if st.smarts else "",
        # what this view changed (the symmetry note is the dataset's, said in the report's statistics)
        "notes": "; ".join(layers.errors + [n for n in layers.notes if n != layers.md.symmetry_note]),
    }
    text = static_report_html(report, figures, view)
    return {"content": text, "filename": f"orientscope-{st.dataset}-report.html", "type": "text/html"}
