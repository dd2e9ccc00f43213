"""Which points lie inside a shape drawn on a plane (a lasso on the map)."""

from __future__ import annotations

import numpy as np


def points_in_polygon(x: np.ndarray, y: np.ndarray, polygon_x: np.ndarray, polygon_y: np.ndarray) -> np.ndarray:
    """(m,) bool: whether each point (x, y), (m,) each, lies inside the polygon of vertices
    (polygon_x, polygon_y), (k,) each, closed implicitly; k >= 3.

    The even-odd rule (a ray from the point crosses the boundary an odd number of times), so a
    self-crossing lasso leaves out the parts it wraps twice, as plotly.js draws it. A point exactly
    on an edge may fall either way.
    """
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    px, py = np.asarray(polygon_x, np.float64), np.asarray(polygon_y, np.float64)
    if px.shape != py.shape or px.ndim != 1 or px.size < 3:
        raise ValueError(f"a polygon needs matching x and y of at least 3 vertices, got {px.shape} and {py.shape}")
    inside = np.zeros(x.shape, bool)
    for xi, yi, xj, yj in zip(px, py, np.roll(px, 1), np.roll(py, 1), strict=True):
        if yi == yj:  # a horizontal edge never crosses a horizontal ray
            continue
        spans = (yi > y) != (yj > y)
        crossing_x = xi + (y - yi) * (xj - xi) / (yj - yi)
        inside ^= spans & (x < crossing_x)
    return inside
