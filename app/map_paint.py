"""What the dashboard draws of a dataset's map, as plain data for the REST resource under ``/api/datasets/{id}/map``.

- :func:`region_figure`: the flat map's figure of a region (a zoom), as the map callback draws it;
- :func:`region_cells`: the density view's two figures (the dataset's and its control's) binned anew for a region;
- :func:`molecule_panel`: the molecule panel's id, info (Dash ``html`` components as JSON) and 3D viewer spec;
- :func:`first_paint`: everything the page's first paint draws (``frontend_assets/first_paint.js``): the image,
  the outline and graticule lines, the reference stars, the sphere's points, the density cells and the molecule
  panel. The page HTML carries the same answer inline (``app/first_paint.py``), so the first paint costs no
  round trip.

The API cannot import the dashboard (the layer contract: ``api`` and ``app`` are siblings), and the figure
builders still live here, so the composition root (``backend/server.py``) hands this module to the API
(``api/routes/orientation_map.py``, ``MapPainterDep``). Everything is read through the services and the
figure builders' caches; nothing here computes science.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
from plotly.io.json import to_json_plotly

from orientscope.app import data, panels
from orientscope.app.density_paint import density_image, payload_array
from orientscope.app.initial_view import resolve_view
from orientscope.core.numbers import format_number
from orientscope.core.palette import AXIS_COLORS, CIVIDIS, HIGHLIGHT, OTHER_GREY, REFERENCE_STAR
from orientscope.figures.mapfigure import density_pair_json, map_figure_json, selected_ring
from orientscope.figures.plots import DENSITY_POINTS_PX, MAP_RANGE_X, MAP_SCALE, MUTED_OPACITY, NO_MATCH
from orientscope.figures.state import ViewState
from orientscope.services.bytecache import nbytes, shared_cache
from orientscope.services.map_data import frame_lines
from orientscope.services.map_raster import Viewport
from orientscope.services.map_view import MapQuery, color_range

# The direction plotly's 3D scene looks from by default (camera eye (1.25, 1.25, 1.25), z up), as
# screen right, screen up and towards the viewer: the sphere's renderer (map_sphere.js) starts there and returns
# there on a double click.
SPHERE_RIGHT = np.array([-1.0, 1.0, 0.0]) / np.sqrt(2.0)
SPHERE_UP = np.array([-1.0, -1.0, 2.0]) / np.sqrt(6.0)
SPHERE_TOWARDS = np.array([1.0, 1.0, 1.0]) / np.sqrt(3.0)
BACK_OPACITY = 0.35  # the sphere's far hemisphere, as a share of a dot's opacity
# A zoom's answer is mostly a base64 PNG: gzip saved a quarter of its 2 MB on the 10M-molecule map and cost
# 100-600 ms, so these routes answer uncompressed (backend/server.py).
REGION_PATHS = ("/map/figure", "/map/cells")


def view_state(query: MapQuery, view: str) -> ViewState:
    """The dashboard's view state of a REST map query (InvalidInput naming a field it does not accept)."""
    query = query.checked()
    return ViewState(
        dataset=query.dataset, view=view, axes=query.axes, color=query.color, grouping=query.grouping,
        group=query.group, smarts=query.smarts, table=query.table,
    )  # fmt: skip


def region_figure(data_dir: Path, query: MapQuery, viewport: Viewport) -> dict:
    """The flat map's plotly figure of ``viewport`` (cached by the map callback's cache)."""
    payload, _ = map_figure_json(data_dir, view_state(query, "map"), viewport.checked())
    return {"figure": payload}


def region_cells(data_dir: Path, query: MapQuery, viewport: Viewport) -> dict:
    """The density view's figures of ``viewport``'s region: the dataset's and its control's, one colour scale."""
    (main, control), _ = density_pair_json(
        data_dir, view_state(query, "density").with_(table="original"), viewport.checked()
    )
    return {"dataset": main, "control": control}


