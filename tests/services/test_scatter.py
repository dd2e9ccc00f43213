"""A property against a coordinate of one axis: constructed frames with known longitude, latitude and
components, and the toy set's stored frames and properties."""

import numpy as np
import pytest

from orientscope.services.cache import get_view
from orientscope.services.errors import InvalidInput
from orientscope.services.scatter import (
    ScatterQuery,
    axis_coordinate,
    scatter_colors,
    scatter_image,
    scatter_mode,
    scatter_points,
)


def _frames() -> np.ndarray:
    """Three frames (rows = axes) whose axes point at known places on the sky."""
    s = np.sqrt(0.5)
    return np.array(
        [
            np.eye(3),  # axis 1 at lon 0, lat 0; axis 2 at lon 90; axis 3 at the north pole
            [[0, 1, 0], [0, 0, 1], [1, 0, 0]],  # axis 1 at lon 90; axis 2 at the pole; axis 3 at lon 0
            [[s, 0, s], [0, 1, 0], [-s, 0, s]],  # axis 1 at lon 0, lat 45; axis 3 at lon 180, lat 45
        ]
    )


@pytest.mark.parametrize(
    ("axis", "coord", "expected"),
    [
        (1, "lon", [0, 90, 0]),
        (1, "lat", [0, 0, 45]),
        (2, "lon", [90, 0, 90]),  # the pole's longitude is 0 by arctan2(0, 0)
        (2, "lat", [0, 90, 0]),
        (3, "lat", [90, 0, 45]),
        (3, "lon", [0, 0, 180]),
        (1, "x", [1, 0, np.sqrt(0.5)]),
        (1, "z", [0, 0, np.sqrt(0.5)]),
        (3, "x", [0, 1, -np.sqrt(0.5)]),
        (2, "y", [1, 0, 1]),
    ],
)
def test_each_coordinate_of_each_axis_of_constructed_frames(axis, coord, expected):
    assert axis_coordinate(_frames(), axis, coord) == pytest.approx(expected, abs=1e-12)


def test_the_points_are_the_stored_frames_coordinate_against_the_stored_property(toy_dir):
    view = get_view(toy_dir, "toy")
    pts = scatter_points(toy_dir, ScatterQuery("toy", "energy", axis=2, coord="z"))
    assert pts.ids.tolist() == [str(i) for i in view.ids]
    assert pts.x == pytest.approx(view.rotations[:, 1, 2]) and pts.y == pytest.approx(np.arange(8) - 3.0)
    assert pts.x_title == "axis 2 z component" and pts.y_title == "energy (eV)" and not pts.log and pts.notes == ()
    lat = scatter_points(toy_dir, ScatterQuery("toy", "energy", axis=1, coord="lat"))
    assert lat.x == pytest.approx(np.degrees(np.arcsin(view.rotations[:, 0, 2])))


def test_a_log_scale_needs_positive_values_and_says_so_otherwise(toy_dir):
    pts = scatter_points(toy_dir, ScatterQuery("toy", "energy", scale="log"))  # energy runs from -3 to 4
    assert not pts.log and pts.x.size == 8
    assert pts.notes == ("a log scale is not possible: 4 molecules have energy ≤ 0; shown on a linear scale",)


def test_above_the_point_budget_the_view_is_an_image(toy_dir):
    pts = scatter_points(toy_dir, ScatterQuery("toy", "energy"))
    assert scatter_mode(pts, budget=8) == "points" and scatter_mode(pts, budget=7) == "image"
    image = scatter_image(pts)
    assert image.png.startswith(b"\x89PNG") and image.x_range[0] < pts.x.min() and image.y_range[1] > pts.y.max()


@pytest.mark.parametrize(
    ("query", "field"),
    [
        (ScatterQuery("toy", "mass"), "unknown property 'mass'"),
        (ScatterQuery("toy", "energy", axis=4), "axis 4: expected 1, 2 or 3"),
        (ScatterQuery("toy", "energy", coord="r"), "unknown coordinate 'r'"),
        (ScatterQuery("toy", "energy", scale="ln"), "unknown scale 'ln'"),
    ],
)
def test_a_bad_query_names_what_is_wrong(toy_dir, query, field):
    with pytest.raises(InvalidInput, match=field):
        scatter_points(toy_dir, query)


def _pixel_rgb(image, x: float, y: float) -> tuple[int, ...]:
    """(r, g, b, a) of the image's pixel holding the point (x, y)."""
    from io import BytesIO

    from PIL import Image

    rgba = np.asarray(Image.open(BytesIO(image.png)))
    (x0, x1), (y0, y1) = image.x_range, image.y_range
    col = min(int((x - x0) / (x1 - x0) * image.width), image.width - 1)
    row = min(int((y1 - y) / (y1 - y0) * image.height), image.height - 1)  # top row first
    return tuple(int(v) for v in rgba[row, col])


def test_the_scatter_is_coloured_by_the_maps_colour_and_its_image_shades_the_mean_value(toy_dir):
    pts = scatter_points(toy_dir, ScatterQuery("toy", "energy", axis=2, coord="z"))
    assert scatter_colors(toy_dir, pts, "axis") == (None, ())  # one colour: the image shades counts
    colors, notes = scatter_colors(toy_dir, pts, "prop:energy")
    assert colors.kind == "continuous" and notes == () and colors.title == "energy (eV)"
    assert colors.values == pytest.approx(pts.y) and colors.lo > pts.y.min() and colors.hi < pts.y.max()
    # each molecule alone in its pixel (the energies are one apart): the lowest is drawn in Cividis's first
    # colour, the highest in its last (both beyond the 1st..99th percentile, so clipped), opaque
    coloured, counted = scatter_image(pts, size=(40, 160), colors=colors), scatter_image(pts, size=(40, 160))
    low, high = int(np.argmin(pts.y)), int(np.argmax(pts.y))
    assert _pixel_rgb(coloured, pts.x[low], pts.y[low]) == (0x00, 0x22, 0x4E, 255)
    assert _pixel_rgb(coloured, pts.x[high], pts.y[high]) == (0xFE, 0xE8, 0x38, 255)
    assert _pixel_rgb(counted, pts.x[high], pts.y[high])[:3] != (0xFE, 0xE8, 0x38)  # counts: another shading
    with pytest.raises(InvalidInput, match="unknown property 'nope'"):
        scatter_colors(toy_dir, pts, "prop:nope")
    with pytest.raises(InvalidInput, match="unknown colour"):
        scatter_colors(toy_dir, pts, "rainbow")


