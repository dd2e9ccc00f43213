"""Panel contents for a view state: what both the callbacks and the first layout show."""

import re

import numpy as np

from orientscope.app import data, panels
from orientscope.app.dashboard import components_of
from orientscope.figures.mapview import map_layers
from orientscope.figures.state import ViewState


def _ids(component) -> list:
    return [c.id for c in components_of(component) if isinstance(getattr(c, "id", None), dict)]


def test_neighbour_buttons_have_unique_ids_even_when_a_molecule_is_in_both_lists(qm9_store):
    st = ViewState(dataset="qm9")
    md = map_layers(qm9_store, st).md
    # ids[0], methane, shares no fingerprint bit with any other (below); only a full frame has pose neighbours
    full = [
        m for m in map(str, md.ids[1:30]) if data.molecule_detail(qm9_store, "qm9", m)["orientation"]["class"] == "full"
    ]
    for mol in full[:10]:
        ids = _ids(panels.neighbour_lists(qm9_store, st, mol))
        assert ids and len({tuple(sorted(i.items())) for i in ids}) == len(ids)
        assert {i["list"] for i in ids} == {"pose", "chemistry"}


def test_unrelated_molecules_are_no_chemistry_neighbours_and_captions_skip_missing_fields(qm9_store):
    st = ViewState(dataset="qm9")
    methane = str(map_layers(qm9_store, st).md.ids[0])
    lists = panels.neighbour_lists(qm9_store, st, methane)
    assert _ids(lists) == []  # a spherical top: no pose to be near either
    texts = [c.children for c in components_of(lists) if isinstance(getattr(c, "children", None), str)]
    assert "no molecule shares a fingerprint bit with it" in texts
    assert any(t.startswith("no full frame") for t in texts) and "no other molecule" not in texts
    assert not any("Tanimoto 0.00" in t or " ·  · " in t for t in texts)


def test_molecule_panel_for_known_unknown_and_no_selection(qm9_store):
    st = ViewState(dataset="qm9")
    mol = str(map_layers(qm9_store, st).md.ids[2])
    mol_id, _, spec = panels.molecule_outputs(qm9_store, st, mol)
    assert mol_id == mol and spec["molecule"] == mol and len(spec["scenes"]) == 2
    assert panels.molecule_outputs(qm9_store, st, "no-such-id")[0] == ""
    assert "Click a point" in str(panels.molecule_outputs(qm9_store, st, None)[1])
    assert panels.neighbour_lists(qm9_store, st, "no-such-id") is None


def test_verdict_groups_and_compare_choices(qm9_store):
    st = ViewState(dataset="qm9", grouping="formula")
    children, hist, progress, poll_disabled, frames = panels.verdict_outputs(qm9_store, st)
    assert children and progress is None and poll_disabled is True and "degenerate frames" in str(frames)
    options, rows, picked, _ = panels.group_outputs(qm9_store, st)
    assert rows and len(options) == len(rows) and picked == []
    group = rows[0]["group"]
    picked_st = ViewState(dataset="qm9", grouping="formula", group=group)
    assert panels.group_outputs(qm9_store, picked_st).picked == [0]
    assert panels.group_members_spec(qm9_store, picked_st)["molecule"] == f"group:{group}"
    a, b = panels.compare_choices(qm9_store)
    assert [o["value"] for o in a] == ["qm9"] and [o["value"] for o in b] == ["qm9", "qm9::control"]
    assert panels.verdict_outputs(qm9_store, ViewState()).poll_disabled is False  # nothing ready: keep polling


def test_panels_keep_no_dash_components_in_the_services_dataset_view(qm9_store):
    from dash.development.base_component import Component

    from orientscope.services.cache import get_view

    st = ViewState(dataset="qm9", color="group")
    panels.verdict_outputs(qm9_store, st)
    panels.map_outputs(qm9_store, st)
    extras = get_view(qm9_store, "qm9")._extras
    assert not [name for name, value in extras.items() if any(isinstance(c, Component) for c in _flat(value))]


def _flat(value):
    if isinstance(value, list | tuple):
        for v in value:
            yield from _flat(v)
    else:
        yield value


def _rows_of(children) -> dict[str, list[str]]:
    """{first cell: the row's cells} of every table row under ``children``."""
    return {
        str(c.children[0].children): [str(td.children) for td in c.children]
        for root in children
        for c in components_of(root)
        if type(c).__name__ == "Tr" and type(c.children[0]).__name__ == "Td"
    }


def _gain(row: list[str]) -> str:
    """The gain cell of a regression row (the first after the label that is a percentage), without its spread."""
    return next(c for c in row[1:] if "%" in c).split(" ±")[0]


def _zmax(graph) -> float:
    fig = graph.figure if isinstance(graph.figure, dict) else graph.figure.to_plotly_json()
    return next(t for t in fig["data"] if (t.get("meta") or {}).get("kind") == "density")["zmax"]


