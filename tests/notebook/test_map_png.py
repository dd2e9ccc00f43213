"""``Report.map_png``: the notebook card's whole map, whose markers at the poles and the outline are drawn whole."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

import orientscope
from orientscope.services.map_markers import SPREAD_MIN_ALPHA
from orientscope.services.map_raster import whole_map_viewport

# A planar molecule with three distinct in-plane spreads: lying in the lab's xy plane, its third axis (the plane's
# normal) is the lab's z axis, which the map draws at a pole (y = ±√2, the image's top or bottom row before).
PLANAR = np.array([[0.0, 0.0, 0.0], [1.4, 0.0, 0.0], [2.1, 1.2, 0.0], [-0.9, 0.6, 0.0], [0.3, -1.9, 0.0]])
NUMBERS = [6, 6, 8, 7, 1]


def _turned_in_plane(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return PLANAR @ np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]).T


def test_the_cards_map_draws_the_markers_at_the_poles_whole(tmp_path):
    angles = np.random.default_rng(3).uniform(0, 2 * np.pi, 40)
    ds = orientscope.from_arrays([NUMBERS] * len(angles), [_turned_in_plane(a) for a in angles],
                                 name="flat", data_dir=tmp_path)  # fmt: skip
    rgba = np.asarray(Image.open(io.BytesIO(orientscope.report(ds, progress=False).map_png())))
    assert rgba.shape == (240, 480, 4)
    rows = np.flatnonzero((rgba[..., 3] >= SPREAD_MIN_ALPHA).any(axis=1))
    assert len(rows) and rows.min() > 0 and rows.max() < rgba.shape[0] - 1, rows  # nothing cut at the edge
    # every molecule's normal is at a pole: a whole marker there, its rows on both sides of the pole's row
    vp = whole_map_viewport(480, 240)
    north, south = ((vp.y1 - y) / (vp.y1 - vp.y0) * 240 for y in (np.sqrt(2), -np.sqrt(2)))
    pole = north if abs(rows.min() - north) < 8 else south
    near = rows[np.abs(rows - pole) < 8]
    assert near.min() < pole - 1 and near.max() > pole + 1, (rows, pole)
