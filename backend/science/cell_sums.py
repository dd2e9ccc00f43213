"""Exact sums of map points over rectangles of one fixed cell grid on the Mollweide plane.

The grid covers the whole map, x in [-2√2, 2√2] and y in [-√2, √2], with :data:`NX` × :data:`NY`
square cells, each closed on its left and bottom edge (the last column and row also on the right and
top edge, as in ``numpy.histogram2d``). Its summed-area table (:func:`cell_sums`) gives the point count
per category, or the count and value sum, of any rectangle of whole cells in four look-ups. An image
whose pixel edges fall on cell edges (:func:`aligned_grid`) is then aggregated without a pass over its
points, and its pixels hold exactly what binning the points onto that image gives; a point within
rounding error of a cell edge may fall on either side of it, as with any binning.

At 4096 × 2048 cells the table holds 32 MB per channel, whatever the number of points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from orientscope.science.sphere import SQRT2

GRID_X0, GRID_Y0 = -2 * SQRT2, -SQRT2
NX, NY = 4096, 2048
CELL = 4 * SQRT2 / NX  # map units, the same in x and y
EDGE_SLACK = 1e-6  # map units: a float32 point this far beyond the map's edge (rounding) is in its edge cell


@dataclass(frozen=True)
class CellGrid:
    """A pixel grid whose pixel edges fall on cell edges: pixel (row r from the bottom, column c) holds the
    cells [row0 + r·my, row0 + (r + 1)·my) × [col0 + c·mx, col0 + (c + 1)·mx) (cells beyond the map are empty)."""

    col0: int
    row0: int
    width: int
    height: int
    mx: int
    my: int

    @property
    def extent(self) -> tuple[float, float, float, float]:
        """(x0, x1, y0, y1) map units of the grid's region."""
        return (
            GRID_X0 + self.col0 * CELL,
            GRID_X0 + (self.col0 + self.width * self.mx) * CELL,
            GRID_Y0 + self.row0 * CELL,
            GRID_Y0 + (self.row0 + self.height * self.my) * CELL,
        )


def aligned_grid(
    x0: float, x1: float, y0: float, y1: float, width: int, height: int, min_cells: int = 3
) -> CellGrid | None:
    """The grid of whole cells that covers the region [x0, x1] × [y0, y1] with pixels nearest in size to its
    ``width`` × ``height`` pixels': each pixel ``round(pixel size / CELL)`` cells a side (halves up). None where
    that is under ``min_cells`` cells a side, as the image's pixels would then differ much from those asked
    for: at ``min_cells`` = 3 the image has 5/6 to 7/6 as many pixels a side as asked (rounding down, as
    before 2026-12-02, gave up to 4/3 as many, and a wide zoom's PNG a quarter more bytes to decode)."""
    mx, my = _nearest_whole((x1 - x0) / width / CELL), _nearest_whole((y1 - y0) / height / CELL)
    if min(mx, my) < min_cells:
        return None
    col0, row0 = math.floor((x0 - GRID_X0) / CELL), math.floor((y0 - GRID_Y0) / CELL)
    w = max(1, math.ceil(((x1 - GRID_X0) / CELL - col0) / mx))
    h = max(1, math.ceil(((y1 - GRID_Y0) / CELL - row0) / my))
    return CellGrid(col0, row0, w, h, mx, my)


def _nearest_whole(v: float) -> int:
    return math.floor(v + 0.5)


@numba.njit(inline="always")
def _cell(v, lo, n):  # pragma: no cover - compiled
    """Cell index of coordinate ``v`` on an axis of ``n`` cells from ``lo``, -1 outside (or NaN)."""
    if not v == v:
        return -1
    i = math.floor((v - lo) / CELL)
    if 0 <= i < n:
        return i
    if i == n and v <= lo + n * CELL + EDGE_SLACK:
        return n - 1
    if i == -1 and v >= lo - EDGE_SLACK:
        return 0
    return -1


@numba.njit(cache=True, nogil=True)
def _bin_points(x, y, codes, values, offset, counts, sums):  # pragma: no cover - compiled
    ny, nx, _ = counts.shape
    for i in range(x.size):
        c, r = _cell(x[i], GRID_X0, nx), _cell(y[i], GRID_Y0, ny)
        if c < 0 or r < 0:
            continue
        counts[r, c, codes[i] if codes.size else 0] += 1
        if values.size:
            v = values[i]
            if v == v:
                counts[r, c, 1] += 1
                sums[r, c] += v - offset


