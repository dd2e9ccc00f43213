"""The map's first paint: the server's aggregated image inside the page HTML, on screen before any script runs.

A cold navigation spends about 2 s parsing Dash and plotly.js before the layout
is even asked for. When a page asks for the Mollweide map and the map is an
image (above the point budget), the page's HTML already carries that image (the
same PNG the layout will hold) under its outline and graticule as inline SVG, in
place of Dash's "Loading..." placeholder. The 3D sphere view likewise carries its
points (the same sample the scene draws) seen along the scene's default camera, as
SVG. The density view, the landing page, carries its two density maps (the
dataset's and its control's) as images of their cells (``app/density_paint.py``).
Dash's renderer first puts its own placeholder in; the first paint then stays on
screen just after it until Dash's page has rendered, and leaves in that frame
(first_paint.js).

Beside the map sits the molecule panel, rendered from the same components as
the layout's (``panels.molecule_panel``, filled by ``panels.molecule_outputs``, as
the callbacks fill it), within the same page structure, so it has the width it
will have once Dash has rendered the page.

The first paint works before Dash does: ``frontend_assets/first_paint.js``, inlined
after it, answers clicks (the server's nearest point within 5 px on the map, the
nearest dot on the sphere) and hover, shows the chosen molecule in the panel
(``GET /_first-paint/molecule-panel?<page query>``: the panel's id, info and 3D
viewer spec, drawn with 3Dmol.js) and hands the molecule to Dash through the page
URL, or Dash's stores when its layout was asked for before the click; Dash's
viewer takes the drawn one over. Its settings travel in the placeholder's
``data-map`` attribute.

The placeholder carries the map's test hook (``data-drawn``, ``data-mode``, set by
its image's load event, after the next frame) plus ``data-first-paint``, so a test
can tell the static first paint from the interactive plot that replaces it.
"""

from __future__ import annotations

import html
import json
import logging
import re
from contextvars import ContextVar
from functools import cache
from pathlib import Path

import anyio
import numpy as np
from plotly.io.json import to_json_plotly
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from orientscope.app import panels
from orientscope.app.density_paint import density_image, payload_array
from orientscope.app.initial_view import resolve_view
from orientscope.app.static_html import to_html
from orientscope.core.palette import HIGHLIGHT, OTHER_GREY, REFERENCE_STAR
from orientscope.core.resources import frontend_asset
from orientscope.figures.mapfigure import density_pair_json, map_figure_json
from orientscope.figures.plots import DENSITY_POINTS_PX, MAP_RANGE_X, MAP_RANGE_Y, MAP_SCALE, MUTED_OPACITY
from orientscope.services.bytecache import nbytes, shared_cache
from orientscope.services.map_data import frame_lines

log = logging.getLogger(__name__)

_FIRST_PAINT: ContextVar[str] = ContextVar("first_paint", default="")
# Dash's placeholder inside #react-entry-point (its {%app_entry%} markup), replaced by the first paint.
DASH_LOADING = re.compile(r'<div class="_dash-loading">.*?</div>', re.S)

# Set the hook once the image is decoded and the frame with it has been painted (two animation frames,
# as orientscope.js does for the plot). The performance mark lets a benchmark read when that was, since
# a navigation returns only after the page's scripts have run.
HOOK_JS = (
    "var m=document.getElementById('orientation-map'),i=this;(i&&i.decode?i.decode():Promise.resolve()).catch(function(){})"
    ".then(function(){requestAnimationFrame(function(){requestAnimationFrame(function(){"
    "if(m&&m.isConnected){m.setAttribute('data-mode','{mode}');m.setAttribute('data-drawn','{drawn}');"
    "performance.mark('orientscope:first-paint');}});});});"
)


PANEL_ROUTE = "_first-paint/molecule-panel"  # under the dashboard's path
SCRIPT = frontend_asset("first_paint.js")
PREVIEW_SCRIPT = frontend_asset("hover_preview.js")  # the hover preview, which the first paint shows too


