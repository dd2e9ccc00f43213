"""A wide region drawn from cell sums is the image that binning its points onto the same grid gives."""

from __future__ import annotations

import numpy as np
import pytest

from orientscope.core.palette import OKABE_ITO
from orientscope.science.sphere import mollweide_xy
from orientscope.services import map_cells
from orientscope.services import map_raster as mr
from orientscope.services.bytecache import map_cache, shared_cache
from orientscope.services.map_data import MapData, SortedPoints, sorted_points
from orientscope.services.map_view import MapColors, MapPoints, MapQuery

N = 30_000
# (x0, x1, y0, y1, width, height): the whole map, a wide and a narrower zoom with pixels of >= 3 cells
WIDE = [
    (-2.83, 2.83, -1.42, 1.42, 300, 150),
    (-2.1, 1.7, -0.9, 1.0, 220, 110),
    (-0.6, 0.4, -0.3, 0.25, 60, 33),
]


def _view(colors: str, axes=(1, 2, 3), keep: np.ndarray | None = None, seed: int = 0) -> MapPoints:
    """N molecules whose axes are uniform on the sphere or crowd one spot (pixels of very different counts),
    resolved as view_points resolves a view (banded geometry with its axes and filter)."""
    rng = np.random.default_rng(seed)
    lon, lat = rng.uniform(-180, 180, (N, 3)), np.degrees(np.arcsin(rng.uniform(-1, 1, (N, 3))))
    crowd = rng.uniform(size=N) < 0.3
    lon[crowd, 0], lat[crowd, 0] = rng.normal(40, 4, crowd.sum()), rng.normal(20, 3, crowd.sum())
    x, y = (a.astype(np.float32) for a in mollweide_xy(lon, lat))
    md = MapData("syn", "r", "original", np.arange(N).astype(str), x, y, np.zeros(N, bool), 0)
    geo = SortedPoints(*sorted_points(md, axes, keep), md=md, axes=tuple(axes), mask=keep)
    if colors == "categorical":
        codes = np.minimum(rng.geometric(0.45, geo.x.size) - 1, 4).astype(np.uint8)
        spec = MapColors("categorical", "cat", codes=codes, labels=tuple("abcde"), colors=OKABE_ITO[:5])
    else:
        values = rng.normal(1.0, 0.7, geo.x.size).astype(np.float32)
        values[rng.uniform(size=values.size) < 0.2] = np.nan
        spec = MapColors("continuous", "v", values=values, lo=0.0, hi=2.0)
    n_molecules = N if keep is None else int(keep.sum())
    return MapPoints(
        MapQuery("syn"), md, geo.x, geo.y, geo.rows, geo.axis, spec, None, n_molecules, None, x_sorted=True,
        geometry=geo,
    )  # fmt: skip


@pytest.fixture
def cells_from(monkeypatch):
    """Set the size above which a region is drawn from cell sums (the tests' sets are small)."""
    shared_cache().clear("map_render")
    map_cache().clear("map_cells")

    def set_min(n: int) -> None:
        shared_cache().clear("map_render")
        monkeypatch.setattr(map_cells, "CELL_PATH_MIN_POINTS", n)

    yield set_min
    shared_cache().clear("map_render")
    map_cache().clear("map_cells")


def _hist(points: MapPoints, grid: mr.Viewport, keep: np.ndarray) -> np.ndarray:
    """Independent counts on a grid's documented pixel edges, rows from the bottom."""
    ye = np.linspace(grid.y0, grid.y1, grid.height + 1)
    xe = np.linspace(grid.x0, grid.x1, grid.width + 1)
    return np.histogram2d(points.y[keep].astype(float), points.x[keep].astype(float), bins=[ye, xe])[0]