def test_compare_with_the_control_shows_the_controls_gains_not_the_datasets(qm9_store):
    from orientscope.core.numbers import format_percent
    from orientscope.services.datasets import dataset_summary

    report = dataset_summary(qm9_store, "qm9")
    a, b = panels.compare_panels(qm9_store, "qm9", "qm9::control")
    rows_a, rows_b = _rows_of(a), _rows_of(b)
    differ = 0
    for r in report["regression"]:
        label = f"{r['property']} ({r['unit']})" + (" *" if r["frame_dependent"] else "")
        # the control's own gain (its improvement on rotated poses), as the services report it
        gain_a, gain_b = _gain(rows_a[label]), _gain(rows_b[label.removesuffix(" *")])  # no lab-frame mark there
        assert gain_b == format_percent(r["control_improvement"])
        assert gain_a == format_percent(r["improvement"])
        differ += gain_a != gain_b
    assert differ >= 5  # the control panel no longer repeats the dataset's gains
    graphs = [c for side in (a, b) for root in side for c in components_of(root) if type(c).__name__ == "Graph"]
    assert len(graphs) == 2 and _zmax(graphs[0]) == _zmax(graphs[1])  # one colour scale
    assert panels.compare_panels(qm9_store, "qm9", None)[1] is None
    # the page's own verdict keeps its ids; the compare columns repeat none of them
    assert not [
        c for side in (a, b) for root in side for c in components_of(root) if isinstance(getattr(c, "id", None), str)
    ]


def test_density_view_shows_the_control_beside_on_one_scale_and_disables_colour(qm9_store):
    density = panels.map_outputs(qm9_store, ViewState(dataset="qm9"))
    assert density.graph_hidden is True and density.color_disabled is True
    main, ctl = density.paint["maps"]
    assert density.paint["view"] == "density" and ctl["title"].startswith("Control")
    assert main["legend"]["colorbar"] == ctl["legend"]["colorbar"]  # one scale
    bar = main["legend"]["colorbar"]
    assert bar["cmax"] >= 2 and bar["cmin"] == 0
    assert {t["value"]: t["text"] for t in bar["ticks"]}[1] == "1 = uniform"
    points = panels.map_outputs(qm9_store, ViewState(dataset="qm9", view="map"))
    assert points.graph_hidden is True and points.color_disabled is False and points.paint["view"] == "map"
    # the sphere: map_sphere.js's paint of the layers' sample, unringed (Dash rings through its ring store)
    layers = map_layers(qm9_store, ViewState(dataset="qm9", view="sphere"))
    st = ViewState(dataset="qm9", view="sphere", molecule=str(layers.md.ids[layers.rows[0]]))
    sphere = panels.map_outputs(qm9_store, st)
    assert sphere.graph_hidden is True and sphere.paint["view"] == "sphere" and sphere.paint["sphere"]["ring"] == []
    assert sphere.paint["sphere"]["ids"] == layers.md.ids[layers.rows].astype(str).tolist()
    want = layers.md.vectors(layers.rows, layers.axes).reshape(-1)
    assert np.abs(np.asarray(sphere.paint["sphere"]["vectors"]) - want).max() <= 5e-4  # rounded to 1e-3
    assert not any(t.get("type") == "scatter3d" for t in sphere.figure["data"])  # no plotly sphere


def test_reference_stars_follow_the_shown_axes_and_hover_in_degrees(qm9_store):
    for view in ("density", "map"):
        paint = panels.map_outputs(qm9_store, ViewState(dataset="qm9", view=view, axes="2")).paint
        stars = paint["maps"][0]["stars"] if view == "density" else paint["stars"]
        assert [s["label"] for s in stars] == ["ref 2"]
        assert re.fullmatch(r"reference orientation, axis 2: lon -?\d+\.\d°, lat -?\d+\.\d°", stars[0]["title"])


def test_an_invalid_smarts_is_an_error_not_a_note(qm9_store):
    notes = panels.map_outputs(qm9_store, ViewState(dataset="qm9", view="map", smarts="C((")).notes
    errors = [n for n in notes if n.className == "error"]
    assert len(errors) == 1 and "C((" in errors[0].children and errors[0].role == "alert"


def test_html_report_follows_the_active_group_and_smarts(qm9_store):
    from orientscope.services.cache import get_view
    from orientscope.services.grouping import group_ids, group_label_map
    from orientscope.services.molecules import match_smarts

    view = get_view(qm9_store, "qm9")
    code = group_ids(view)["formula"][0]
    label = group_label_map(view, "formula")[code]
    st = ViewState(dataset="qm9", grouping="formula", group=code, smarts="C=O")
    page = panels.report_download(qm9_store, st)["content"]
    n_group = int((group_ids(view)["formula"] == code).sum())
    n_match = int((match_smarts(view, "C=O").mask & (group_ids(view)["formula"] == code)).sum())
    assert f"{label} (formula)" in page and f"C=O ({n_match:,} matching molecules)" in page
    assert f"Axis density, {n_group:,} molecules" in page
    plain = panels.report_download(qm9_store, ViewState(dataset="qm9"))["content"]
    assert "id='active-view'" not in plain