@cache
def script_html() -> str:
    """``first_paint.js`` as an inline script (read once: it runs before any script file could load),
    after ``hover_preview.js``, which it calls."""
    out = []
    for script in (PREVIEW_SCRIPT, SCRIPT):
        text = script.read_text(encoding="utf-8")
        if "</" in text:  # would end the inline <script> element early
            raise ValueError(f"{script} must not contain '</'")
        out.append(f"<script>{text}</script>")
    return "".join(out)


def _settings(meta: dict, **extra) -> str:
    """The ``data-map`` attribute first_paint.js reads: what its REST calls ask for."""
    settings = {"view": meta["view"], "dataset": meta.get("dataset"), **extra}
    return f' data-map="{html.escape(json.dumps(settings, separators=(",", ":")), quote=True)}"'


def polyline_path(x: np.ndarray, y: np.ndarray) -> str:
    """SVG path data of a polyline in map units with NaN breaks (y flipped: SVG's y grows downwards)."""
    parts, pen_down = [], False
    for xi, yi in zip(x.tolist(), y.tolist(), strict=True):
        if xi != xi or yi != yi:  # NaN: lift the pen
            pen_down = False
            continue
        parts.append(f"{'L' if pen_down else 'M'}{xi * MAP_SCALE + 0.0:.0f} {-yi * MAP_SCALE + 0.0:.0f}")  # no "-0"
        pen_down = True
    return "".join(parts)


def hook_js(meta: dict) -> str:
    """The hook's script for a figure's ``layout.meta.map`` (mode and distinct molecules drawn)."""
    return HOOK_JS.replace("{mode}", str(meta["mode"])).replace("{drawn}", str(int(meta["drawn"])))


def _title(payload: dict) -> str:
    title = payload["layout"].get("title", {})
    return html.escape(title.get("text", "") if isinstance(title, dict) else str(title or ""))


# The direction plotly's 3D scene looks from by default (camera eye (1.25, 1.25, 1.25), z up), as
# screen right, screen up and towards the viewer: the static sphere shows what the scene then shows.
SPHERE_RIGHT = np.array([-1.0, 1.0, 0.0]) / np.sqrt(2.0)
SPHERE_UP = np.array([-1.0, -1.0, 2.0]) / np.sqrt(6.0)
SPHERE_TOWARDS = np.array([1.0, 1.0, 1.0]) / np.sqrt(3.0)


def page_html(map_html: str, shown: panels.MoleculePanel, map_class: str = "map") -> str:
    """The static map beside the molecule panel showing ``shown``, inside the page's own structure
    (``app/dashboard.py`` build_layout); the panel's viewer spec travels in ``data-viewer``."""
    viewer = json.dumps(shown.viewer, separators=(",", ":")) if shown.viewer else ""
    return (
        '<div class="page first-paint-page"><section class="panel">'
        f'<div class="explore" data-first-paint="1" data-viewer="{html.escape(viewer, quote=True)}">'
        f'<div class="{map_class}">{map_html}</div>{to_html(panels.molecule_panel(shown))}{script_html()}'
        "</div></section></div>"
    )


