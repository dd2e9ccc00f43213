"""What the map's colours stand for: point density relative to a uniform sphere, and the value
ranges that its colour scales span.

The services' map image and density grid and the dashboard's figures all take their numbers
from here, so a colour means the same thing on every surface.
"""

from __future__ import annotations

import numba
import numpy as np

from orientscope.science.sphere import SQRT2

# The Mollweide ellipse (semi-axes 2√2 and √2) has the sphere's area, 4π: the projection is equal-area.
ELLIPSE_AREA = np.pi * 2 * SQRT2 * SQRT2
# The top of a density colour scale is at least twice the uniform density: a near-uniform set then
# sits at mid-scale or below, where a lower floor would stretch its small excesses over the whole
# scale and make it look as concentrated as an aligned set.
DENSITY_CEILING_FLOOR = 2.0
DENSITY_CEILING_PERCENTILE = 99.5


def grid_counts(
    x: np.ndarray,
    y: np.ndarray,
    x_edges: np.ndarray,
    y_edges: np.ndarray,
    rows: np.ndarray | None = None,
    axes: np.ndarray | None = None,
) -> np.ndarray:
    """(ny, nx) int64 points per cell of the equal-width edges (from ``numpy.linspace``), by
    ``numpy.histogram2d``'s rule: cells closed on the left and bottom, the last also on the right and top;
    NaN and points outside the edges are in no cell.

    x, y : the points' map positions; or, with ``rows`` (m,) and ``axes`` (m,) (1..3), every molecule's
    three positions (n, 3), of which the points (row, axis) are counted, without gathering them first.

    One compiled pass without temporaries: at 30M points it takes a fraction of a second, where
    numpy's binning (and the gather before it) allocated copies per axis and took seconds. Each point's
    cell is guessed by arithmetic and corrected against the edges themselves, as numpy's 1-D histogram does.
    """
    counts = np.zeros((y_edges.size - 1, x_edges.size - 1), np.int64)
    xe, ye = np.asarray(x_edges, np.float64), np.asarray(y_edges, np.float64)
    flat_x, flat_y = np.ascontiguousarray(x).reshape(-1), np.ascontiguousarray(y).reshape(-1)
    if rows is None:
        _count_cells(flat_x, flat_y, False, _NO_KEYS, _NO_KEYS, xe, ye, counts)
    else:
        _count_cells(flat_x, flat_y, True, np.asarray(rows), np.asarray(axes), xe, ye, counts)
    return counts


@numba.njit(inline="always")
def _cell_of(v, edges, n):  # pragma: no cover - compiled
    """Cell of ``v`` among ``n`` equal-width cells of ``edges``, -1 outside (or NaN)."""
    lo, hi = edges[0], edges[n]
    if not (v >= lo and v <= hi):
        return -1
    i = min(int((v - lo) * (n / (hi - lo))), n - 1)
    if v < edges[i]:
        i -= 1
    if v >= edges[i + 1] and i < n - 1:
        i += 1
    return i


_NO_KEYS = np.zeros(0, np.int32)


@numba.njit(cache=True, nogil=True)
def _count_cells(flat_x, flat_y, keyed, rows, axes, x_edges, y_edges, counts):  # pragma: no cover - compiled
    """Count point p of each k: p = k, or with ``keyed`` the point (rows[k], axes[k]) of (n, 3) positions."""
    ny, nx = counts.shape
    for k in range(rows.size if keyed else flat_x.size):
        p = 3 * np.int64(rows[k]) + np.int64(axes[k]) - 1 if keyed else k  # science.nearest_point.point_keys
        i = _cell_of(np.float64(flat_x[p]), x_edges, nx)
        if i < 0:
            continue
        j = _cell_of(np.float64(flat_y[p]), y_edges, ny)
        if j >= 0:
            counts[j, i] += 1


def density_ratio(
    counts: np.ndarray, x_centers: np.ndarray, y_centers: np.ndarray, cell_area: float, n_points: int
) -> np.ndarray:
    """Points per cell of the Mollweide plane over the number a uniform sphere would put there.

    counts : (ny, nx) points per cell; x_centers : (nx,), y_centers : (ny,) cell centres (Mollweide units);
    cell_area : one cell's area; n_points : all points of the map (inside the grid or not).
    Returns (ny, nx) float32, 1 = uniform, NaN for cells whose centre lies outside the ellipse.
    """
    expected = max(n_points, 1) * cell_area / ELLIPSE_AREA
    xc, yc = np.asarray(x_centers), np.asarray(y_centers)
    inside = (xc[None, :] / (2 * SQRT2)) ** 2 + (yc[:, None] / SQRT2) ** 2 <= 1.0
    return np.where(inside, counts / expected, np.nan).astype(np.float32)


def density_ceiling(*ratios: np.ndarray) -> float:
    """One top for the colour scale of density ratios shown together: the 99.5th percentile of all
    their finite values, at least :data:`DENSITY_CEILING_FLOOR` (2 × uniform)."""
    finite = [np.asarray(r, np.float32)[np.isfinite(r)] for r in ratios]
    values = np.concatenate(finite) if finite else np.zeros(0, np.float32)
    top = float(np.percentile(values, DENSITY_CEILING_PERCENTILE)) if values.size else 1.0
    return max(top, DENSITY_CEILING_FLOOR)


def robust_range(values: np.ndarray) -> tuple[float, float]:
    """(lo, hi): the 1st and 99th percentile of the finite ``values`` (m,), so that a few outliers do not
    squeeze every other value into one colour; (0, 1) without any, hi = lo + 1 when they are equal."""
    values = np.asarray(values)
    finite = values[np.isfinite(values)]
    lo, hi = (float(v) for v in np.percentile(finite, [1, 99])) if finite.size else (0.0, 1.0)
    return lo, (hi if hi > lo else lo + 1.0)
