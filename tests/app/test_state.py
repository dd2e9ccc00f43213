"""URL query <-> view state round trips and friendly warnings."""

from __future__ import annotations

import pytest

from orientscope.app.state import control_values, parse_query
from orientscope.figures.state import ViewState, pin_entry, pin_text, split_pins


def test_round_trip_of_every_field():
    st = ViewState(
        dataset="qm9",
        color="prop:mu",
        grouping="scaffold",
        group="c1ccccc1",
        smarts="C=O",
        molecule="42",
        view="density",
        axes="13",
    )
    back, warnings = parse_query(st.to_query())
    assert back == st and warnings == []


def test_defaults_are_omitted_and_empty_query_gives_defaults():
    assert ViewState(dataset="qm9").to_query() == "?dataset=qm9"
    assert parse_query("") == (ViewState(), [])


def test_bad_values_are_dropped_with_a_warning_naming_them():
    st, warnings = parse_query("?view=globe&grouping=size&axes=9&colour=red")
    assert st.view == "density" and st.grouping == "formula" and st.axes == "123"
    assert any("'globe'" in w for w in warnings)
    assert any("'size'" in w for w in warnings)
    assert any("'9'" in w for w in warnings)
    assert any("'colour'" in w for w in warnings)


def test_map_state_holds_what_the_map_draws_but_not_the_selection():
    st = ViewState(dataset="qm9", molecule="5", color="score")
    assert st.map_state() == {
        "dataset": "qm9", "table": "original", "color": "score", "grouping": "formula", "group": None,
        "smarts": None, "view": "density", "axes": "123", "prop": None, "xaxis": "1", "coord": "lat",
        "yscale": None,
    }  # fmt: skip
    assert st.with_(molecule="6").map_state() == st.map_state()
    assert ViewState.from_map_state(st.map_state()) == st.with_(molecule=None)
    assert ViewState(dataset="qm9", table="control").to_query() == "?dataset=qm9"  # the table never enters a URL


def test_from_map_state_and_from_controls_parse_what_the_page_sends():
    assert ViewState.from_map_state(None) == ViewState() and not ViewState().ready
    assert ViewState.from_map_state({"dataset": "qm9", "axes": "31"}).axes == "13"
    shown = ViewState.from_controls(
        dataset="qm9",
        color=None,
        grouping="scaffold",
        group="",
        smarts="  C=O ",
        molecule="7",
        view=None,
        axes=["3", "1"],
    )
    assert shown == ViewState(dataset="qm9", grouping="scaffold", smarts="C=O", molecule="7", axes="13")
    assert control_values(shown)["axes"] == ["1", "3"] and control_values(ViewState())["smarts"] == ""
    assert parse_query(shown.to_query()) == (shown, [])  # copy-link round trip


@pytest.mark.parametrize(
    "junk", ["qm9", 7, ["qm9"], {"dataset": 7}, {"dataset": "qm9", "table": "other"}, {"dataset": "qm9", "axes": 5}]
)
def test_from_map_state_rejects_values_the_page_never_writes(junk):
    with pytest.raises((TypeError, ValueError)):
        ViewState.from_map_state(junk)


def test_compare_travels_in_the_url_and_an_unknown_one_is_reported(qm9_store):
    from orientscope.app.initial_view import resolve_view

    st, warnings = parse_query("?dataset=qm9&compare=qm9::control")
    assert st.compare == "qm9::control" and warnings == []
    assert parse_query(st.to_query())[0] == st
    assert resolve_view(qm9_store, "?dataset=qm9&compare=qm9::control").state.compare == "qm9::control"
    bad = resolve_view(qm9_store, "?dataset=qm9&compare=nope")
    assert bad.state.compare is None and any("'nope'" in m and "::control" in m for m in bad.messages)


def test_a_link_to_a_molecule_without_a_view_opens_the_point_map():
    assert parse_query("?dataset=qm9&molecule=7")[0].view == "map"
    assert parse_query("?dataset=qm9&molecule=7&view=sphere")[0].view == "sphere"
    assert parse_query("?dataset=qm9")[0].view == "density"


def test_the_zoom_travels_in_the_url_of_the_flat_map_and_the_density_view_not_the_sphere():
    st, warnings = parse_query("?dataset=qm9&view=map&zoom=-0.5,0.5,-0.25,0.25")
    assert warnings == [] and st.zoom == "-0.5000,0.5000,-0.2500,0.2500" and st.region == (-0.5, 0.5, -0.25, 0.25)
    assert parse_query(st.to_query())[0] == st
    assert "zoom" not in st.with_(view="sphere").to_query() and st.with_(view="sphere").region is None
    assert st.with_(view="density").region == st.region  # the density view zooms on the same plane
    assert "zoom" not in st.map_state()  # a zoom draws the same layers
    for bad in ("1,2,3", "0.5,-0.5,0,1", "nan,1,0,1", "0,1e9,0,1", "a,b,c,d"):
        st, warnings = parse_query(f"?view=map&zoom={bad}")
        assert st.zoom is None and len(warnings) == 1 and "showing the whole map" in warnings[0], bad


