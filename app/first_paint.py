"""The map's first paint: the map inside the page HTML, on screen before Dash and plotly.js have loaded.

A cold navigation spends about 2 s parsing Dash and plotly.js before the layout is even asked for.
When a page asks for the density view (the landing page), the whole Mollweide map as an image (above
the point budget) or the 3D sphere, its HTML carries, after Dash's root element, a placeholder holding
the first paint's images as ``<img>`` elements, then its data as inline JSON (``app/map_paint.py``
``first_paint``: the same answer as ``GET /api/datasets/{id}/map/first-paint``, its images' sources moved to
those elements, so no round trip) and ``frontend_assets/first_paint.js``, which draws it: the image under
its outline and graticule, the 3D sphere (``frontend_assets/map_sphere.js``, the renderer Dash's page shares),
the density cells with the reference stars, and the molecule panel from the layout's own components. It stays on screen until
Dash's page has rendered, and leaves in that frame.

The drawn map carries the test hook (``data-drawn``, ``data-mode``, set when the browser has presented its image:
Element Timing's ``renderTime``; without it, once the image is decoded and two frames have begun) plus
``data-first-paint``, so a test can tell the first paint from the interactive plot that replaces it.
"""

from __future__ import annotations

import html
import logging
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from typing import NamedTuple

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

from orientscope.app import map_paint
from orientscope.app.compat import add_after_app_entry, add_to_head, answer_json
from orientscope.core.resources import frontend_asset

log = logging.getLogger(__name__)

_FIRST_PAINT: ContextVar = ContextVar("first_paint", default=("", ""))
SCRIPT = frontend_asset("first_paint.js")
PREVIEW_SCRIPT = frontend_asset("hover_preview.js")  # the hover preview, which the first paint shows too
# the map's click, hover, ring and density words, and its renderer: the same code as Dash's map runs
COMPONENT_SCRIPT = frontend_asset("map_component.js")
DRAW_SCRIPT = frontend_asset("map_draw.js")
SPHERE_SCRIPT = frontend_asset("map_sphere.js")  # registers the sphere's renderer with map_draw.js: after it


@cache
def _script_texts(sphere: bool = True) -> tuple[str, str]:
    """``hover_preview.js``, ``map_component.js``, ``map_draw.js`` and (``sphere``) ``map_sphere.js`` as inline
    scripts, and ``first_paint.js``'s text (read once: they run before any script file could load)."""
    out = []
    shared = (PREVIEW_SCRIPT, COMPONENT_SCRIPT, DRAW_SCRIPT) + ((SPHERE_SCRIPT,) if sphere else ())
    for script in (*shared, SCRIPT):
        text = script.read_text(encoding="utf-8")
        if "</" in text:  # would end the inline <script> element early
            raise ValueError(f"{script} must not contain '</'")
        out.append(text)
    return "".join(f"<script>{text}</script>" for text in out[:-1]), out[-1]


@cache
def script_html() -> str:
    """``first_paint.js`` as an inline script after the data, after ``hover_preview.js``, ``map_component.js`` and
    ``map_draw.js`` with ``map_sphere.js``, which it calls: they run once the head's stylesheets have loaded."""
    shared, paint = _script_texts()
    return f"{shared}<script>{paint}</script>"


@cache
def head_script_html() -> str:
    """The same scripts for the head, before its stylesheets: ``first_paint.js``, marked ``data-first-paint-head``,
    draws on the placeholder as soon as the parser has closed it (the file's own launcher: a mutation observer's
    callback does not wait for stylesheets, an inline script after them does). Only the plane views (the map, the
    density view) draw from there: without the sphere's renderer, 26 kB of script the browser would parse before it
    even asks for the stylesheets (Dash's page loads ``map_sphere.js`` as an asset)."""
    shared, paint = _script_texts(sphere=False)
    return f"{shared}<script data-first-paint-head>{paint}</script>"