def test_the_view_opens_on_the_bulk_when_a_few_outliers_would_flatten_it():
    """QM9's rot_a in miniature: 999 values between 1.7 and 18, one at 620,000; the home region holds the bulk
    and counts the one beyond; without outliers it holds every value."""
    from orientscope.services.scatter import home_region

    rng = np.random.default_rng(0)
    x = rng.uniform(-90, 90, 1000)
    y = np.concatenate([rng.uniform(1.7, 18.0, 999), [620_000.0]])
    (x0, x1, y0, y1), beyond = home_region(x, y)
    assert x0 < x.min() and x1 > x.max() and beyond == 1
    bulk = np.sort(y)[1:-1]  # the values but the lowest and the highest: 0.1 % of 1,000 each side
    assert y0 < bulk[0] and bulk[-1] < y1 < 19
    (_, _, y0, y1), beyond = home_region(x, y[:999])
    assert beyond == 0 and y0 < y[:999].min() and y1 > y[:999].max()


@pytest.mark.parametrize(
    ("values", "scale"),
    [
        (np.geomspace(0.01, 100.0, 500), "log"),  # four decades, all positive
        (np.linspace(1.0, 9.0, 500), "linear"),  # under one decade
        (np.concatenate([[0.0], np.geomspace(0.01, 100.0, 500)]), "linear"),  # a zero: no log
        (np.concatenate([np.linspace(1.7, 18.0, 999), [620_000.0]]), "linear"),  # rot_a: one decade, one outlier
    ],
)
def test_the_scale_that_suits_a_property_is_log_where_its_bulk_spans_decades(values, scale):
    from orientscope.services.scatter import suited_scale

    assert suited_scale(values) == scale


def test_a_scale_asked_for_is_drawn_unless_the_values_refuse_it(toy_dir):
    from orientscope.services.scatter import resolve_scale

    assert resolve_scale(toy_dir, "toy", "energy", None) == ("linear", None)
    assert resolve_scale(toy_dir, "toy", "energy", "linear") == ("linear", None)
    scale, why = resolve_scale(toy_dir, "toy", "energy", "log")  # energy runs from -3 to 4
    assert (
        scale == "linear" and why == "a log scale is not possible: 4 molecules have energy ≤ 0: shown on a linear scale"
    )
    with pytest.raises(InvalidInput, match="unknown property 'mass'"):
        resolve_scale(toy_dir, "toy", "mass", None)


def test_a_pick_names_the_nearest_molecule_and_lists_those_sharing_its_pixel(toy_dir):
    """On a coarse grid (4 × 2 pixels over the toy set's plot) the molecules sharing the picked one's pixel are
    listed, the picked one first; the preview's card and words describe the same molecule."""
    from orientscope.services.map_raster import Viewport
    from orientscope.services.scatter import ScatterPick, hover_preview, nearest_molecule, pick, shared_molecules

    q = ScatterQuery("toy", "energy", axis=2, coord="z")
    pts = scatter_points(toy_dir, q)
    x0, x1, y0, y1 = pts.home
    grid = Viewport(x0, x1, y0, y1, 4, 2)
    dx, dy = grid.pixel_size
    col = np.minimum(((pts.x - x0) / dx).astype(int), 3)
    row = np.minimum(((pts.y - y0) / dy).astype(int), 1)
    crowded = 0
    for i in range(pts.x.size):
        at = ScatterPick(float(pts.x[i]), float(pts.y[i]), dx, dy, grid, "prop:energy")
        picked = pick(pts, at)
        first = int(picked[0])
        same = np.flatnonzero((col == col[first]) & (row == row[first]))
        assert sorted(picked.tolist()) == same.tolist()
        hit = nearest_molecule(toy_dir, q, at)
        assert (
            hit["id"] == pts.ids[first] and hit["shared"] == same.size and hit["value"] == pytest.approx(pts.y[first])
        )
        page = shared_molecules(toy_dir, q, at, 0, 10)
        assert page["total"] == same.size and page["molecules"][0]["id"] == hit["id"]
        assert {m["id"] for m in page["molecules"]} == set(pts.ids[same].tolist())
        preview = hover_preview(toy_dir, q, at)
        assert preview["caption"]["id"] == hit["id"] and preview["caption"]["axis"] == 2
        assert preview["depiction"].lstrip().startswith(("<?xml", "<svg"))
        assert preview["text"].startswith(f"molecule {hit['id']} · ")
        if same.size > 1:
            assert f"{same.size} molecules share this pixel" in preview["text"]
            crowded += 1
    assert crowded > 0
    far = ScatterPick(x1 + 100 * dx, y1 + 100 * dy, dx, dy, grid)
    assert set(nearest_molecule(toy_dir, q, far).values()) == {None}
    assert hover_preview(toy_dir, q, far)["text"] is None
    with pytest.raises(InvalidInput, match="dx must be a finite number above 0"):
        pick(pts, ScatterPick(0.0, 0.0, 0.0, 1.0))
