"""Every use of Dash internals and of plotly's in Dash's answers, in one place (Python side; the plotly.js side
is the marked section of ``frontend_assets/orientscope.js``; the figures' own plotly trick, which the Python
library shares without Dash, is ``orientscope.figures.compat``).

Each trick below says what it saves, measured on its own on full-QM9-sized data
(``python -m tests.bench.bench_compat``: median of 3 runs, on a busy 2-core machine,
so the absolute times are noisy; a trick gaining less than 10 % is removed), and
``tests/app/test_compat.py`` holds a canary for each: it fails when an upgrade
changes the internal. ``pyproject.toml`` pins ``dash`` and ``plotly`` to the
minor versions these were tested with (``PINNED``). Nothing outside the two compat
modules may name a private Dash or plotly attribute (``tests/app/test_compat.py`` greps
the tree).
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable

import anyio
import anyio.to_thread
import dash._callback
import dash._utils
import orjson
from fastapi import FastAPI, Request
from fastapi.routing import APIRoute
from plotly.io.json import to_json_plotly
from starlette.responses import JSONResponse

from orientscope.figures.compat import PINNED as FIGURE_PINNED

log = logging.getLogger(__name__)

# The minor versions every trick here was written and measured against (pyproject.toml pins them).
PINNED = {"dash": "4.4", **FIGURE_PINNED}


# ----------------------------------------------------------------- 1. callback answer encoding
# Dash encodes every callback answer with plotly's ``to_json_plotly`` (through the name
# ``dash._callback.to_json``), which escapes "<", ">", "/", U+2028 and U+2029 so the JSON could
# sit inside a <script> element. Escaping "<" already keeps "</script>" out; escaping "/" too
# rewrites every slash of a map's base64 arrays, with the GIL held, and sends more bytes.
# Measured on a full-QM9 map answer (392,493 points; row "callback: map recolour" of the load
# test): 4.7 ms to encode against 7.5 ms with plotly's encoder (-37 %), 2.12 MB against 2.32 MB.

_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
_ESCAPES = tuple((char.encode(), f"\\u{ord(char):04x}".encode()) for char in ("<", ">", "\u2028", "\u2029"))


def answer_json(value) -> str:
    """``value`` as JSON text, safe to embed in HTML; what plotly's encoder gives, parsed alike."""
    try:
        raw = orjson.dumps(value, option=_OPTIONS)
    except TypeError:  # Dash components and other objects only plotly's encoder knows
        return to_json_plotly(value)
    for char, escaped in _ESCAPES:
        if char in raw:
            raw = raw.replace(char, escaped)
    return raw.decode()


_FAST_ANSWERS: contextvars.ContextVar[bool] = contextvars.ContextVar("orientscope_fast_answers", default=False)


def _encode_answer(value) -> str:
    return answer_json(value) if _FAST_ANSWERS.get() else dash._utils.to_json(value)


_INSTALLS: set[object] = set()  # one token per install not yet ended
_INSTALLS_LOCK = threading.Lock()
_DASH_ENCODER: list = [None]  # what Dash's callback module used before the first install


def install_answer_encoder() -> Callable[[], None]:
    """Let callbacks dispatched by :func:`dispatch_in_threads` answer through :func:`answer_json`.

    Dash looks its encoder up as a module global, so the replacement is process-wide; it
    uses :func:`answer_json` only inside our dispatch (a context variable), and every other
    Dash app of the process keeps plotly's encoding. Checked for Dash 4.4 (2026-12): there is
    no per-app or per-backend encoder setting to use instead (``Dash(...)`` takes none, and the
    callback wrapper in ``dash._callback`` calls ``to_json(response)`` itself), so the swap
    cannot be narrowed further (the encoding canary of the tests fails if that changes). Returns a
    function that ends this install (a second call does nothing); Dash's own encoder comes back when
    every install of the process has ended (several apps may share a process: tests, benchmarks).
    """
    with _INSTALLS_LOCK:
        if not _INSTALLS:
            _DASH_ENCODER[0] = dash._callback.to_json
            dash._callback.to_json = _encode_answer
        token = object()
        _INSTALLS.add(token)

    def restore() -> None:
        with _INSTALLS_LOCK:
            if token in _INSTALLS:
                _INSTALLS.remove(token)
                if not _INSTALLS:
                    dash._callback.to_json = _DASH_ENCODER[0]

    return restore