class PagePaint(NamedTuple):
    """A page's first paint: markup for the start of its head and markup after Dash's root element ("" for none)."""

    head: str
    body: str


NO_PAINT = PagePaint("", "")


def raster_layers(paint: dict) -> tuple[dict, list[tuple[str, str]]]:
    """``paint`` with each image's ``source`` moved out: (a copy whose images name an element, ``layer``, instead;
    [(that element's id, the source), ...]). The map's image, or the density view's two; ``paint`` is not changed
    (it is cached)."""
    layers: list[tuple[str, str]] = []

    def moved(image: dict) -> dict:
        layers.append((f"first-paint-layer-{len(layers)}", image["source"]))
        return {**image, "source": None, "layer": layers[-1][0]}

    if paint.get("image"):
        return {**paint, "image": moved(paint["image"])}, layers
    if paint.get("maps"):
        return {**paint, "maps": [{**m, "image": moved(m["image"])} for m in paint["maps"]]}, layers
    return paint, layers


def placeholder_html(paint: dict) -> PagePaint:
    """The page's first paint: a placeholder with its images as ``<img>`` elements, then ``paint`` (less the images'
    sources) as JSON (``<`` escaped: it cannot end the element), and the scripts that draw it.

    The images come first, as markup: the parser creates them, and their data URLs load, while the head's
    stylesheets (50-100 ms of a cold landing) still hold back every inline script after them. A paint with images
    (the map, the density view) is drawn from the head's scripts, during that wait, onto those very elements;
    drawn by a script after the data, once the stylesheets had loaded, the landing page's first paint came 0.1 s
    later than the parent's HTML one (BENCHMARKS.md, issue 41 item 4). The sphere's thousands of dots keep the
    script after the data: drawn from the head they were shown 0.13 s later in the same A/B (6 runs).
    """
    data, layers = raster_layers(paint)
    images = "".join(
        f'<img id="{layer}" class="first-paint-layer" src="{html.escape(source)}" alt="" hidden'
        ' elementtiming="orientscope-first-paint">'
        for layer, source in layers
    )
    body = (
        f'<div class="page first-paint-page">{images}'
        f'<script type="application/json" class="first-paint-data">{answer_json(data)}</script>'
    )
    if layers:
        return PagePaint(head_script_html(), body + "</div>")
    return PagePaint("", f"{body}{script_html()}</div>")


def page_first_paint(data_dir: Path, search: str) -> PagePaint:
    """The first paint of the page at ``?search`` (:data:`NO_PAINT` unless it shows the density view, the Mollweide
    map as an image or the sphere)."""
    try:
        paint = map_paint.first_paint(data_dir, search)
    except Exception:  # the page still works without it: Dash draws the map
        log.exception("cannot prepare the first paint of the requested page")  # not its query: it may hold a token
        return NO_PAINT
    return placeholder_html(paint) if paint["view"] else NO_PAINT


def warm_landing(data_dir: Path) -> None:
    """Build the landing page's first paint once, into the caches its requests read (the server's warm-up)."""
    page_first_paint(data_dir, "")


class FirstPaintMiddleware:
    """Prepares the first paint of ``GET /`` (in a worker thread) for :func:`install`'s index hook."""

    def __init__(self, app: ASGIApp, data_dir: Path, path: str = "/") -> None:
        self.app = app
        self.data_dir = Path(data_dir)
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        query = scope.get("query_string", b"").decode("latin-1")
        paint = await anyio.to_thread.run_sync(page_first_paint, self.data_dir, f"?{query}" if query else "")
        token = _FIRST_PAINT.set(paint)
        try:
            await self.app(scope, receive, send)
        finally:
            _FIRST_PAINT.reset(token)


def install(dash_app) -> None:
    """Put the prepared first paint in the page: its scripts at the start of the head when it draws from there, the
    placeholder just after Dash's root element."""
    add_after_app_entry(dash_app, lambda: _FIRST_PAINT.get()[1])
    add_to_head(dash_app, lambda: _FIRST_PAINT.get()[0])
