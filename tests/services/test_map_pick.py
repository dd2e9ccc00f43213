"""The map's pick helpers on the toy set, against numpy over the view's arrays: a molecule's shown points
found through the spatial index, the molecules sharing a pixel, and what a hover says of the picked point
and its pixel (one grid for every count)."""

import numpy as np
import pytest

from orientscope.services.map_pick import hover_preview, molecule_caption, pick, pixel_summary, shown_points_of
from orientscope.services.map_raster import Viewport
from orientscope.services.map_view import AXIS_NAMES, MapQuery, view_points

COARSE = Viewport(-2.9, 2.9, -1.45, 1.45, 6, 3)  # 6 × 3 pixels over the map: several molecules share each


def _pixels(points, vp):
    """(column, row) of every point on ``vp``'s grid, computed here with numpy (the test's oracle)."""
    dx, dy = vp.pixel_size
    col = np.minimum(((points.x.astype(np.float64) - vp.x0) / dx).astype(int), vp.width - 1)
    line = np.minimum(((points.y.astype(np.float64) - vp.y0) / dy).astype(int), vp.height - 1)
    return col, line


@pytest.mark.parametrize("axes", ["123", "2", "13"])
def test_a_molecules_shown_points_are_those_a_scan_of_the_view_finds(toy_dir, axes):
    points = view_points(toy_dir, MapQuery("toy", axes=axes))
    for row in range(points.md.n_molecules):
        expected = np.flatnonzero(points.rows == row)
        assert np.array_equal(shown_points_of(points, row), expected)


def test_a_pick_lists_every_molecule_in_the_picked_points_pixel_the_picked_one_first(toy_dir):
    points = view_points(toy_dir, MapQuery("toy"))
    col, line = _pixels(points, COARSE)
    most = 0
    for i in range(0, points.size, 3):
        picked = pick(points, COARSE, float(points.x[i]), float(points.y[i]))
        most = max(most, picked.molecules.size)
        first = picked.index
        same = np.flatnonzero((col == col[first]) & (line == line[first]))
        assert np.array_equal(picked.members, same)  # every point of the pixel, in the view's order
        assert sorted(points.rows[picked.molecules].tolist()) == sorted(set(points.rows[same].tolist()))
        assert len(set(points.rows[picked.molecules].tolist())) == picked.molecules.size  # one point per molecule
    assert most > 1  # some pixel is shared


@pytest.mark.parametrize("color", ["axis", "prop:energy"])
def test_a_hover_describes_the_picked_point_its_axis_and_its_pixel_on_one_grid(toy_dir, color):
    """The card names the axis of the point under the cursor, not the molecule's first shown point; the pixel's
    molecule and point counts are both of the grid the pick used, as numpy counts them."""
    query = MapQuery("toy", color=color)
    points = view_points(toy_dir, query)
    col, line = _pixels(points, COARSE)
    energy = np.arange(8, dtype=float) - 3.0  # the toy set's property, per molecule
    for i in range(points.size):
        answer = hover_preview(toy_dir, query, COARSE, float(points.x[i]), float(points.y[i]))
        j = int(
            np.flatnonzero((points.x == answer["x"]) & (points.y == answer["y"]) & (points.axis == answer["axis"]))[0]
        )
        assert answer["caption"]["axis"] == answer["axis"] == int(points.axis[j])
        assert answer["caption"]["id"] == answer["id"] == str(points.md.ids[points.rows[j]])
        if color == "axis":
            assert answer["caption"]["value"] == AXIS_NAMES[answer["axis"]]
        else:
            assert answer["caption"]["value"] == pytest.approx(energy[points.rows[j]])
        same = (col == col[j]) & (line == line[j])
        pixel = answer["pixel"]
        assert pixel["count"] == int(same.sum())
        assert pixel["molecules"] == answer["shared"] == len(set(points.rows[same].tolist()))
        assert f"axis {answer['axis']}" in answer["text"]
        if pixel["molecules"] > 1:
            assert f"{pixel['molecules']} molecules share this pixel" in answer["text"]
            assert f"{pixel['count']} points here" in answer["text"]


def test_a_pixels_summary_reads_its_members_as_the_image_shades_them(toy_dir):
    """Dominant category (the first most frequent), mean value and density ratio of a pixel's points."""
    points = view_points(toy_dir, MapQuery("toy"))
    members = np.flatnonzero(points.axis == 2)[:3]
    info = pixel_summary(points, COARSE, members, "density")
    assert info["dominant"] == AXIS_NAMES[2] and info["count"] == 3
    dx, dy = COARSE.pixel_size
    assert info["ratio"] == pytest.approx(3 / (points.size * dx * dy / (np.pi * 2 * 2)))  # ellipse area 4π
    valued = view_points(toy_dir, MapQuery("toy", color="prop:energy"))
    some = np.arange(4)
    assert pixel_summary(valued, COARSE, some)["mean"] == pytest.approx(float(valued.colors.values[some].mean()))


def test_a_molecules_caption_of_one_axis_describes_that_axiss_point(toy_dir):
    for axis in (1, 2, 3):  # water: an asymmetric top, all three axes drawn
        caption = molecule_caption(toy_dir, MapQuery("toy"), "water", axis)
        assert caption["axis"] == axis and caption["value"] == AXIS_NAMES[axis]
    assert molecule_caption(toy_dir, MapQuery("toy", axes="3"), "water", 1)["value"] is None  # not shown
    # benzene, a symmetric top, is drawn by its unique axis only (axis 3): its other axes have no point
    assert molecule_caption(toy_dir, MapQuery("toy"), "benzene", 3)["axis"] == 3
    assert molecule_caption(toy_dir, MapQuery("toy"), "benzene", 1)["axis"] is None