@dataclass(frozen=True, eq=False)
class CellSums:
    """Summed-area tables of points on the grid: ``counts`` (NY + 1, NX + 1, k) uint32, the points per
    channel in cells [0, row) × [0, col); ``sums`` (NY + 1, NX + 1) float64 the same of value − ``offset``
    (the values' mean: prefix sums stay small, so differences of them lose little precision), or None."""

    counts: np.ndarray
    sums: np.ndarray | None
    offset: float

    @property
    def nbytes(self) -> int:
        return self.counts.nbytes + (0 if self.sums is None else self.sums.nbytes)

    def block_sums(self, grid: CellGrid) -> tuple[np.ndarray, np.ndarray | None]:
        """(counts (h, w, k) uint32, value sums (h, w) float64 or None) per pixel of ``grid``, rows from the bottom.

        Counts are exact: uint32 differences wrap, and every true count is below 2**32.
        """
        rows, cols = _edges(grid)
        counts = _rectangles(self.counts, rows, cols)
        if self.sums is None:
            return counts, None
        sums = _rectangles(self.sums[:, :, None], rows, cols)[:, :, 0]
        return counts, sums + self.offset * counts[..., 1]

    def total(self, grid: CellGrid) -> int:
        """Points in the whole region of ``grid`` (every channel of a categorical table, else channel 0)."""
        rows, cols = _edges(grid)
        whole = _rectangles(self.counts, rows[[0, -1]], cols[[0, -1]])[0, 0]
        return int(whole[0] if self.sums is not None else whole.sum(dtype=np.int64))


def _edges(grid: CellGrid) -> tuple[np.ndarray, np.ndarray]:
    """(h + 1,), (w + 1,) int64 table indices of a grid's pixel edges (clipped to the map: no points beyond)."""
    rows = np.clip(grid.row0 + grid.my * np.arange(grid.height + 1), 0, NY)
    cols = np.clip(grid.col0 + grid.mx * np.arange(grid.width + 1), 0, NX)
    return rows, cols


@numba.njit(cache=True, nogil=True)
def _rectangles(table, rows, cols):  # pragma: no cover - compiled
    """(h, w, k) sums of a summed-area table (H, W, k) over the rectangles between consecutive ``rows`` (h + 1,)
    and ``cols`` (w + 1,): four look-ups per pixel and channel."""
    h, w, k = rows.size - 1, cols.size - 1, table.shape[2]
    out = np.zeros((h, w, k), table.dtype)
    for i in range(h):
        r0, r1 = rows[i], rows[i + 1]
        for j in range(w):
            c0, c1 = cols[j], cols[j + 1]
            for m in range(k):
                out[i, j, m] = table[r1, c1, m] - table[r0, c1, m] - table[r1, c0, m] + table[r0, c0, m]
    return out


def cell_sums(
    x: np.ndarray, y: np.ndarray, codes: np.ndarray | None = None, n_codes: int = 1, values: np.ndarray | None = None
) -> CellSums:
    """The summed-area tables of points (x, y) (m,) map units: counts per category ``codes`` (m,) in
    [0, n_codes), or, with ``values`` (m,) (NaN: no value), channels (points, points with a value) and the
    values' sum. Points beyond the map (or NaN) are left out."""
    if codes is not None and values is not None:
        raise ValueError("cell_sums takes category codes or values, not both")
    k = 2 if values is not None else (n_codes if codes is not None else 1)
    offset = 0.0
    if values is not None and np.isfinite(values).any():
        offset = float(np.nanmean(values, dtype=np.float64))
    counts = np.zeros((NY + 1, NX + 1, k), np.uint32)
    sums = None if values is None else np.zeros((NY + 1, NX + 1), np.float64)
    _bin_points(
        x, y, np.zeros(0, np.uint8) if codes is None else codes, np.zeros(0, np.float32) if values is None else values,
        offset, counts[1:, 1:], np.zeros((0, 0)) if sums is None else sums[1:, 1:],
    )  # fmt: skip
    for table in (counts, sums):
        if table is not None:  # prefix sums in place along both axes (uint32 wraps; the totals fit)
            np.cumsum(table, axis=0, dtype=table.dtype, out=table)
            np.cumsum(table, axis=1, dtype=table.dtype, out=table)
    return CellSums(counts, sums, offset)


def compile_kernels() -> None:
    """Compile the binning kernel for every argument type :func:`cell_sums` passes, on tables of a few cells."""
    x = np.zeros(2, np.float32)
    for codes, values, k in ((np.zeros(2, np.uint8), np.zeros(0, np.float32), 1),
                             (np.zeros(0, np.uint8), np.zeros(2, np.float32), 2)):  # fmt: skip
        counts = np.zeros((3, 3, k), np.uint32)[1:, 1:]
        sums = np.zeros((3, 3))[1:, 1:] if values.size else np.zeros((0, 0))
        _bin_points(x, x, codes, values, 0.0, counts, sums)
    edges = np.arange(2, dtype=np.int64)
    _rectangles(np.zeros((2, 2, 1), np.uint32), edges, edges)
    _rectangles(np.zeros((2, 2))[:, :, None], edges, edges)  # as block_sums passes the value sums
