"""What the map's renderer (``frontend_assets/map_draw.js``) draws of the plane views, as plain data: a paint.

A paint is made from the figure payloads the map's figure builders cache (``figures/mapfigure.py``): the flat map's
image or its points (canvas layers of one colour each, int16 map units with SVG's y down), the reference stars, the
legend, the region shown, and what its clicks and hover ask the REST API for; or the density view's two maps (their
cells as images, the cells' values for the hover words). The page's first paint, Dash's map store
(``app/panels.py`` map_outputs) and ``GET /api/datasets/{id}/map/paint`` all answer these.
"""

from __future__ import annotations

import numpy as np

from orientscope.app.density_paint import density_image, payload_array
from orientscope.core.numbers import format_number, is_number
from orientscope.core.palette import REFERENCE_STAR
from orientscope.figures.mapfigure import DEFAULT_VIEWPORT
from orientscope.figures.plots import DENSITY_POINTS_PX, MAP_RANGE_X, MAP_SCALE, typed_arrays
from orientscope.services.bytecache import nbytes, shared_cache
from orientscope.services.map_data import frame_lines
from orientscope.services.map_raster import Viewport


def title_of(payload: dict) -> str:
    title = payload["layout"].get("title", {})
    return title.get("text", "") if isinstance(title, dict) else str(title or "")


def _line(x: np.ndarray, y: np.ndarray) -> list:
    """A polyline in map units, SVG's y (down), whole units, NaN breaks as null: [[x, y] | null, ...]."""
    out = []
    for xi, yi in zip(x.tolist(), y.tolist(), strict=True):
        out.append(None if xi != xi or yi != yi else [round(xi * MAP_SCALE) + 0, round(-yi * MAP_SCALE) + 0])
    return out


_FRAME: list = []


def frame() -> dict:
    """The outline and graticule, as :func:`_line` polylines (the same on every first paint: built once)."""
    if not _FRAME:
        _FRAME.append({name: _line(*xy) for name, xy in frame_lines().items()})
    return _FRAME[0]


def meta_of(payload: dict) -> dict:
    return payload.get("layout", {}).get("meta", {}).get("map") or {}


def traces_of(payload: dict, kind: str) -> list[dict]:
    """A figure payload's traces of one kind (``trace.meta.kind``: "points", "highlight", "reference", ...)."""
    return [t for t in payload.get("data", []) if (t.get("meta") or {}).get("kind") == kind]


def settings_of(meta: dict, **extra) -> dict:
    """What first_paint.js's REST calls ask for (the interactive map's ``layout.meta.map`` alike)."""
    return {"view": meta["view"], "dataset": meta.get("dataset"), **extra}


def hook_of(meta: dict) -> dict:
    return {"mode": str(meta["mode"]), "drawn": int(meta["drawn"])}


def _image(payload: dict) -> dict | None:
    """The figure's image, map units, SVG's y (down); None for a points figure."""
    images = payload.get("layout", {}).get("images") or []
    if not images:
        return None
    im = images[0]
    return {"source": im["source"], "x": im["x"], "y": -im["y"], "width": im["sizex"], "height": im["sizey"]}


def _typed(values: np.ndarray) -> dict:
    """int16 map units as a typed-array spec ({"dtype": "i2", "bdata": base64}): a tenth of their JSON numbers."""
    return typed_arrays(np.round(values).astype(np.int16))


def _layer(trace: dict, kind: str) -> dict | None:
    """A points trace as the renderer's canvas layer: positions (map units, y down), one colour, the marker's
    size (px, a diameter), opacity and outline; ``ring`` for SMARTS matches drawn as open circles."""
    xs, ys = payload_array(trace.get("x", [])), payload_array(trace.get("y", []))
    keep = np.isfinite(xs) & np.isfinite(ys)
    if not keep.any():
        return None
    marker, line = trace.get("marker") or {}, (trace.get("marker") or {}).get("line") or {}
    color = marker.get("color")
    ring = color == "rgba(0,0,0,0)"
    return {
        "kind": kind, "x": _typed(xs[keep]), "y": _typed(-ys[keep]), "n": int(keep.sum()),
        "color": line.get("color") if ring else color, "size": float(marker.get("size", 4)),
        "opacity": float(marker.get("opacity", 1.0)), "stroke": line.get("color"),
        "stroke_width": float(line.get("width", 0) or 0), "ring": ring,
        "range": (trace.get("meta") or {}).get("range"),  # a continuous colour's bin (lo, hi; null: open)
    }  # fmt: skip


def _legend(payload: dict) -> dict:
    """The figure's legend as the renderer draws it: swatches (label, colour, marker kind) in trace order, and the
    continuous colour bar (title, colour stops, cmin, cmax) if one is shown."""
    items, bar = [], None
    for trace in payload.get("data", []):
        marker = trace.get("marker") or {}
        if marker.get("showscale") or trace.get("type") == "heatmap":
            scale = trace.get("colorscale") if trace.get("type") == "heatmap" else marker.get("colorscale")
            low = trace.get("zmin") if trace.get("type") == "heatmap" else marker.get("cmin")
            high = trace.get("zmax") if trace.get("type") == "heatmap" else marker.get("cmax")
            colorbar = trace.get("colorbar") or marker.get("colorbar") or {}
            stops = [c for _, c in scale] if scale and isinstance(scale[0], list | tuple) else list(scale or [])
            values = colorbar.get("tickvals") or [v for v in (low, high) if is_number(v)]
            texts = colorbar.get("ticktext") or [format_number(v, ".4g") for v in values]
            ticks = [{"value": float(v), "text": t} for v, t in zip(values, texts, strict=True)]
            title = (colorbar.get("title") or {}).get("text", "")
            bar = {"title": title, "colors": stops, "cmin": low, "cmax": high, "ticks": ticks}
        if trace.get("showlegend"):
            symbol = str(marker.get("symbol", "circle"))
            ring = symbol.endswith("-open") or marker.get("color") == "rgba(0,0,0,0)"
            color = (marker.get("line") or {}).get("color") if ring else marker.get("color")
            items.append({"label": trace.get("name", ""), "color": color, "symbol": "ring" if ring else symbol})
    return {"items": items, "colorbar": bar}


