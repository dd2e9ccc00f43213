"""The density view's heatmaps as what the first paint draws before plotly.js has loaded: an image and a grid.

The landing page's density view (the dataset's density beside its control's) is two plotly heatmaps of
server-binned ratios to uniform (``mapfigure.density_pair_json``). The first paint (``app/first_paint.py``)
shows each as a PNG of its cells, coloured as plotly.js colours them (the same Cividis stops, 0 to the
shared ``zmax``, the cells outside the ellipse left transparent), and carries the cells' values, so that its
hover names the density of the cell under the cursor as Dash's map then does: both by the same code
(``frontend_assets/map_component.js`` densityText).
"""

from __future__ import annotations

import base64
from typing import NamedTuple

import numpy as np
from plotly.colors import hex_to_rgb

from orientscope.core.palette import CIVIDIS
from orientscope.services.map_raster import png_rgba

_STOPS = np.linspace(0.0, 1.0, len(CIVIDIS))
_RGB = np.array([hex_to_rgb(c) for c in CIVIDIS], np.float64)  # (10, 3)
HOVER_DECIMALS = 2  # the hover shows the cell's density to 2 decimals (map_component.js densityText)


class DensityImage(NamedTuple):
    """A heatmap trace as an image: its PNG as a data URL, its extent (x0, x1, y0, y1, map units) and its
    cells for hover ({"x0", "dx", "y0", "dy", "nx", "ny", "z": row-major from the bottom row, null outside})."""

    source: str
    extent: tuple[float, float, float, float]
    grid: dict


def payload_array(spec) -> np.ndarray:
    """An array of a figure payload: plotly's typed-array spec ({"dtype", "bdata"[, "shape"]}) or a nested
    list (None for NaN), as float64."""
    if isinstance(spec, dict):
        values = np.frombuffer(base64.b64decode(spec["bdata"]), np.dtype(spec["dtype"]))
        shape = spec.get("shape")
        if shape:
            values = values.reshape([int(s) for s in str(shape).split(",")])
        return values.astype(np.float64)
    return np.array(spec, dtype=np.float64)  # None -> NaN


def heatmap_rgba(z: np.ndarray, zmax: float) -> np.ndarray:
    """(ny, nx, 4) uint8 colours of cell values (ny, nx) on the Cividis scale from 0 to ``zmax``, bottom row first;
    NaN cells transparent (plotly.js draws no cell for them)."""
    z = np.asarray(z, np.float64)
    t = np.clip(np.nan_to_num(z, nan=0.0) / max(float(zmax), 1e-12), 0.0, 1.0)
    rgba = np.empty((*z.shape, 4), np.uint8)
    for k in range(3):  # plotly.js interpolates a colour scale's stops linearly in RGB
        rgba[..., k] = np.round(np.interp(t, _STOPS, _RGB[:, k]))
    rgba[..., 3] = np.where(np.isfinite(z), 255, 0)
    return rgba


def density_image(heat: dict) -> DensityImage:
    """The image and hover grid of a density figure's heatmap trace (its x and y cell centres in map units)."""
    x, y, z = (payload_array(heat[k]) for k in ("x", "y", "z"))
    dx, dy = float(x[1] - x[0]), float(y[1] - y[0])
    x0, y0 = float(x[0]) - dx / 2, float(y[0]) - dy / 2
    png = png_rgba(heatmap_rgba(z, float(heat["zmax"]))[::-1])  # PNG rows go top down
    source = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    cells = np.round(z, HOVER_DECIMALS).ravel()
    grid = {
        "x0": x0,
        "dx": dx,
        "y0": y0,
        "dy": dy,
        "nx": int(z.shape[1]),
        "ny": int(z.shape[0]),
        "z": [v if v == v else None for v in cells.tolist()],
    }
    return DensityImage(source, (x0, x0 + dx * z.shape[1], y0, y0 + dy * z.shape[0]), grid)
