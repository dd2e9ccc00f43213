"""A wide region of a large view, aggregated from cell sums instead of its points.

Binning a near-whole-sky region of a 10M-molecule view reads some 25M points at every zoom. Past
:data:`CELL_PATH_MIN_POINTS` points in the region, the map's image is instead summed from the view's
summed-area tables on the fixed cell grid of :mod:`orientscope.science.cell_sums` (built once per view,
kept in the map cache), on a pixel grid whose edges fall on cell edges (:func:`cell_viewport`): a region
around the one asked for, at most a pixel larger on each side, with pixels within a sixth of the asked size. Its
pixels hold exactly what binning the points onto that grid gives (:mod:`orientscope.services.map_raster`
draws the same grid with datashader below the threshold, and the tests compare the two).

The points and distinct molecules in a region (:func:`region_counts`) are counted in one pass over the
map data in molecule order, not over the view's banded points, whose molecules come in random order:
at 10M molecules 20-40 ms instead of 300-900 ms of scattered writes to a per-molecule flag array.
"""

from __future__ import annotations

import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from orientscope.science.cell_sums import NX, NY, CellGrid, CellSums, aligned_grid, cell_sums, compile_kernels
from orientscope.services.bytecache import map_cache
from orientscope.services.map_view import MapPoints

CELL_PATH_MIN_POINTS = 1_000_000  # fewer points in a region are binned directly, in a few milliseconds
CACHE_SHARE = 0.25  # tables larger than this share of the map cache are not built (e.g. many group colours)
_build_lock = threading.Lock()
_COUNT_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="map-count")  # halves of the molecules


def has_cell_sums(points: MapPoints) -> bool:
    """Whether a view is drawn from cell sums where it can be: enough points, and tables the cache can keep."""
    return points.size >= CELL_PATH_MIN_POINTS and _table_bytes(points) <= CACHE_SHARE * map_cache().max_bytes


def cell_grid(
    points: MapPoints, region: tuple[float, float, float, float], width: int, height: int, budget: int
) -> CellGrid | None:
    """The cell-aligned pixel grid that draws ``region`` (x0, x1, y0, y1) at ``width`` × ``height`` pixels from
    the view's cell sums, or None where the region is better binned directly or drawn as points: a view
    without cell sums, pixels under three cells a side, or at most ``max(budget, CELL_PATH_MIN_POINTS)``
    points in the grid's region (read from the tables: four look-ups)."""
    if not has_cell_sums(points):
        return None
    grid = aligned_grid(*region, width, height)
    if grid is None or view_cell_sums(points).total(grid) <= max(budget, CELL_PATH_MIN_POINTS):
        return None
    return grid


def _channels(points: MapPoints) -> int:
    c = points.colors
    return len(c.colors) if c.kind == "categorical" else 2


def _table_bytes(points: MapPoints) -> int:
    cells = (NX + 1) * (NY + 1)
    return cells * (4 * _channels(points) + (8 if points.colors.kind != "categorical" else 0))


def view_cell_sums(points: MapPoints) -> CellSums:
    """The summed-area tables of a view's points by its colours (per category, or count and value sum),
    built once per view (about a second at 30M points) and kept in the map cache."""
    key = id(points)
    hit = map_cache().get("map_cells", key)
    if hit is not None and hit[0]() is points:  # the id of a dropped view may be reused
        return hit[1]
    with _build_lock:  # one build at a time: two requests of a new view wait for the same tables
        hit = map_cache().get("map_cells", key)
        if hit is not None and hit[0]() is points:
            return hit[1]
        c = points.colors
        if c.kind == "categorical":
            sums = cell_sums(points.x, points.y, codes=c.codes, n_codes=_channels(points))
        else:
            sums = cell_sums(points.x, points.y, values=c.values)
        map_cache().put("map_cells", key, (weakref.ref(points), sums), size=sums.nbytes)
        return sums


def region_counts(points: MapPoints, x0: float, x1: float, y0: float, y1: float) -> tuple[int, int] | None:
    """(points with x0 <= x <= x1 and y0 <= y <= y1, distinct molecules among them) of a view resolved from
    its map data (shown axes and molecule filter known), counted in molecule order; None for other views."""
    geo = points.geometry
    if geo is None or geo.x is not points.x or geo.md is not points.md:
        return None
    md = points.md
    shown = np.array([a in geo.axes for a in (1, 2, 3)], np.int64)
    keep = np.zeros(0, np.bool_) if geo.mask is None else geo.mask
    x, y = np.asarray(md.x).reshape(-1), np.asarray(md.y).reshape(-1)
    bounds = (float(x0), float(x1), float(y0), float(y1))
    half = md.n_molecules // 2
    parts = list(
        _COUNT_POOL.map(
            lambda span: _count_by_molecule(x, y, shown, keep, *bounds, *span), ((0, half), (half, md.n_molecules))
        )
    )  # the kernel releases the GIL: two threads, each half the molecules
    n_points, n_rows = (sum(int(p[i]) for p in parts) for i in (0, 1))
    return n_points, n_rows


@numba.njit(cache=True, nogil=True)
def _count_by_molecule(x, y, shown, keep, x0, x1, y0, y1, start, stop):  # pragma: no cover - compiled
    """Over molecules [start, stop): x, y : (3n,) the map's molecule-major coordinates; shown : (3,) 0/1 per
    axis; keep : (n,) bool or empty. Branch-free inner test: the comparisons are false for NaN, as in a scan."""
    n_points, n_rows = 0, 0
    for i in range(start, stop):
        hits = 0
        for j in range(3):
            a = 3 * i + j
            hits += shown[j] * ((x[a] >= x0) & (x[a] <= x1) & (y[a] >= y0) & (y[a] <= y1))
        if keep.size and not keep[i]:
            hits = 0
        n_points += hits
        n_rows += hits > 0
    return n_points, n_rows


def warm_up() -> None:
    """Compile this module's kernels on a few points (a full table would cost a second and 100 MB)."""
    compile_kernels()
    x = np.zeros(6, np.float32)
    for keep in (np.zeros(0, np.bool_), np.ones(2, np.bool_)):
        _count_by_molecule(x, x, np.ones(3, np.int64), keep, 0.0, 1.0, 0.0, 1.0, 0, 2)
