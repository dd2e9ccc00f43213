"""The map's pick helpers on the toy set, against numpy over the view's arrays: a molecule's shown points
found through the spatial index, and the molecules sharing a pixel."""

import numpy as np
import pytest

from orientscope.services.map_pick import pick, shown_points_of
from orientscope.services.map_raster import Viewport
from orientscope.services.map_view import MapQuery, view_points


@pytest.mark.parametrize("axes", ["123", "2", "13"])
def test_a_molecules_shown_points_are_those_a_scan_of_the_view_finds(toy_dir, axes):
    points = view_points(toy_dir, MapQuery("toy", axes=axes))
    for row in range(points.md.n_molecules):
        expected = np.flatnonzero(points.rows == row)
        assert np.array_equal(shown_points_of(points, row), expected)


def test_a_pick_lists_every_molecule_in_the_picked_points_pixel_the_picked_one_first(toy_dir):
    points = view_points(toy_dir, MapQuery("toy"))
    vp = Viewport(-2.9, 2.9, -1.45, 1.45, 6, 3)  # 6 × 3 pixels over the map: several molecules share each
    dx, dy = vp.pixel_size
    col = np.minimum(((points.x.astype(np.float64) - vp.x0) / dx).astype(int), vp.width - 1)
    line = np.minimum(((points.y.astype(np.float64) - vp.y0) / dy).astype(int), vp.height - 1)
    most = 0
    for i in range(0, points.size, 3):
        picked = pick(points, vp, float(points.x[i]), float(points.y[i]))
        most = max(most, picked.size)
        first = int(picked[0])
        same = np.flatnonzero((col == col[first]) & (line == line[first]))
        assert sorted(points.rows[picked].tolist()) == sorted(set(points.rows[same].tolist()))
        assert len(set(points.rows[picked].tolist())) == picked.size  # one point per molecule
    assert most > 1  # some pixel is shared
