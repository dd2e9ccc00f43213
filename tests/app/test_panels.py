"""Panel contents for a view state: what both the callbacks and the first layout show."""

from app import panels
from app.dashboard import components_of
from app.mapview import map_layers
from app.state import ViewState


def _ids(component) -> list:
    return [c.id for c in components_of(component) if isinstance(getattr(c, "id", None), dict)]


def test_neighbour_buttons_have_unique_ids_even_when_a_molecule_is_in_both_lists(qm9_store):
    st = ViewState(dataset="qm9")
    md = map_layers(qm9_store, st).md
    for mol in map(str, md.ids[:10]):
        ids = _ids(panels.neighbour_lists(qm9_store, st, mol))
        assert ids and len({tuple(sorted(i.items())) for i in ids}) == len(ids)
        assert {i["list"] for i in ids} == {"pose", "chemistry"}


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
    children, hist, progress, poll_disabled = panels.verdict_outputs(qm9_store, st)
    assert children and progress is None and poll_disabled is True
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

    from backend.services.cache import get_view

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
