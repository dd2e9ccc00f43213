"""A map view resolved to its points: axes, group filter, colours and SMARTS matches on the toy set."""

from __future__ import annotations

import numpy as np
import pytest

from orientscope.services.errors import InvalidInput
from orientscope.services.map_data import band_of, load_map_data
from orientscope.services.map_view import MapQuery, view_points
from tests.services.conftest import TOY_IDS, TOY_SCORES


def test_the_default_view_shows_every_defined_axis_of_every_molecule(toy_dir):
    pts = view_points(toy_dir, MapQuery("toy"))
    md = load_map_data(toy_dir, "toy")
    # water and the asymmetric molecules: three axes; CO2 (linear) and benzene (oblate top): their one
    # defined axis; methane (a spherical top): none, and the note under the map says so.
    shown = {"co2": 1, "methane": 0, "benzene": 1}
    expected = [shown.get(name, 3) for name in TOY_IDS]
    assert pts.size == sum(expected) and np.bincount(pts.rows, minlength=len(TOY_IDS)).tolist() == expected
    assert set(pts.axis[pts.rows == TOY_IDS.index("co2")]) == {1}
    assert set(pts.axis[pts.rows == TOY_IDS.index("benzene")]) == {3}
    assert "2 molecules with only one defined axis" in pts.notes[0] and "1 with no orientation" in pts.notes[0]
    np.testing.assert_array_equal(pts.x, md.x[pts.rows, pts.axis - 1])
    np.testing.assert_array_equal(pts.y, md.y[pts.rows, pts.axis - 1])
    assert pts.colors.kind == "categorical" and pts.colors.title == "axis"
    np.testing.assert_array_equal(pts.colors.codes, pts.axis - 1)
    assert pts.highlight is None and pts.n_molecules == len(TOY_IDS)
    assert view_points(toy_dir, MapQuery("toy")) is pts  # cached


def test_axes_and_group_filter_select_points(toy_dir):
    pts = view_points(toy_dir, MapQuery("toy", axes="13", group="X"))
    assert set(pts.axis.tolist()) == {1, 3}
    assert sorted(set(pts.ids(np.arange(pts.size)).tolist())) == ["a1", "a2", "a3", "a4"]
    assert pts.size == 8 and pts.n_molecules == 4


def test_colour_by_group_score_and_property(toy_dir):
    groups = view_points(toy_dir, MapQuery("toy", color="group"))
    label_of = dict(zip(TOY_IDS, ["H2O", "CO2", "CH4", "C6H6", "X", "X", "X", "X"], strict=True))
    for i in range(groups.size):
        shown = groups.colors.labels[groups.colors.codes[i]]
        assert shown.startswith(f"{label_of[groups.md.ids[groups.rows[i]]]} (")  # the legend's title says formula
    assert groups.colors.title == "formula"
    score = view_points(toy_dir, MapQuery("toy", color="score"))
    np.testing.assert_allclose(score.colors.values, np.array(TOY_SCORES)[score.rows], rtol=1e-6)
    assert score.colors.kind == "continuous" and score.colors.lo < score.colors.hi
    energy = view_points(toy_dir, MapQuery("toy", color="prop:energy"))
    np.testing.assert_allclose(energy.colors.values, energy.rows - 3.0)
    assert energy.colors.title == "energy (eV)"


def test_smarts_marks_matching_molecules(toy_dir):
    pts = view_points(toy_dir, MapQuery("toy", smarts="[OX1,OX2]"))
    assert pts.n_matches == 2  # water and CO2
    assert sorted(set(pts.ids(np.flatnonzero(pts.highlight)).tolist())) == ["co2", "water"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        (MapQuery("toy", axes="14"), "axes"),
        (MapQuery("toy", axes=""), "axes"),
        (MapQuery("toy", color="rainbow"), "color"),
        (MapQuery("toy", color="prop:mass"), "color"),
        (MapQuery("toy", table="copy"), "table"),
        (MapQuery("toy", grouping="element"), "grouping"),
        (MapQuery("toy", smarts="C(("), "smarts"),
        (MapQuery("toy", group="nosuch"), "group"),
    ],
)
def test_a_bad_query_names_the_field(toy_dir, query, field):
    with pytest.raises(InvalidInput) as err:
        view_points(toy_dir, query)
    assert err.value.loc == ("query", field)


def test_colourings_of_one_view_share_its_banded_points_and_keep_the_draw_order(toy_dir):
    md = load_map_data(toy_dir, "toy")
    by_axis = view_points(toy_dir, MapQuery("toy", axes="12"))
    by_score = view_points(toy_dir, MapQuery("toy", axes="12", color="score"))
    assert by_score.x is by_axis.x and by_score.rows is by_axis.rows  # one sorted copy for every colour
    bands = band_of(by_axis.y)  # sorted by band of y, then by x
    assert (np.diff(bands) >= 0).all() and all((np.diff(by_axis.x[bands == b]) >= 0).all() for b in set(bands))
    rows, axis = md.points((1, 2))  # the same points, each once
    shown = sorted(zip(by_axis.rows.tolist(), by_axis.axis.tolist(), strict=True))
    assert shown == sorted(zip(rows.tolist(), axis.tolist(), strict=True))
    everything = np.arange(by_axis.size)  # drawn in the seeded key order, whatever the storage
    keys = md.draw_keys(by_axis.rows, by_axis.axis)
    np.testing.assert_array_equal(by_axis.in_draw_order(everything), np.argsort(keys, kind="stable"))
    np.testing.assert_allclose(by_score.colors.values, np.array(TOY_SCORES)[by_score.rows], rtol=1e-6)
    filtered = view_points(toy_dir, MapQuery("toy", axes="12", group="X"))
    assert filtered.x is not by_axis.x and filtered.size == 8  # a filter is another set of points
    assert view_points(toy_dir, MapQuery("toy", axes="12", group="X", color="score")).x is filtered.x
