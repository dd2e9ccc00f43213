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