def sphere_paint_html(payload: dict, vectors: np.ndarray, color, ids, keys, highlight=None) -> str:
    """The static sphere of a 3D sphere figure payload: its points (n, 3) seen along plotly's default camera.

    ``color`` is the points' ColorSpec; only categorical colours are painted ("" otherwise, as for any
    other figure), back to front with the far hemisphere faded. ``ids`` (n,) are the points' molecule
    ids: a click on a dot opens its molecule; ``keys`` (n,) their tie-break keys, so that a click
    between equally near dots picks the one the server's map would (``MapData.point_keys``).
    ``highlight`` (n,) bool marks SMARTS matches: drawn over the other points, which are grey and faded,
    as the figure draws them (whatever the colour).
    """
    meta = payload.get("layout", {}).get("meta", {}).get("map") or {}
    if meta.get("view") != "sphere" or len(vectors) == 0 or (color.kind != "categorical" and highlight is None):
        return ""
    v = np.asarray(vectors, np.float64).reshape(-1, 3)
    # rounded, then + 0.0: no "-0.000" for a point at the centre
    sx, sy = np.round(v @ SPHERE_RIGHT, 3) + 0.0, np.round(-(v @ SPHERE_UP), 3) + 0.0
    depth = v @ SPHERE_TOWARDS
    if highlight is None:
        codes, colors, muted = np.asarray(color.values).astype(int), color.colors, np.zeros(len(v), bool)
        order = np.argsort(depth, kind="stable")
    else:
        codes, colors = np.asarray(highlight, bool).astype(int), [OTHER_GREY, HIGHLIGHT]
        muted = codes == 0
        order = np.lexsort((depth, codes))  # the matches last, over the others; each back to front
    dots = []
    for k in order:
        fade = f' fill-opacity="{MUTED_OPACITY}"' if muted[k] else ' fill-opacity=".35"' if depth[k] < 0 else ""
        dots.append(f'<circle cx="{sx[k]:.3f}" cy="{sy[k]:.3f}" r=".012" fill="{colors[codes[k]]}"{fade}/>')
    return (
        f'<div id="orientation-map" class="first-paint" data-first-paint="1"'
        f"{_settings(meta, ids=[str(i) for i in np.asarray(ids)[order]], keys=np.asarray(keys)[order].tolist())}"
        ' style="max-width:460px;position:relative">'
        f'<p style="font:14px sans-serif;margin:4px 0">{_title(payload)}</p>'
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="-1.1 -1.1 2.2 2.2" width="100%" role="img" '
        f'aria-label="{_title(payload)}"><circle r="1" fill="#f4f4f4" stroke="#bbb" stroke-width=".005"/>'
        f'<g class="dots">{"".join(dots)}</g></svg><p class="note map-hint"></p>'
        f"<script>(function(){{{hook_js(meta)}}}).call(null)</script></div>"
    )


def first_paint_html(payload: dict) -> str:
    """The static map of an image-mode figure payload (``map_figure_json``), or "" for any other figure."""
    meta = payload.get("layout", {}).get("meta", {}).get("map") or {}
    images = payload.get("layout", {}).get("images") or []
    if meta.get("view") != "map" or meta.get("mode") != "image" or not images:
        return ""
    im = images[0]
    x0, x1 = MAP_RANGE_X
    y0, y1 = MAP_RANGE_Y
    title = _title(payload)
    return (
        f'<div id="orientation-map" class="first-paint" data-first-paint="1"'
        f"{_settings(meta, query=meta['query'], kind=meta['kind'], grid=meta['grid'], scale=MAP_SCALE)}"
        ' style="max-width:900px;position:relative">'
        f'<p style="font:14px sans-serif;margin:4px 0">{title}</p>'
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="{x0:.0f} {-y1:.0f} {x1 - x0:.0f} {y1 - y0:.0f}" '
        f'width="100%" role="img" aria-label="{title}">'
        f'<image href="{im["source"]}" x="{im["x"]:.0f}" y="{-im["y"]:.0f}" width="{im["sizex"]:.0f}" '
        f'height="{im["sizey"]:.0f}" preserveAspectRatio="none" '
        f'onload="{hook_js(meta)}"/>'
        f"{_frame_paths()}"
        f'</svg><p class="note map-hint"></p></div>'
    )


@cache
def _frame_paths() -> str:
    """The outline and graticule as SVG paths: the same on every first paint (3 ms to write each time)."""
    lines = frame_lines()
    return (
        f'<path d="{polyline_path(*lines["graticule"])}" fill="none" stroke="#999" stroke-width="45"/>'
        f'<path d="{polyline_path(*lines["outline"])}" fill="none" stroke="#555" stroke-width="60"/>'
    )