def panel_record(shown: panels.MoleculePanel) -> dict:
    """A molecule panel's id, info (its Dash components as JSON, as the molecule callback answers them) and viewer."""
    return {"molecule_id": shown.molecule_id, "info": orjson.loads(to_json_plotly(shown.info)), "viewer": shown.viewer}


def molecule_panel(data_dir: Path, dataset_id: str, molecule_id: str) -> dict:
    """The molecule panel showing ``molecule_id``; NotFoundError for a molecule the dataset does not hold."""
    shown = panels.molecule_outputs(data_dir, ViewState(dataset=dataset_id), molecule_id)
    if not shown.molecule_id:  # the panel says what is wrong; the REST answer is the error itself
        data.molecule_detail(data_dir, dataset_id, molecule_id)
    return panel_record(shown)


# ----------------------------------------------------------------- the first paint


def _title(payload: dict) -> str:
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


def _meta(payload: dict) -> dict:
    return payload.get("layout", {}).get("meta", {}).get("map") or {}


def _settings(meta: dict, **extra) -> dict:
    """What first_paint.js's REST calls ask for (the interactive map's ``layout.meta.map`` alike)."""
    return {"view": meta["view"], "dataset": meta.get("dataset"), **extra}


def _hook(meta: dict) -> dict:
    return {"mode": str(meta["mode"]), "drawn": int(meta["drawn"])}


def map_paint(payload: dict) -> dict | None:
    """The static map of an image-mode flat map figure payload; None for a points figure (Dash draws it)."""
    meta, images = _meta(payload), payload.get("layout", {}).get("images") or []
    if meta.get("view") != "map" or meta.get("mode") != "image" or not images:
        return None
    im = images[0]
    image = {"source": im["source"], "x": im["x"], "y": -im["y"], "width": im["sizex"], "height": im["sizey"]}
    return {
        "settings": _settings(meta, query=meta["query"], kind=meta["kind"], grid=meta["grid"], scale=MAP_SCALE),
        "hook": _hook(meta), "title": _title(payload), "image": image,
    }  # fmt: skip


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


def _trace(payload: dict, kind: str) -> dict | None:
    return next((t for t in payload.get("data", []) if (t.get("meta") or {}).get("kind") == kind), None)


def _reference(payload: dict) -> list[dict]:
    """The reference orientation's axes of a sphere figure (its trace of kind "reference"): unit vectors, labels."""
    trace = _trace(payload, "reference")
    if trace is None:
        return []
    xyz = np.stack([payload_array(trace[k]) for k in "xyz"], axis=1).round(4) + 0.0
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
    meta = _meta(payload)
    if meta.get("view") != "sphere" or len(vectors) == 0:
        return None
    v = np.round(np.asarray(vectors, np.float64).reshape(-1, 3), 3) + 0.0  # + 0.0: no "-0.0"
    marker = (_trace(payload, "points") or {}).get("marker") or {}
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
    settings = _settings(meta, query=meta.get("query"))  # the hover card's query, as Dash's sphere asks it
    return {"settings": settings, "hook": _hook(meta), "title": _title(payload), "sphere": sphere}


def _stars(payload: dict) -> list[dict]:
    """The reference orientation's stars of a density figure (its trace of kind "reference"), map units, y down."""
    stars = []
    for trace in payload.get("data", []):
        if (trace.get("meta") or {}).get("kind") == "reference":
            xs, ys = payload_array(trace.get("x", [])), payload_array(trace.get("y", []))
            for x, y, label in zip(xs.tolist(), ys.tolist(), trace.get("text") or [], strict=False):
                stars.append({"x": round(x), "y": round(-y), "label": label, "color": REFERENCE_STAR})
    return stars