def _region(meta: dict) -> dict:
    vp = meta.get("viewport") or _grid_of(DEFAULT_VIEWPORT)
    return {k: vp[k] for k in ("x0", "x1", "y0", "y1")}


def _grid_of(vp: Viewport) -> dict:
    return {"x0": vp.x0, "x1": vp.x1, "y0": vp.y0, "y1": vp.y1, "width": vp.width, "height": vp.height}


def flat_paint(payload: dict) -> dict:
    """What the renderer draws of a flat map figure payload (image or points mode): the image or the points' canvas
    layers, the reference stars, the legend, the region shown and what its clicks and hover ask for."""
    meta = meta_of(payload)
    mode = meta.get("mode")
    layers = []
    if mode == "points":  # the points first, then the SMARTS matches over them
        for kind in ("points", "highlight"):
            layers += [layer for trace in traces_of(payload, kind) if (layer := _layer(trace, kind)) is not None]
    settings = settings_of(meta, query=meta["query"], kind=meta.get("kind"), scale=MAP_SCALE)
    if meta.get("grid"):  # the image's own pixel grid, on which a pick counts
        settings["grid"] = meta["grid"]
    return {
        "settings": settings, "hook": {**hook_of(meta), "token": str(meta.get("token", ""))},
        "title": title_of(payload), "region": _region(meta), "image": _image(payload) if mode == "image" else None,
        "layers": layers, "stars": _stars(payload), "legend": _legend(payload),
    }  # fmt: skip


def map_paint(payload: dict) -> dict | None:
    """The static map of an image-mode flat map figure payload; None for a points figure (Dash draws it)."""
    meta = meta_of(payload)
    if meta.get("view") != "map" or meta.get("mode") != "image" or not _image(payload):
        return None
    return flat_paint(payload)


def _stars(payload: dict) -> list[dict]:
    """The reference orientation's stars of a figure (its trace of kind "reference"), map units, y down, with the
    words a hover on one shows (its axis, longitude and latitude)."""
    stars = []
    for trace in traces_of(payload, "reference"):
        xs, ys = payload_array(trace.get("x", [])), payload_array(trace.get("y", []))
        where = trace.get("customdata") or []
        for k, (x, y, label) in enumerate(zip(xs.tolist(), ys.tolist(), trace.get("text") or [], strict=False)):
            star = {"x": round(x), "y": round(-y), "label": label, "color": REFERENCE_STAR}
            if k < len(where):  # the hover's words, as the plotly figure's hovertemplate said them
                axis, lon, lat = where[k]
                star["title"] = (
                    f"reference orientation, axis {axis}: lon {format_number(lon, '.1f')}°, "
                    f"lat {format_number(lat, '.1f')}°"
                )
            stars.append(star)
    return stars


def _points(payload: dict) -> dict | None:
    """The points a density figure draws over its cells (a set too small for a density: its trace of kind
    "points"): map units, y down, their radius and outline as on a plot of ``DENSITY_POINTS_PX``."""
    unit = (MAP_RANGE_X[1] - MAP_RANGE_X[0]) / DENSITY_POINTS_PX[0]  # map units per pixel of a density map
    for trace in traces_of(payload, "points")[:1]:
        marker, line = trace["marker"], trace["marker"].get("line") or {}
        xs, ys = payload_array(trace["x"]), -payload_array(trace["y"])
        return {"x": np.round(xs), "y": np.round(ys), "color": list(marker["color"]), "r": round(marker["size"] / 2 * unit),
                "stroke": line.get("color"), "stroke_width": round(line["width"] * unit) if line else 0}  # fmt: skip
    return None


def density_map(payload: dict) -> dict:
    """One static density map of a density figure payload: its cells as an image (with their values for the
    hover), the reference stars and any points."""
    im = density_image(next(t for t in payload["data"] if t.get("type") == "heatmap"))
    ex0, ex1, ey0, ey1 = im.extent
    image = {"source": im.source, "x": ex0, "y": -ey1, "width": ex1 - ex0, "height": ey1 - ey0}
    return {
        "title": title_of(payload),
        "image": image,
        "grid": im.grid,
        "stars": _stars(payload),
        "points": _points(payload),
        "legend": _legend(payload),
    }


def density_paint(payloads: tuple[dict, dict]) -> dict:
    """The static density view of ``density_pair_json``'s payloads (cached beside them: writing the two images
    and hover grids took 17 ms of every landing page's 36 ms on QM9)."""
    key = id(payloads)
    hit = shared_cache().get("density_paint", key)
    if hit is not None and hit[0] is payloads:  # the id of a dropped pair may be reused
        return hit[1]
    main, control = payloads
    meta = meta_of(main)
    painted = {
        "settings": settings_of(meta, query=meta["query"], kind="density", scale=MAP_SCALE),
        "hook": {**hook_of(meta), "token": str(meta.get("token", ""))}, "region": _region(meta),
        "maps": [density_map(main), density_map(control)],
    }  # fmt: skip
    shared_cache().put("density_paint", key, (payloads, painted), size=nbytes(payloads))
    return painted