def _reference_stars(payload: dict) -> str:
    """The reference orientation's stars and labels of a density figure (its trace of kind "reference")."""
    marks = []
    for trace in payload.get("data", []):
        if (trace.get("meta") or {}).get("kind") != "reference":
            continue
        xs, ys = payload_array(trace.get("x", [])), payload_array(trace.get("y", []))
        for x, y, label in zip(xs.tolist(), ys.tolist(), trace.get("text") or [], strict=False):
            marks.append(
                f'<text x="{x:.0f}" y="{-y:.0f}" font-size="1100" text-anchor="middle" dominant-baseline="central" '
                f'fill="{REFERENCE_STAR}" stroke="#000" stroke-width="40">\u2605</text>'
                f'<text x="{x:.0f}" y="{-y - 1300:.0f}" font-size="700" text-anchor="middle">{html.escape(label)}</text>'
            )
    return "".join(marks)


def _points(payload: dict) -> str:
    """The points a density figure draws over its cells (a set too small for a density: its trace of kind
    "points"), as SVG circles of the marker's size on a plot of ``DENSITY_POINTS_PX`` (map units, y flipped)."""
    marks = []
    unit = (MAP_RANGE_X[1] - MAP_RANGE_X[0]) / DENSITY_POINTS_PX[0]  # map units per pixel of a density map
    for trace in payload.get("data", []):
        if (trace.get("meta") or {}).get("kind") != "points":
            continue
        marker = trace["marker"]
        r = marker["size"] / 2 * unit
        line = marker.get("line") or {}
        stroke = f' stroke="{line["color"]}" stroke-width="{line["width"] * unit:.0f}"' if line else ""
        xs, ys = payload_array(trace["x"]), payload_array(trace["y"])
        for x, y, color in zip(xs.tolist(), ys.tolist(), marker["color"], strict=True):
            marks.append(f'<circle cx="{x:.0f}" cy="{-y:.0f}" r="{r:.0f}" fill="{color}"{stroke}/>')
    return "".join(marks)


def density_map_html(payload: dict, attrs: str, hook: str = "") -> str:
    """One static density map of a density figure payload: its cells as an image under the outline, the
    graticule and the reference stars; ``attrs`` go on its element, ``hook`` on the image's load event."""
    heat = next(t for t in payload["data"] if t.get("type") == "heatmap")
    im = density_image(heat)
    x0, x1 = MAP_RANGE_X
    y0, y1 = MAP_RANGE_Y
    ex0, ex1, ey0, ey1 = im.extent
    title = _title(payload)
    grid = html.escape(json.dumps(im.grid, separators=(",", ":")), quote=True)
    onload = f' onload="{hook}"' if hook else ""
    return (
        f'<div class="first-paint"{attrs} data-grid="{grid}" style="position:relative">'
        f'<p style="font:14px sans-serif;margin:4px 0">{title}</p>'
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="{x0:.0f} {-y1:.0f} {x1 - x0:.0f} {y1 - y0:.0f}" '
        f'width="100%" role="img" aria-label="{title}">'
        f'<image href="{im.source}" x="{ex0:.0f}" y="{-ey1:.0f}" width="{ex1 - ex0:.0f}" height="{ey1 - ey0:.0f}" '
        f'preserveAspectRatio="none" style="image-rendering:pixelated"{onload}/>'
        f"{_frame_paths()}{_reference_stars(payload)}{_points(payload)}"
        '</svg><p class="note map-hint"></p></div>'
    )


CONTROL_ATTRS = ' data-first-paint-control="1"'  # the control's static map: hover only


def density_paint_html(payloads: tuple[dict, dict]) -> str:
    """The static density view of ``density_pair_json``'s payloads: the dataset's map (the map's element, its
    test hook and clicks) beside its control's, in the layout's map cells."""
    main, control = payloads
    meta = main["layout"]["meta"]["map"]
    attrs = ' id="orientation-map" data-first-paint="1"' + _settings(
        meta, query=meta["query"], kind="density", scale=MAP_SCALE
    )
    return (
        f'<div class="map-cell">{density_map_html(main, attrs, hook_js(meta))}</div>'
        f'<div id="control-map-box" class="map-cell">{density_map_html(control, CONTROL_ATTRS)}</div>'
    )


