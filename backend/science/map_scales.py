"""What the map's colours stand for: point density relative to a uniform sphere, and the value
ranges that its colour scales span.

The services' map image and density grid and the dashboard's figures all take their numbers
from here, so a colour means the same thing on every surface.
"""

from __future__ import annotations

import numpy as np

from orientscope.science.sphere import SQRT2

# The Mollweide ellipse (semi-axes 2√2 and √2) has the sphere's area, 4π: the projection is equal-area.
ELLIPSE_AREA = np.pi * 2 * SQRT2 * SQRT2
# The top of a density colour scale is at least twice the uniform density: a near-uniform set then
# sits at mid-scale or below, where a lower floor would stretch its small excesses over the whole
# scale and make it look as concentrated as an aligned set.
DENSITY_CEILING_FLOOR = 2.0
DENSITY_CEILING_PERCENTILE = 99.5


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
