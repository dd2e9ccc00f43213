"""Points stay visible at any size: the marker rule on known counts, and the server's image of a sparse view
(a few molecules, a few SMARTS matches over a full map) stamped as outlined markers."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from orientscope.core.palette import HIGHLIGHT
from orientscope.services import map_markers as mk
from orientscope.services import map_raster as mr
from orientscope.services.map_data import MapData
from orientscope.services.map_view import AXIS_NAMES, MapColors, MapPoints, MapQuery

CARD = mr.Viewport(*mr.FULL_MAP, 480, 240)  # the notebook card's map


def test_markers_shrink_as_points_grow_between_the_bounds():
    sizes = [mk.marker_px(n, 900, 458) for n in (1, 9, 600, 10_000, 30_000, 400_000)]
    assert sizes == sorted(sizes, reverse=True)  # more points, smaller markers
    assert sizes[0] == sizes[1] == mk.MAX_PX and sizes[-1] == mk.MIN_PX
    assert mk.marker_px(10_000, 900, 458) == pytest.approx(mk.SPACING_SHARE * np.sqrt(900 * 458 / 10_000), abs=0.05)
    few, many = mk.vector_marker(9, 900, 458), mk.vector_marker(30_000, 900, 458)
    assert few["size"] == mk.MAX_PX and "line" in few  # a few points: large and outlined
    assert many["size"] == mk.MIN_VECTOR_PX and "line" not in many  # thousands: small, no outline to hide them


def _view(n_molecules: int, match_every: int | None = None, seed: int = 0) -> MapPoints:
    """``n_molecules`` random molecules, three axis points each over the whole map, coloured by axis."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.0, 2.0, (n_molecules, 3)).astype(np.float32)
    y = rng.uniform(-1.0, 1.0, (n_molecules, 3)).astype(np.float32)
    md = MapData("syn", "r", "original", np.arange(n_molecules).astype(str), x, y, np.zeros(n_molecules, bool), 0)
    rows, axes = md.points()
    px, py = md.xy(rows, axes)
    colors = MapColors("categorical", "axis", codes=(axes - 1).astype(np.uint8),
                       labels=tuple(AXIS_NAMES[a] for a in (1, 2, 3)), colors=("#0072B2", "#009E73", "#E69F00"))  # fmt: skip
    match = None if match_every is None else (np.arange(n_molecules) % match_every == 0)
    return MapPoints(MapQuery("syn"), md, px, py, rows.astype(np.int32), axes, colors,
                     None if match is None else match[rows], n_molecules, None if match is None else int(match.sum()))  # fmt: skip


def test_a_small_sets_image_draws_each_point_as_an_outlined_marker_not_a_faint_pixel():
    """200 molecules on the notebook card (480 × 240): each point covers several near-opaque pixels in its axis
    colour, ringed by the outline; the aggregates a hover reads are still one point per pixel."""
    render = mr.render_map(_view(200), CARD, budget=0)
    opaque = render.rgba[..., 3] >= mk.SPREAD_MIN_ALPHA
    assert render.n_points == 600 and int(render.counts.sum()) == 600  # the aggregates are the points'
    assert opaque.sum() >= 10 * 600 * 0.5  # about a disc of some 20 px per point (overlaps aside)
    outline = (render.rgba[..., :3] == mk.OUTLINE_RGBA[:3]).all(axis=-1)
    assert outline.sum() >= 600  # the markers are outlined
    axis_one = (render.rgba[..., :3] == [0x00, 0x72, 0xB2]).all(axis=-1) & opaque
    assert axis_one.sum() >= 5 * 200 * 0.5  # each colour is drawn as a marker, not one pixel
    decoded = np.asarray(Image.open(io.BytesIO(render.png())))  # Report.map_png's bytes: the same pixels
    np.testing.assert_array_equal(decoded, render.rgba)


def test_a_dense_image_keeps_its_pixels():
    render = mr.render_map(_view(60_000), mr.Viewport(*mr.FULL_MAP, 300, 150), budget=0)
    filled = render.counts[::-1] > 0
    assert ((render.rgba[..., 3] > 0) == filled).all()  # nothing stamped beyond the points' own pixels


def test_a_few_smarts_matches_over_a_full_map_are_opaque_outlined_markers():
    """One molecule in 500 matches, over 60,000 molecules: each match covers tens of opaque highlight pixels."""
    render = mr.render_map(_view(60_000, match_every=500), mr.Viewport(*mr.FULL_MAP, 900, 458), budget=0)
    n_match_points = 3 * 120
    orange = np.array([int(HIGHLIGHT[i : i + 2], 16) for i in (1, 3, 5)])
    shown = (render.rgba[..., :3] == orange).all(axis=-1) & (render.rgba[..., 3] >= mk.SPREAD_MIN_ALPHA)
    assert int(render.matches.sum()) == n_match_points
    assert shown.sum() >= 10 * n_match_points