@pytest.mark.parametrize("colors", ["categorical", "continuous"])
@pytest.mark.parametrize("kind", ["color", "density"])
def test_a_wide_zoom_from_cell_sums_equals_binning_its_points_on_the_same_grid(cells_from, colors, kind):
    pts = _view(colors)
    for region in WIDE:
        vp = mr.Viewport(*region)
        cells_from(0)
        summed = mr.render_map(pts, vp, kind, budget=0)
        grid = summed.image_viewport
        # the grid covers the region, a pixel at most beyond it, with pixels within a sixth of those asked for
        dx, dy = grid.pixel_size
        assert grid.x0 <= vp.x0 < grid.x0 + dx and grid.x1 - dx < vp.x1 <= grid.x1
        assert grid.y0 <= vp.y0 < grid.y0 + dy and grid.y1 - dy < vp.y1 <= grid.y1
        assert 5 / 6 * dx <= vp.pixel_size[0] < 7 / 6 * dx and 5 / 6 * dy <= vp.pixel_size[1] < 7 / 6 * dy
        cells_from(10**12)
        binned = mr.render_map(pts, grid, kind, budget=0)
        assert binned.image_viewport == grid  # datashader's binning of the points onto that grid
        np.testing.assert_array_equal(summed.counts, binned.counts)
        np.testing.assert_array_equal(summed.counts, _hist(pts, grid, slice(None)))
        np.testing.assert_array_equal(summed.rgba, binned.rgba)
        assert (summed.n_points, summed.n_drawn) == (binned.n_points, binned.n_drawn) == mr.region_stats(pts, grid)
        if colors == "categorical" and kind == "color":
            np.testing.assert_array_equal(summed.dominant, binned.dominant)
            for k in range(5):  # and each category on its own
                in_k = pts.colors.codes == k
                per_k = _hist(pts, grid, in_k)
                assert (summed.counts >= per_k).all() and per_k.sum() == in_k[_inside(pts, grid)].sum()
        if colors == "continuous" and kind == "color":
            np.testing.assert_allclose(summed.mean, binned.mean, rtol=1e-6, equal_nan=True)
            valid = ~np.isnan(pts.colors.values)
            sums = np.histogram2d(
                pts.y[valid].astype(float), pts.x[valid].astype(float), weights=pts.colors.values[valid].astype(float),
                bins=[np.linspace(grid.y0, grid.y1, grid.height + 1), np.linspace(grid.x0, grid.x1, grid.width + 1)],
            )[0]  # fmt: skip
            n_valid = _hist(pts, grid, valid)
            with np.errstate(invalid="ignore"):
                np.testing.assert_allclose(summed.mean, sums / n_valid, rtol=1e-5, atol=1e-6, equal_nan=True)
        if kind == "density":
            np.testing.assert_allclose(summed.ratio, binned.ratio, rtol=1e-6)


def _inside(points: MapPoints, vp: mr.Viewport) -> np.ndarray:
    return (points.x >= vp.x0) & (points.x <= vp.x1) & (points.y >= vp.y0) & (points.y <= vp.y1)


def test_a_wide_zoom_of_a_large_view_never_bins_its_points(cells_from, monkeypatch):
    pts = _view("categorical")
    cells_from(1000)
    mr.prepare(pts)  # the tables are built ahead of the first zoom, as the server's warm-up does

    def no_binning(*args, **kwargs):
        raise AssertionError("a wide zoom binned the view's points")

    monkeypatch.setattr(mr, "_counts", no_binning)
    monkeypatch.setattr(mr, "_canvas", no_binning)
    for region in WIDE:
        render = mr.render_map(pts, mr.Viewport(*region), budget=500)
        assert render.mode == "image" and render.image_viewport != render.viewport
        info = mr.pixel_info(render, region[0] + 0.2, region[2] + 0.1)
        col, row = render.image_viewport.pixel_of(region[0] + 0.2, region[2] + 0.1)
        assert info["count"] == render.counts[row, col]  # a hover reads the image's own grid
    deep = mr.Viewport(-0.05, 0.05, -0.03, 0.03, 200, 120)  # pixels under three cells: binned (or points)
    with pytest.raises(AssertionError, match="binned"):
        mr.render_map(pts, deep, budget=0)


def test_a_region_of_fewer_points_than_the_threshold_is_binned_on_the_grid_asked_for(cells_from):
    pts = _view("categorical")
    cells_from(10 * pts.size)
    vp = mr.Viewport(*WIDE[0])
    render = mr.render_map(pts, vp, budget=0)
    assert render.image_viewport == vp and render.grid == vp
    assert map_cache().get("map_cells", id(pts)) is None  # no tables built for it


@pytest.mark.parametrize("axes", [(1, 2, 3), (2,), (1, 3)])
@pytest.mark.parametrize("filtered", [False, True])
def test_region_counts_in_molecule_order_match_a_scan_of_the_views_points(axes, filtered):
    keep = np.random.default_rng(5).uniform(size=N) < 0.4 if filtered else None
    pts = _view("categorical", axes=axes, keep=keep, seed=2)
    rng = np.random.default_rng(3)
    for _ in range(6):
        x0, y0 = rng.uniform(-2.8, 1.0), rng.uniform(-1.4, 0.5)
        vp = mr.Viewport(x0, x0 + rng.uniform(0.01, 2.0), y0, y0 + rng.uniform(0.01, 1.0), 10, 10)
        inside = _inside(pts, vp)
        expected = (int(inside.sum()), np.unique(pts.rows[inside]).size)
        assert map_cells.region_counts(pts, vp.x0, vp.x1, vp.y0, vp.y1) == expected
        assert mr.region_stats(pts, vp) == expected