def _points(payload: dict) -> dict | None:
    """The points a density figure draws over its cells (a set too small for a density: its trace of kind
    "points"): map units, y down, their radius and outline as on a plot of ``DENSITY_POINTS_PX``."""
    unit = (MAP_RANGE_X[1] - MAP_RANGE_X[0]) / DENSITY_POINTS_PX[0]  # map units per pixel of a density map
    for trace in payload.get("data", []):
        if (trace.get("meta") or {}).get("kind") == "points":
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
        "title": _title(payload),
        "image": image,
        "grid": im.grid,
        "stars": _stars(payload),
        "points": _points(payload),
    }


def density_paint(payloads: tuple[dict, dict]) -> dict:
    """The static density view of ``density_pair_json``'s payloads (cached beside them: writing the two images
    and hover grids took 17 ms of every landing page's 36 ms on QM9)."""
    key = id(payloads)
    hit = shared_cache().get("density_paint", key)
    if hit is not None and hit[0] is payloads:  # the id of a dropped pair may be reused
        return hit[1]
    main, control = payloads
    meta = _meta(main)
    painted = {
        "settings": _settings(meta, query=meta["query"], kind="density", scale=MAP_SCALE), "hook": _hook(meta),
        "maps": [density_map(main), density_map(control)],
    }  # fmt: skip
    shared_cache().put("density_paint", key, (payloads, painted), size=nbytes(payloads))
    return painted


def first_paint(data_dir: Path, search: str) -> dict:
    """What the first paint of the page at ``?search`` draws: ``{"view": None}`` unless the page shows the
    density view, the whole Mollweide map as an image or the sphere.

    Otherwise ``view``, ``settings`` (what its clicks and hover ask the REST API for), ``hook`` (the test
    hook's mode and molecules drawn), ``frame`` (outline and graticule) and ``panel`` (the molecule panel's
    layout, as Dash components, showing the page's molecule, and that molecule's viewer spec), plus the
    view's own drawing: ``image`` and ``title`` (map), ``sphere`` and ``title`` (sphere) or ``maps`` (density).
    """
    return paint_of(data_dir, resolve_view(data_dir, search).state)


def first_paint_of(data_dir: Path, query: MapQuery, view: str, molecule_id: str | None) -> dict:
    """:func:`first_paint` of a REST map query: NotFoundError for an unknown dataset or molecule, not a fallback."""
    ready = {info.id for info in data.list_datasets(data_dir) if info.status == data.READY}
    if query.dataset not in ready:
        raise data.NotFoundError(f"no ready dataset {query.dataset!r}; ready: {', '.join(sorted(ready)) or 'none'}")
    if molecule_id is not None:
        try:
            data.load_map_data(data_dir, query.dataset).row_of(molecule_id)
        except KeyError as err:
            raise data.NotFoundError(err.args[0]) from None
    return paint_of(data_dir, view_state(query, view).with_(molecule=molecule_id))


def paint_of(data_dir: Path, st: ViewState) -> dict:
    """:func:`first_paint` of a resolved view state."""
    if st.view not in ("map", "sphere", "density") or st.dataset is None or st.region is not None:
        return {"view": None}  # a zoomed map is drawn by Dash (the static map shows the whole sky)
    if st.view == "density":  # the landing page: cached, the layout request reuses it
        paint = density_paint(density_pair_json(data_dir, st)[0])
    else:
        payload, layers = map_figure_json(data_dir, st)  # cached: the layout request reuses it
        if st.view == "sphere":
            vectors = layers.md.vectors(layers.rows, layers.axes)
            keys = layers.md.point_keys(layers.rows, layers.axes)
            ids = layers.md.ids[layers.rows]
            ring = selected_ring(layers.md, st, st.molecule)
            paint = sphere_paint(payload, vectors, layers.color, ids, keys, layers.sphere_highlight, ring)
        else:
            paint = map_paint(payload)
    if paint is None:
        return {"view": None}
    shown = panels.molecule_outputs(data_dir, st, st.molecule)
    layout = orjson.loads(to_json_plotly(panels.molecule_panel(shown)))
    return {"view": st.view, **paint, "frame": frame(), "panel": {"layout": layout, "viewer": shown.viewer}}
