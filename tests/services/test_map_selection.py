"""The molecules a box or lasso on the map selects, on the toy set: checked against the map's own
coordinates, paged, and as CSV."""

import csv
import io

import numpy as np
import pytest

from orientscope.core.selection import Selection, parse_selection
from orientscope.services.errors import InvalidInput
from orientscope.services.map_data import load_map_data
from orientscope.services.map_selection import selection_csv, selection_page
from orientscope.services.map_view import MapQuery
from tests.services.conftest import TOY_IDS

# Methane has no orientation: no point of it is on the map, so no selection holds it.
DRAWN_IDS = [i for i in TOY_IDS if i != "methane"]


def _box_around(md, rows, axis):
    """A box just holding axis ``axis`` (0-based) of the molecules ``rows``."""
    x, y = md.x[rows, axis], md.y[rows, axis]
    pad = 1e-3
    return float(x.min()) - pad, float(x.max()) + pad, float(y.min()) - pad, float(y.max()) + pad


def _expected(md, box, axes="123"):
    x0, x1, y0, y1 = box
    shown = np.array([int(a) - 1 for a in axes])
    x, y = md.x[:, shown], md.y[:, shown]
    inside = ((x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)).any(axis=1)
    return [str(i) for i in md.ids[np.flatnonzero(inside)]]  # the dataset's order


@pytest.mark.parametrize("axes", ["123", "1", "23"])
def test_a_box_selects_the_molecules_with_a_shown_point_inside_it(toy_dir, axes):
    md = load_map_data(toy_dir, "toy")
    box = _box_around(md, [0, 1], 0)  # water and CO2 (methane's axis 1 is no point)
    sel = Selection("box", box[:2], box[2:]).text()
    page = selection_page(toy_dir, MapQuery("toy", axes=axes), sel, limit=100)
    expected = _expected(md, tuple(float(v) for v in parse_selection(sel).bounds), axes)
    assert [m["id"] for m in page["molecules"]] == expected and page["total"] == len(expected)
    if axes == "123":
        assert {"water", "co2"} <= set(expected) and "methane" not in expected


def test_a_lasso_of_the_same_rectangle_selects_the_same_and_a_triangle_half_of_it(toy_dir):
    md = load_map_data(toy_dir, "toy")
    x0, x1, y0, y1 = -3.0, 3.0, -1.5, 1.5  # the whole map
    box = selection_page(toy_dir, MapQuery("toy"), f"box:{x0},{x1},{y0},{y1}", limit=100)
    lasso = selection_page(toy_dir, MapQuery("toy"), f"lasso:{x0},{y0},{x1},{y0},{x1},{y1},{x0},{y1}", limit=100)
    assert box == lasso and box["total"] == len(DRAWN_IDS)
    # the triangle below the line from (-3, -1.5) to (3, 1.7), which passes no toy point (the linear and
    # symmetric molecules' points sit at the centre, 0.1 below it): a point is inside iff it is below the line
    tri = selection_page(toy_dir, MapQuery("toy", axes="1"), f"lasso:{x0},{y0},{x1},{y0},{x1},1.7", limit=100)
    below = md.y[:, 0] < y0 + (md.x[:, 0] - x0) * 3.2 / 6
    assert 0 < below.sum() < len(DRAWN_IDS)
    assert [m["id"] for m in tri["molecules"]] == [str(i) for i in md.ids[below]]


def test_pages_and_values_follow_the_colouring(toy_dir):
    whole = "box:-3,3,-1.5,1.5"
    pages = [selection_page(toy_dir, MapQuery("toy", color="prop:energy"), whole, k, 3) for k in range(0, 9, 3)]
    ids = [m["id"] for p in pages for m in p["molecules"]]
    assert ids == DRAWN_IDS and {p["total"] for p in pages} == {len(DRAWN_IDS)}
    assert pages[0]["color"] == "energy (eV)" and isinstance(pages[0]["molecules"][0]["value"], float)
    axis = selection_page(toy_dir, MapQuery("toy"), whole, 0, 1)["molecules"][0]
    assert axis["value"].startswith("axis 1") and axis["formula"] == "H2O"  # the lowest axis inside


def test_the_csv_holds_every_selected_molecule_with_its_formula_and_value(toy_dir):
    text = selection_csv(toy_dir, MapQuery("toy", color="prop:energy"), "box:-3,3,-1.5,1.5")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["id", "formula", "energy (eV)"]
    assert [r[0] for r in rows[1:]] == DRAWN_IDS and rows[1][1] == "H2O" and rows[2][1] == "CO2"
    page = selection_page(toy_dir, MapQuery("toy", color="prop:energy"), "box:-3,3,-1.5,1.5", limit=100)
    assert [float(r[2]) for r in rows[1:]] == pytest.approx([m["value"] for m in page["molecules"]])


@pytest.mark.parametrize(
    ("sel", "message"),
    [
        ("circle:0,0,1", "must start with one of box:, lasso:"),
        ("box:0,1,0", "a box is four numbers"),
        ("box:0,1,0,nan", "within ±6"),
        ("lasso:0,0,1,1", "3 to 200 x,y pairs"),
        ("box:a,b,c,d", "comma-separated numbers"),
    ],
)
def test_a_malformed_selection_is_refused_naming_the_problem(toy_dir, sel, message):
    with pytest.raises(InvalidInput, match=message):
        selection_page(toy_dir, MapQuery("toy"), sel)


def test_the_url_form_round_trips():
    for text in ("box:-1.0000,0.5000,-0.2500,0.7500", "lasso:0.0000,0.0000,1.0000,0.0000,0.5000,0.8000"):
        assert parse_selection(text).text() == text
    assert parse_selection("box:1,0,1,0").text() == "box:0.0000,1.0000,0.0000,1.0000"  # corners in any order