# ----------------------------------------------------------------- 2. callbacks in worker threads
# Dash 4's FastAPI backend dispatches a callback on the event loop: it calls a plain (sync)
# callback there, and for a coroutine callback it still builds and JSON-encodes the answer
# there, which for a map is megabytes of work. Either way every other request of the process,
# REST reads included, waits behind it. So callbacks stay plain functions, and Dash's whole
# dispatch of one request (its route's endpoint, a coroutine) runs in a worker thread. With a
# plain callback that dispatch never awaits anything, so the thread finishes the coroutine by
# hand, without an event loop; ``dash.callback_context`` works because the thread runs in a
# copy of the request's context. Measured (load-test rows "rest: *"): a REST read sent while
# 4 full-QM9 map callbacks are being answered waits 46 ms in threads against 91 ms on the loop.

CALLBACK_PATH = "_dash-update-component"
# Callbacks are mostly Python holding the GIL: more threads only share it more finely, which
# stretches every callback of a burst (40 threads doubled the map-recolour p95 of 32 users
# arriving at once, against 2-4); a few keep one slow callback from holding up the rest.
CALLBACK_THREADS = 4


class RejectedInput(Exception):
    """A callback cannot use its inputs; the callback route answers 422 with ``detail``."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def finish_without_loop(coro):
    """The result of a coroutine that never suspends (Dash's dispatch of a plain callback)."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("a Dash callback awaited: register plain functions, which run in worker threads")


def dispatch_in_threads(server: FastAPI, routes_prefix: str = "/") -> None:
    """Replace Dash's callback route by one that runs Dash's own dispatch in a worker thread.

    A :class:`RejectedInput` raised by a callback becomes a 422 ``{"detail": ...}``.
    """
    path = routes_prefix + CALLBACK_PATH
    route = next((r for r in server.router.routes if isinstance(r, APIRoute) and r.path == path), None)
    if route is None:
        raise RuntimeError(f"Dash has no callback route {path!r} on this server")
    dash_dispatch = route.endpoint
    limiter = anyio.CapacityLimiter(CALLBACK_THREADS)

    def run(request: Request):
        _FAST_ANSWERS.set(True)  # in this thread's copy of the context only
        return finish_without_loop(dash_dispatch(request))

    async def dispatch(request: Request):
        context = contextvars.copy_context()  # Dash's current request and our request id
        try:
            return await anyio.to_thread.run_sync(context.run, run, request, limiter=limiter)
        except RejectedInput as err:
            return JSONResponse({"detail": err.detail}, status_code=422)

    server.router.routes.remove(route)
    server.add_api_route(path, dispatch, methods=sorted(route.methods), name=route.name, include_in_schema=False)


# ----------------------------------------------------------------- 3. only the first screen's scripts
# With ``eager_loading=True`` Dash puts every lazily loaded chunk of every component library into
# the page: MathJax (2.1 MB), markdown and two syntax highlighters, the date picker, the table's
# export, ... about 10 MB of JavaScript that a new browser parses before it asks for the layout,
# though the first screen uses none of it. Without eager loading, Dash would fetch plotly.js only
# once the layout has rendered a graph (a second round trip and 1.5 MB, serialised after the
# layout). So: lazy loading, plus the few chunks the first screen draws with, as plain scripts
# at the same fingerprinted (long-cached) URLs Dash itself would give them. The dcc graph uses
# ``window.Plotly`` when it is already there; webpack registers chunks loaded ahead of their use.
# Measured with tests/bench/bench_ui.py (cold browser, full QM9, busy machine, together with 3Dmol.js
# loading lazily): first screen drawn 4.01 s against 5.21 s, scripts run 2.15 s against 2.44 s.
FIRST_SCREEN_CHUNKS = (
    ("plotly", "package_data/plotly.min.js"),
    ("dash", "dcc/async-graph.js"),
    ("dash", "dcc/async-dropdown.js"),
)


def first_screen_scripts(requests_prefix: str = "/") -> list[str]:
    """URLs of :data:`FIRST_SCREEN_CHUNKS`, fingerprinted as Dash fingerprints its own scripts."""
    import importlib
    import os

    from dash.fingerprint import build_fingerprint

    urls = []
    for namespace, rel_path in FIRST_SCREEN_CHUNKS:
        package = importlib.import_module(namespace)
        library = importlib.import_module(f"{namespace}.{os.path.split(rel_path)[0]}") if namespace == "dash" else None
        version = (library or package).__version__
        modified = int(os.stat(os.path.join(os.path.dirname(package.__file__), rel_path)).st_mtime)
        urls.append(
            f"{requests_prefix}_dash-component-suites/{namespace}/{build_fingerprint(rel_path, version, modified)}"
        )
    return urls


# ----------------------------------------------------------------- 5. the page's first paint in Dash's index
# The page HTML carries the map's first paint (app/first_paint.py) just after Dash's root element, through
# Dash's public ``interpolate_index`` override and its ``app_entry`` markup (the root element with its
# "Loading..." placeholder, which style.css hides while a first paint is on the page:
# ``body:has(.first-paint-page) ._dash-loading``). Dash's renderer replaces the root's content only, so
# the first paint stays on screen until Dash's page has rendered. Saves what the first paint saves: the
# map drawn at 0.31-0.45 s after navigation on full QM9 against 3.5 s for Dash's (tests/bench/bench_ui.py).
DASH_LOADING_CLASS = "_dash-loading"  # Dash's placeholder in app_entry (the canary checks it is still there)


def add_after_app_entry(dash_app, markup: Callable[[], str]) -> None:
    """Put ``markup()`` (evaluated per page request; "" for none) just after Dash's root element."""
    plain = dash_app.interpolate_index

    def interpolate_index(**kwargs):
        extra = markup()
        if extra:
            kwargs["app_entry"] = kwargs.get("app_entry", "") + extra
        return plain(**kwargs)

    dash_app.interpolate_index = interpolate_index


def add_to_head(dash_app, markup: Callable[[], str]) -> None:
    """Put ``markup()`` (evaluated per page request; "" for none) at the start of the page's head, before its
    stylesheets (Dash's ``metas`` come first in its index)."""
    plain = dash_app.interpolate_index

    def interpolate_index(**kwargs):
        extra = markup()
        if extra:
            kwargs["metas"] = extra + kwargs.get("metas", "")
        return plain(**kwargs)

    dash_app.interpolate_index = interpolate_index


# ----------------------------------------------------------------- 6. the page's query on the layout request
# The layout arrives with the page's view already resolved (app/initial_view.py): the map is in it, instead of a
# callback round trip from the URL to the view state and another one to the map. The page knows its own query,
# so it says so: this script, in the page before Dash's renderer, adds it as a header to the renderer's layout
# request (Dash's renderer asks for ``_dash-layout`` through ``window.fetch``, looked up when it asks). It
# replaces the Referer, which a browser may strip or trim (Referrer-Policy) and which keyed the cache on a
# header meant for something else. The first paint's choice of a molecule (history.replaceState) is in
# ``location.search`` by the time the layout is asked for, as it was in the Referer.
LAYOUT_ROUTE = "_dash-layout"
PAGE_QUERY_HEADER = "X-OrientScope-Page"
PAGE_QUERY_SCRIPT = (
    "<script>(function(){var f=window.fetch;window.fetch=function(u,o){"
    f"if(typeof u==='string'&&u.slice(-{len(LAYOUT_ROUTE)})==='{LAYOUT_ROUTE}'){{o=Object.assign({{}},o);"
    f"var h=new Headers(o.headers||{{}});h.set('{PAGE_QUERY_HEADER}',location.search);o.headers=h;}}"
    "return f.call(this,u,o);};})();</script>"
)


def send_page_query_with_layout(dash_app) -> None:
    """Make every page send its query string with Dash's layout request (:data:`PAGE_QUERY_HEADER`)."""
    add_after_app_entry(dash_app, lambda: PAGE_QUERY_SCRIPT)
