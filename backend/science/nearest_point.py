"""The map's point nearest to a click, under one tie rule.

Distances are in pixels: offsets are divided by a pixel's width and height in map units, so the
search radius is a circle on screen. A point exactly at the radius counts.

Tie rule: among equally near points the one with the lowest key wins, a point's key being
3 × molecule index + axis − 1 (:func:`point_keys`, the point's place in the map's molecule-major
arrays): the lowest molecule index, then that molecule's lowest axis. The first paint's sphere
(``frontend_assets/first_paint.js``, ``nearestPoint``) follows the same rule; tests/science feeds
both the same ties.
"""

from __future__ import annotations

import numba
import numpy as np

_IDENTITY = np.zeros(0, np.int64)


def point_keys(rows: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """(m,) int64 key of each point (molecule index ``rows`` (m,), axis 1..3 ``axes`` (m,)): 3·row + axis − 1."""
    return np.asarray(rows, np.int64) * 3 + (np.asarray(axes, np.int64) - 1)


def nearest_point(
    x: np.ndarray,
    y: np.ndarray,
    rows: np.ndarray,
    axes: np.ndarray,
    click: tuple[float, float],
    pixel_size: tuple[float, float],
    radius_px: float,
    runs: np.ndarray | None = None,
    order: np.ndarray | None = None,
) -> tuple[int, float] | None:
    """(index, distance in pixels) of the point nearest to ``click`` within ``radius_px``; None if none.

    x, y : (m,) map positions; rows, axes : the points' molecule indices and axes (1..3), which
    break ties (module docstring); pixel_size : (width, height) of a pixel in map units.
    runs : (k, 2) [start, end) ranges of x/y to search (default: all); order : (m,) index of each
    x/y entry into ``rows``/``axes`` when x/y are a reordered copy (default: the same order).
    The index returned is into ``rows``/``axes``.
    """
    runs = np.array([[0, np.size(x)]], np.int64) if runs is None else np.asarray(runs, np.int64).reshape(-1, 2)
    order = _IDENTITY if order is None else order
    cx, cy = (float(v) for v in click)
    sx, sy = (float(v) for v in pixel_size)
    best, d2 = _nearest(x, y, rows, axes, order, runs, cx, cy, sx, sy, float(radius_px))
    return None if best < 0 else (int(best), float(np.sqrt(d2)))


@numba.njit(cache=True, nogil=True)
def _nearest(x, y, rows, axes, order, runs, cx, cy, sx, sy, radius):  # pragma: no cover - compiled
    best, best_d2, best_key = -1, radius * radius, np.int64(0)
    for r in range(runs.shape[0]):
        for i in range(runs[r, 0], runs[r, 1]):
            dx = (x[i] - cx) / sx
            if dx > radius or dx < -radius:
                continue
            dy = (y[i] - cy) / sy
            d2 = dx * dx + dy * dy
            if d2 > best_d2:
                continue
            j = order[i] if order.size else i
            key = np.int64(rows[j]) * 3 + np.int64(axes[j]) - 1
            if d2 < best_d2 or best < 0 or key < best_key:
                best, best_d2, best_key = j, d2, key
    return best, best_d2