def _cached_density_paint(payloads: tuple[dict, dict]) -> str:
    """:func:`density_paint_html` of a cached pair of payloads, kept beside them: writing its two images and
    hover grids took 17 ms of every landing page's 36 ms on QM9."""
    key = id(payloads)
    hit = shared_cache().get("density_paint", key)
    if hit is not None and hit[0] is payloads:  # the id of a dropped pair may be reused
        return hit[1]
    painted = density_paint_html(payloads)
    shared_cache().put("density_paint", key, (payloads, painted), size=len(painted) + nbytes(payloads))
    return painted


def page_first_paint(data_dir: Path, search: str) -> str:
    """The first paint of the page at ``?search`` ("" unless it shows the density view, the Mollweide map as an
    image or the sphere)."""
    try:
        st = resolve_view(data_dir, search).state
        if st.view not in ("map", "sphere", "density") or st.dataset is None or st.region is not None:
            return ""  # a zoomed map is drawn by Dash (the static map shows the whole sky)
        if st.view == "density":  # the landing page: cached, the layout request reuses it
            payloads, _ = density_pair_json(data_dir, st)
            shown = panels.molecule_outputs(data_dir, st, st.molecule)
            return page_html(_cached_density_paint(payloads), shown, map_class="map maps")
        payload, layers = map_figure_json(data_dir, st)  # cached: the layout request reuses it
        if st.view == "sphere":
            vectors = layers.md.vectors(layers.rows, layers.axes)
            keys = layers.md.point_keys(layers.rows, layers.axes)
            map_html = sphere_paint_html(
                payload, vectors, layers.color, layers.md.ids[layers.rows], keys, layers.sphere_highlight
            )
        else:
            map_html = first_paint_html(payload)
        return page_html(map_html, panels.molecule_outputs(data_dir, st, st.molecule)) if map_html else ""
    except Exception:  # the page still works without it: Dash draws the map
        log.exception("cannot prepare the first paint of the requested page")  # not its query: it may hold a token
        return ""


def warm_landing(data_dir: Path) -> None:
    """Build the landing page's first paint once, into the caches its requests read (the server's warm-up)."""
    page_first_paint(data_dir, "")


def panel_json(data_dir: Path, search: str) -> bytes:
    """The molecule panel of the page at ``?search`` (its ``molecule``): what the show_molecule callback
    answers (``molecule_id``, ``info`` as components, ``viewer``), plus ``info_html``, the info as HTML."""
    st = resolve_view(data_dir, search).state
    shown = panels.molecule_outputs(data_dir, st, st.molecule)
    answer = {**shown._asdict(), "info_html": to_html(shown.info)}
    return to_json_plotly(answer).encode()


class FirstPaintMiddleware:
    """Prepares the first paint of ``GET /`` (in a worker thread) for :func:`install`'s index hook, and
    answers the first paint's ``GET /_first-paint/molecule-panel`` (:func:`panel_json`)."""

    def __init__(self, app: ASGIApp, data_dir: Path, path: str = "/") -> None:
        self.app = app
        self.data_dir = Path(data_dir)
        self.path = path
        self.panel_path = path + PANEL_ROUTE

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or scope["path"] not in (self.path, self.panel_path):
            await self.app(scope, receive, send)
            return
        query = scope.get("query_string", b"").decode("latin-1")
        if scope["path"] == self.panel_path:
            body = await anyio.to_thread.run_sync(panel_json, self.data_dir, f"?{query}" if query else "")
            await Response(body, media_type="application/json")(scope, receive, send)
            return
        paint = await anyio.to_thread.run_sync(page_first_paint, self.data_dir, f"?{query}" if query else "")
        token = _FIRST_PAINT.set(paint)
        try:
            await self.app(scope, receive, send)
        finally:
            _FIRST_PAINT.reset(token)


def install(dash_app) -> None:
    """Put the prepared first paint in place of Dash's loading placeholder (Dash's public index override)."""
    plain = dash_app.interpolate_index

    def interpolate_index(**kwargs):
        paint = _FIRST_PAINT.get()
        if paint:
            kwargs["app_entry"] = DASH_LOADING.sub(lambda _: paint, kwargs.get("app_entry", ""), count=1)
        return plain(**kwargs)

    dash_app.interpolate_index = interpolate_index