def test_the_pins_travel_in_the_url_at_most_four_without_repeats():
    st = ViewState(dataset="qm9", pins="7,3,12")
    assert "pins=7%2C3%2C12" in st.to_query()
    assert parse_query(st.to_query()) == (st, [])
    back, warnings = parse_query("?dataset=qm9&pins=1,2,,2,3,4,5")
    assert back.pins == "1,2,3,4" and warnings == ["pins name 5 molecules; at most 4 are pinned, the first kept"]
    assert ViewState.from_controls(**{**control_values(st), "pins": " 5,5 ,6"}).pins == "5,6"
    assert ViewState.from_controls(**{**control_values(st), "pins": ""}).pins is None


def test_each_pin_carries_its_pose_and_a_plain_id_is_the_stored_pose():
    st = ViewState(dataset="qm9", pins="12:c,40,7:c")
    assert parse_query(st.to_query()) == (st, [])
    assert parse_query("?dataset=qm9&pins=12:c,40:s,12,40:c")[0].pins == "12:c,40"  # a molecule's first pin
    # an id that ends as a pose would keeps ":s", so that it reads back whole
    assert split_pins("a:c:s,b:s:s,c")[0] == ["a:c:s", "b:s:s", "c"]
    assert [pin_entry(p) for p in ("a:c:s", "12:c", "12", "x:y")] == [("a:c", "s"), ("12", "c"), ("12", "s"),
                                                                      ("x:y", "s")]  # fmt: skip
    assert pin_text("a:c", "s") == "a:c:s" and pin_text("12", "s") == "12" and pin_text("12", "c") == "12:c"


def test_a_selection_round_trips_through_the_url_of_the_flat_map_only():
    st, warnings = parse_query("?dataset=qm9&view=map&sel=box:1,0,0,0.5")
    assert warnings == [] and st.sel == "box:0.0000,1.0000,0.0000,0.5000"
    assert parse_query(st.to_query())[0] == st
    assert "sel=" not in st.with_(view="density").to_query()  # only the flat map selects
    st, warnings = parse_query("?dataset=qm9&view=map&sel=circle:0,0,1")
    assert st.sel is None and warnings == [
        "selection 'circle:0,0,1' must start with one of box:, lasso:; nothing is selected"
    ]
    assert ViewState.from_controls(dataset="qm9", color=None, grouping=None, group=None, smarts=None, molecule=None,
                                   view="map", axes=None, sel="lasso:0,0,1,0,0,1").sel == (
        "lasso:0.0000,0.0000,1.0000,0.0000,0.0000,1.0000"
    )  # fmt: skip


def test_the_scatter_controls_round_trip_through_the_url_of_the_scatter_view_only():
    st, warnings = parse_query("?dataset=qm9&view=scatter&prop=zpve&xaxis=2&coord=z&yscale=log")
    assert warnings == [] and (st.prop, st.xaxis, st.coord, st.yscale) == ("zpve", "2", "z", "log")
    assert parse_query(st.to_query())[0] == st
    assert st.map_state()["coord"] == "z"  # a new coordinate redraws the view
    assert "prop=" not in st.with_(view="map").to_query()
    st, warnings = parse_query("?dataset=qm9&view=scatter&coord=w&xaxis=4")
    assert (st.coord, st.xaxis) == ("lat", "1") and len(warnings) == 2 and "unknown coord 'w'" in warnings[1]


def test_the_scatter_views_zoom_is_in_its_own_units_and_the_maps_in_mollweide_units():
    """A scatter zoom holds any finite region (a property up to 620,000 GHz); the map's stays on the plane."""
    st, warnings = parse_query("?dataset=qm9&view=scatter&prop=rot_a&zoom=-90,90,1.5,620000")
    assert warnings == [] and st.scatter_region == (-90.0, 90.0, 1.5, 620000.0) and st.region is None
    assert "zoom=-90%2C90%2C1.5%2C620000" in st.to_query()
    st, warnings = parse_query("?dataset=qm9&view=map&zoom=-90,90,1.5,620000")
    assert st.zoom is None and any("must lie within" in w for w in warnings)
    for bad in ("1,2,3", "0,0,1,2", "nan,1,2,3"):
        st, warnings = parse_query(f"?view=scatter&zoom={bad}")
        assert st.zoom is None and warnings
    assert ViewState(view="sphere", zoom="0,1,0,1").to_query() == "?view=sphere"  # a sphere does not zoom
    density = ViewState(dataset="qm9", view="density", zoom="0.1000,0.5000,-0.2000,0.3000")
    assert "zoom=" in density.to_query()  # the density view zooms on the plane, as the map


def test_the_scale_is_left_to_the_data_unless_asked_for():
    assert ViewState().yscale is None and "yscale" not in ViewState(dataset="qm9", view="scatter").to_query()
    assert parse_query("?view=scatter&yscale=log")[0].yscale == "log"
