"""What the sphere's renderer (``frontend_assets/map_sphere.js``) draws of the 3D sphere view, as plain data: a paint.

Made from the sphere figure payload the map's figure builders cache (``figures/mapfigure.py``) and the map layers'
unit vectors: the points, their colours with the legend, the reference axes and the selected molecule's ring. The
page's first paint, Dash's map store (``app/panels.py`` map_outputs) and ``GET .../map/first-paint?view=sphere``
all answer it.
"""

from __future__ import annotations

import numpy as np

from orientscope.app.density_paint import payload_array
from orientscope.app.plane_paint import hook_of, meta_of, settings_of, title_of, traces_of
from orientscope.core.numbers import format_number
from orientscope.core.palette import AXIS_COLORS, CIVIDIS, HIGHLIGHT, OTHER_GREY, REFERENCE_STAR
from orientscope.figures.mapfigure import selected_ring
from orientscope.figures.mapview import MapLayers
from orientscope.figures.plots import MUTED_OPACITY, NO_MATCH
from orientscope.figures.state import ViewState
from orientscope.services.map_view import color_range

# The direction plotly's 3D scene looks from by default (camera eye (1.25, 1.25, 1.25), z up), as
# screen right, screen up and towards the viewer: the sphere's renderer (map_sphere.js) starts there and returns
# there on a double click.
SPHERE_RIGHT = np.array([-1.0, 1.0, 0.0]) / np.sqrt(2.0)
SPHERE_UP = np.array([-1.0, -1.0, 2.0]) / np.sqrt(6.0)
SPHERE_TOWARDS = np.array([1.0, 1.0, 1.0]) / np.sqrt(3.0)
BACK_OPACITY = 0.35  # the sphere's far hemisphere, as a share of a dot's opacity


def _sphere_color(color, highlight, n: int) -> dict:
    """How the sphere's renderer colours its ``n`` points, one of four kinds, each with its legend:

    - ``categorical``: ``code`` (n,) into ``palette``, labelled by ``labels`` (swatches);
    - ``highlight`` (a SMARTS search): ``code`` 1 for a match, 0 for the others, drawn grey and faded under the matches;
    - ``continuous``: ``values`` (n,) as fractions 0-1 of the colour bar's span (null: no value, drawn grey),
      ``scale`` its evenly spaced stops, ``ticks`` [[fraction, words], ...] (``core/numbers``);
    - ``none``: every point in the first axis's colour.
    """
    if highlight is not None:
        codes = np.asarray(highlight, bool).astype(np.int8)
        return {
            "kind": "highlight",
            "code": codes,
            "palette": [OTHER_GREY, HIGHLIGHT],
            "labels": [NO_MATCH, "SMARTS match"],
        }
    if color.kind == "categorical" and color.values is not None and len(color.colors):
        codes = np.asarray(color.values).astype(np.int16)
        return {"kind": "categorical", "code": codes, "palette": list(color.colors), "labels": list(color.labels)}
    if color.kind == "continuous" and color.values is not None:
        values = np.asarray(color.values, np.float64)
        lo, hi = color_range(values)
        span = (values - lo) / (hi - lo) if hi > lo else np.full(len(values), 0.5)
        ticks = [[t, format_number(lo + t * (hi - lo), ".4g")] for t in (0.0, 0.5, 1.0)]
        return {"kind": "continuous", "values": np.round(np.clip(span, 0.0, 1.0), 3), "scale": list(CIVIDIS),
                "missing": OTHER_GREY, "title": color.title, "ticks": ticks}  # fmt: skip
    return {"kind": "none", "code": np.zeros(n, np.int8), "palette": [AXIS_COLORS[1]], "labels": []}


def _reference(payload: dict) -> list[dict]:
    """The reference orientation's axes of a sphere figure (its trace of kind "reference"): unit vectors, labels."""
    traces = traces_of(payload, "reference")
    if not traces:
        return []
    trace = traces[0]
    xyz = np.stack([payload_array(trace[k]) for k in ("x", "y", "z")], axis=1).round(4) + 0.0
    return [
        {"v": v, "label": label, "color": REFERENCE_STAR} for v, label in zip(xyz.tolist(), trace["text"], strict=False)
    ]


def sphere_paint(payload: dict, vectors: np.ndarray, color, ids, keys, highlight=None, ring=None) -> dict | None:
    """The 3D sphere of a sphere figure payload, as ``frontend_assets/map_sphere.js`` draws it (any colour kind);
    None for another view or no points.

    ``vectors`` (n, 3) unit axis vectors in draw order, sent flat and rounded to 1e-3 of the radius (a fifth of a
    pixel on the drawn sphere); ``ids`` (n,) their molecules (a click on a dot opens its molecule); ``keys`` (n,)
    their tie-break keys, 3 × molecule index + axis − 1, so that a click between equally near dots picks the one
    the server's map would (``MapData.point_keys``), and a dot's axis is ``key % 3 + 1``. ``highlight`` (n,) bool
    marks SMARTS matches (:func:`_sphere_color`); ``ring`` [[x, y, z], ...] the selected molecule's axes.
    The camera starts where plotly's 3D scene does (eye (1.25, 1.25, 1.25), z up): :data:`SPHERE_RIGHT`,
    :data:`SPHERE_UP`, :data:`SPHERE_TOWARDS`.
    """
    meta = meta_of(payload)
    if meta.get("view") != "sphere" or len(vectors) == 0:
        return None
    v = np.round(np.asarray(vectors, np.float64).reshape(-1, 3), 3) + 0.0  # + 0.0: no "-0.0"
    marker = next(iter(traces_of(payload, "points")), {}).get("marker") or {}
    sphere = {
        "vectors": v.reshape(-1),
        "ids": [str(i) for i in np.asarray(ids)],
        "keys": np.asarray(keys, np.int64),
        "color": _sphere_color(color, highlight, len(v)),
        "size": float(marker.get("size", 4)),
        "outline": (marker.get("line") or {}).get("color"),
        "fade": {"back": BACK_OPACITY, "muted": MUTED_OPACITY},
        "reference": _reference(payload),
        "ring": list(ring or []),
    }
    settings = settings_of(meta, query=meta.get("query"))  # the hover card's query
    hook = {**hook_of(meta), "token": str(meta.get("token", ""))}
    return {"settings": settings, "hook": hook, "title": title_of(payload), "sphere": sphere}


def sphere_view_paint(payload: dict, layers: MapLayers, st: ViewState, ring: bool = True) -> dict | None:
    """:func:`sphere_paint` of ``map_figure_json``'s answer for a sphere view state (its layers' points, colours and
    highlight), ringing ``st.molecule``'s axes when ``ring`` (Dash rings the selected molecule through its own
    store: the paint it caches holds no ring)."""
    vectors = layers.md.vectors(layers.rows, layers.axes)
    keys = layers.md.point_keys(layers.rows, layers.axes)
    ids = layers.md.ids[layers.rows]
    shown = selected_ring(layers.md, st, st.molecule) if ring else None
    return sphere_paint(payload, vectors, layers.color, ids, keys, layers.sphere_highlight, shown)
