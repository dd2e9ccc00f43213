"""What each dashboard panel shows for a view state: Dash components and figures, nothing else.

The callbacks in ``app.dashboard`` return these when a control changes, and
``app.dashboard.first_view`` puts the same values into the layout of a page
load, so both paths show exactly the same thing. Everything is read through
``app.data`` (backend services); nothing here computes science.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import NamedTuple

from dash import dcc, html

from app import data
from app.figures import angle_histogram_figure, message_figure
from app.initial_view import dataset_options
from app.mapfigure import density_figure, map_figure_json, selected_ring
from app.mapview import map_layers
from app.state import ViewState
from app.verdict import verdict_children
from app.viewer import group_scenes, molecule_scenes, viewer_spec

log = logging.getLogger(__name__)


class MapPanel(NamedTuple):
    figure: dict
    notes: str


class VerdictPanel(NamedTuple):
    verdict: list
    histogram: object
    progress: list | None
    poll_disabled: bool


class MoleculePanel(NamedTuple):
    molecule_id: str
    info: object
    viewer: dict | None


class GroupsPanel(NamedTuple):
    options: list
    rows: list
    picked: list


GROUP_TABLE_ROWS = 200
GROUP_VIEWER_MEMBERS = 8
N_NEIGHBOURS = 6


def friendly(err: Exception) -> str:
    return str(err) if isinstance(err, data.OrientScopeError | ValueError | KeyError) else "something went wrong"


# ----------------------------------------------------------------- map
def map_outputs(data_dir: Path, st: ViewState) -> MapPanel:
    """The map figure of a view state and the notes under it.

    Plain JSON only (no components): Dash then encodes the 2.4 MB answer in one
    orjson pass instead of walking it to convert objects first.
    """
    if not st.ready:
        return MapPanel(message_figure("Choose a dataset."), "")
    try:
        fig, layers = map_figure_json(data_dir, st)
    except data.OrientScopeError as err:
        return MapPanel(message_figure(friendly(err)), "")
    return MapPanel(fig, " ".join(n + "." for n in layers.notes))


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
    children, hist = data.per_result(data_dir, dataset, "verdict_panel", lambda: _verdict_of(report, dataset))
    return VerdictPanel(children, hist, None, True)


def _verdict_of(report: dict, dataset: str) -> tuple[list, object]:
    """Verdict components and angle histogram of a report (about 40 ms to build)."""
    hist = angle_histogram_figure(report.get("angle_histogram"), report.get("control", {}).get("angle_histogram"))
    try:
        children = verdict_children(report)
    except (KeyError, TypeError, ValueError, IndexError):  # a report section in an unexpected shape
        log.exception("cannot render the verdict of %s", dataset)
        children = [html.P((report.get("verdict") or {}).get("text", "No verdict."), className="verdict-line")]
    return children, hist


# ----------------------------------------------------------------- molecule
def molecule_outputs(data_dir: Path, st: ViewState, selected: str | None) -> MoleculePanel:
    """The selected molecule's id, info table and 3D viewer spec."""
    if not selected or not st.ready:
        return MoleculePanel("", html.P("Click a point on the map to see that molecule.", className="note"), None)
    try:
        detail = data.molecule_detail(data_dir, st.dataset, selected)
    except data.OrientScopeError as err:
        return MoleculePanel("", html.P(friendly(err), className="warning"), None)
    spec = viewer_spec(molecule_scenes(detail), molecule=str(detail["id"]), cols=2)
    return MoleculePanel(str(detail["id"]), _molecule_info(detail), spec)


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
            _neighbour_list("pose", "Nearest in pose", pose, "angle_deg", "{:.1f}°"),
            _neighbour_list("chemistry", "Nearest in chemistry", chem, "tanimoto", "Tanimoto {:.2f}"),
        ],
        className="neighbour-lists",
    )


def _neighbour_list(kind: str, title: str, result: dict | None, metric: str, fmt: str) -> html.Div:
    if result is None:
        return html.Div([html.H4(title), html.P("not computed for this dataset", className="note")])
    items = [
        html.Li(
            html.Button(
                f"{it['id']} · {it.get('smiles') or ''} · {fmt.format(it[metric])}",
                # the list is part of the id: a molecule can be a neighbour in pose and in chemistry
                id={"type": "neighbour", "list": kind, "id": it["id"]},
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


# ----------------------------------------------------------------- groups
def group_outputs(data_dir: Path, st: ViewState) -> GroupsPanel:
    """The group filter's options, the groups table's rows and the picked row."""
    if not st.ready:
        return GroupsPanel([], [], [])
    try:
        rows = group_rows(data_dir, st.dataset, st.grouping)
    except data.OrientScopeError:
        return GroupsPanel([], [], [])
    options = [{"label": f"{r['group']} ({r['size']})", "value": r["group"]} for r in rows]
    if st.group and st.group not in {o["value"] for o in options}:
        options.append({"label": st.group, "value": st.group})
    picked = [i for i, r in enumerate(rows) if r["group"] == st.group]
    return GroupsPanel(options, rows, picked)


def group_members_spec(data_dir: Path, st: ViewState):
    """Viewer spec of the picked group's first members in their canonical pose (None without a group)."""
    if not st.ready or not st.group:
        return None
    labels = data.group_labels(data_dir, st.dataset, st.grouping)
    if labels is None:
        return None
    md = data.load_map_data(data_dir, st.dataset)
    members = md.ids[labels.astype(str) == str(st.group)][:GROUP_VIEWER_MEMBERS]
    details = [data.molecule_detail(data_dir, st.dataset, m) for m in members]
    return viewer_spec(group_scenes(details), molecule=f"group:{st.group}", cols=4) if details else None


def group_rows(data_dir: Path, dataset: str, grouping: str) -> list[dict]:
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


def _stat(stats: dict, word: str):
    key = next((k for k in stats if word in k), None)
    value = stats.get(key) if key else None
    return round(float(value), 3) if isinstance(value, int | float) else None


# ----------------------------------------------------------------- compare
def compare_choices(data_dir: Path) -> list[dict]:
    """Each ready dataset and its control; nothing is computed until two are picked."""
    options, ready = dataset_options(data_dir)
    opts = []
    for o in options:
        if o["value"] in ready:
            opts += [o, {"label": f"{o['label']} · control", "value": f"{o['value']}::control"}]
    return opts


def compare_column(data_dir: Path, value: str) -> html.Div:
    """One side of the compare view: a dataset (or its control, ``id::control``) with its verdict and density."""
    dataset, _, table = value.partition("::")
    table = table or "original"
    try:
        report = data.dataset_summary(data_dir, dataset)
    except data.OrientScopeError as err:
        return html.Div(html.P(friendly(err), className="warning"))
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
    st = ViewState(dataset=dataset, view="density", table=table)
    fig = density_figure(map_layers(data_dir, st), shown.get("reference_orientation"), shown.get("name", dataset))
    fig.update_layout(height=340)
    return html.Div(
        [html.Div(verdict_children(shown), className="verdict"), dcc.Graph(figure=fig, config={"displaylogo": False})],
        className="compare-column",
    )
