"""How large a drawn point of the map is: one rule for every surface that draws the map's points.

A point must stay visible whatever the number shown: three molecules on a 900-pixel map drawn as 1-pixel
dots of a faint colour cannot be found, and 30,000 drawn as 9-pixel discs hide each other. A point's
diameter is a share of the mean spacing of the points on the plot, ``sqrt(area / n)``, between
:data:`MIN_PX` and :data:`MAX_PX`; from :data:`OUTLINE_FROM_PX` on it gets a dark outline, so that it stands
out from the white sphere and from its neighbours. The vector points (the dashboard's points mode, the scatter
view, the sphere) take their marker size from :func:`marker_px`; the server's image (its sparse regions, the
notebook card's map, ``Report.map_png``, a SMARTS highlight over a full map) stamps each non-empty pixel as
a disc of that diameter (:func:`spread_markers`), where ``n`` counts the non-empty pixels (the markers drawn).
"""

from __future__ import annotations

import numba
import numpy as np

SPACING_SHARE = 0.45  # a marker's diameter over the points' mean spacing: apart, yet large enough to find
MIN_PX = 1.0  # an image's dense regions keep their pixels as they are
MIN_VECTOR_PX = 2.0  # plotly.js draws a WebGL marker under 2 px as nothing
MAX_PX = 8.0
OUTLINE_FROM_PX = 5.0
OUTLINE_RGBA = (40, 40, 40, 230)
SPREAD_MIN_ALPHA = 220  # a stamped marker is near opaque: a single point's pixel was shaded at MIN_ALPHA (faint)


def marker_px(n_points: int, width: float, height: float, floor: float = MIN_PX) -> float:
    """Diameter in pixels of each of ``n_points`` points shown on ``width`` × ``height`` pixels (rounded to a
    tenth): :data:`SPACING_SHARE` of their mean spacing, between ``floor`` and :data:`MAX_PX`."""
    spacing = np.sqrt(max(float(width) * float(height), 1.0) / max(int(n_points), 1))
    return round(float(np.clip(SPACING_SHARE * spacing, floor, MAX_PX)), 1)


def outlined(diameter_px: float) -> bool:
    """Whether markers of this diameter get a dark outline (:data:`OUTLINE_FROM_PX` and wider)."""
    return diameter_px >= OUTLINE_FROM_PX


def vector_marker(n_points: int, width: float, height: float) -> dict:
    """A plotly marker's size (and outline, where :func:`outlined`) for ``n_points`` points on the plot."""
    size = marker_px(n_points, width, height, MIN_VECTOR_PX)
    marker: dict = {"size": size}
    if outlined(size):
        r, g, b, a = OUTLINE_RGBA
        marker["line"] = {"width": 1, "color": f"rgba({r},{g},{b},{a / 255:.2f})"}
    return marker


def spread_markers(rgba: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """An image whose every non-empty pixel is stamped as a marker of :func:`marker_px`'s diameter for the
    number of non-empty pixels, outlined where :func:`outlined`: ``rgba`` itself when the markers are a pixel.

    rgba : (h, w, 4) uint8, top row first; counts : (h, w) points per pixel, rows from the bottom (the image's
    aggregate). Markers are stamped from the least to the most crowded pixel, so a dense one stays on top;
    each at least :data:`SPREAD_MIN_ALPHA` opaque. The aggregates (what a hover reads) are left as they were.
    """
    h, w = counts.shape
    diameter = marker_px(np.count_nonzero(counts), w, h)  # a dense image (most maps) stops here, in a fraction of a ms
    radius = int((diameter - 1) // 2)
    if radius < 1 or not np.any(counts):
        return rgba
    top_first = np.asarray(counts)[::-1].reshape(-1)  # in the image's row order
    filled = np.flatnonzero(top_first)
    order = filled[np.argsort(top_first[filled], kind="stable")]
    ring = 1 if outlined(diameter) else 0
    return _stamp(rgba, order.astype(np.int64), radius, ring, np.array(OUTLINE_RGBA, np.uint8), SPREAD_MIN_ALPHA)


@numba.njit(cache=True, nogil=True)
def _stamp(rgba, order, radius, ring, outline, min_alpha):  # pragma: no cover - compiled
    h, w, _ = rgba.shape
    out = np.zeros_like(rgba)
    outer = radius + ring
    for k in range(order.size):
        y0, x0 = order[k] // w, order[k] % w
        color = rgba[y0, x0].copy()
        color[3] = max(color[3], min_alpha)
        for dy in range(-outer, outer + 1):
            y = y0 + dy
            if y < 0 or y >= h:
                continue
            for dx in range(-outer, outer + 1):
                x = x0 + dx
                if x < 0 or x >= w:
                    continue
                d2 = dx * dx + dy * dy
                if d2 <= radius * radius + radius:  # a disc of the marker's radius (rounded as a pixel circle)
                    for c in range(4):
                        out[y, x, c] = color[c]
                elif ring and d2 <= outer * outer + outer:
                    for c in range(4):
                        out[y, x, c] = outline[c]
    return out


def warm_up() -> None:
    """Compile the stamp kernel on a tiny image."""
    counts = np.zeros((8, 8), np.uint32)
    counts[4, 4] = 1
    spread_markers(np.zeros((8, 8, 4), np.uint8), counts)
