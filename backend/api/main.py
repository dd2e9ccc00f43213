"""The FastAPI application: REST API under /api and, when available, the Dash dashboard at /.

``create_app(data_dir)`` builds one app per call (no global state), so tests
and several workers each get their own. ``app_from_env`` is the factory that
``uvicorn --factory`` (and ``orientscope serve --workers N``) imports.
"""

from __future__ import annotations

import gc
import logging
import os
import re
import sys
import threading
import time
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES

from backend import __version__
from backend.api.deps import ApiSettings
from backend.api.docs import install_docs
from backend.api.errors import install_error_handlers, validation_body
from backend.api.middleware import SelectiveGZip, install_middleware
from backend.api.routes import ROUTERS
from backend.core.settings import DATA_DIR_ENV, TOKEN_ENV, resolve_data_dir
from backend.services.cache import MAX_VIEWS
from backend.services.datasets import READY, dataset_summary, list_datasets
from backend.services.errors import NotComputed
from backend.services.molecules import list_molecules
from backend.services.neighbors import neighbors

log = logging.getLogger(__name__)

READ_ONLY_ENV = "ORIENTSCOPE_READ_ONLY"
API_PREFIX = "/api"
DASH_CALLBACK_PATH = "/_dash-update-component"
DASH_LAYOUT_PATH = "/_dash-layout"  # holds the map of the page's view (app/initial_view.py)
DESCRIPTION = """
Every precomputed OrientScope result, per-molecule poses and stateless canonicalisation.

Limits: molecule pages hold at most 1000 items (`limit`), neighbour queries at most 100 (`k`),
and `POST /api/canonicalize` accepts molecules of 1 to 2000 atoms (`ORIENTSCOPE_MAX_ATOMS_PER_MOLECULE`).
Unknown datasets and molecules answer 404, missing pipeline stages 409, malformed input 422.
"""


def create_app(
    data_dir: str | os.PathLike | None = None,
    read_only: bool = False,
    token: str | None = None,
    dashboard: bool = True,
    warm: bool = False,
) -> FastAPI:
    """The API (and the dashboard, if ``app.dashboard`` is importable) for one data directory.

    ``warm`` loads the ready datasets into the read cache in a background thread,
    so the first requests do not pay for reading the store.
    """
    settings = ApiSettings(data_dir=resolve_data_dir(data_dir), read_only=read_only, token=token or None)
    app = FastAPI(
        title="OrientScope API",
        version=__version__,
        description=DESCRIPTION,
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=None,  # served below from local files: no CDN
        redoc_url=None,
    )
    app.state.settings = settings
    install_error_handlers(app)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_middleware(
        SelectiveGZip,
        skip_suffixes=(DASH_CALLBACK_PATH, DASH_LAYOUT_PATH),
        minimum_size=4096,  # below a few kB, compressing costs more CPU than it saves on the wire
        compresslevel=5,
        exclude_content_types=(*DEFAULT_EXCLUDED_CONTENT_TYPES, "application/vnd.apache.parquet"),
    )
    # Outermost: request ids, security headers and access logs on every response.
    install_middleware(app)
    install_docs(app)
    for router in ROUTERS:
        app.include_router(router, prefix=API_PREFIX)

    # Registered before the dashboard so that no /api path ever falls through to Dash.
    @app.api_route(
        f"{API_PREFIX}/{{path:path}}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"], include_in_schema=False
    )
    def unknown_api_path(request: Request) -> JSONResponse:
        allowed = _allowed_methods(request)
        if allowed:
            detail = f"method {request.method} is not allowed on {request.url.path!r}; use {', '.join(allowed)}"
            return JSONResponse({"detail": detail}, status_code=405, headers={"Allow": ", ".join(allowed)})
        return JSONResponse(
            {"detail": f"unknown API path {request.url.path!r}; see {API_PREFIX}/docs"}, status_code=404
        )

    if dashboard:
        _mount_dashboard(app, settings)
    if warm:
        threading.Thread(target=_warm, args=(settings.data_dir,), name="orientscope-warm", daemon=True).start()
    return app


def _warm(data_dir: Path, delay_s: float = 2.0) -> None:
    # Let uvicorn bind and answer its first requests before loading the store competes for the GIL.
    time.sleep(delay_s)
    for info in list_datasets(data_dir)[:MAX_VIEWS]:
        if info.status == READY:
            try:
                dataset_summary(data_dir, info.id)
                page = list_molecules(data_dir, info.id, limit=1)  # formulas and group ids
                for by in ("pose", "chemistry") if page.items else ():  # k-d tree and fingerprint columns
                    try:
                        neighbors(data_dir, info.id, page.items[0]["id"], by, 1)
                    except NotComputed:  # no chemistry stage for this dataset
                        pass
            except Exception:  # a warm-up failure must never stop the server; requests will report it
                log.exception("warming %s failed", info.id)
    freeze_long_lived()


def freeze_long_lived() -> None:
    """Exempt every object alive now (modules, the app, warmed stores) from later garbage collections.

    A full collection walks all tracked objects with the GIL held: about 0.1 s for a
    warmed server's 150k objects, which stalled every request in flight.
    """
    gc.collect()
    gc.freeze()


async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
    """FastAPI's default answer, except that a 405 lists every method of the path in ``Allow``
    and an unparseable body is a 422 like every other malformed input."""
    if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
        return JSONResponse(validation_body("the request body is not valid JSON", ("body",)), status_code=422)
    if exc.status_code == 405 and request.url.path.startswith(API_PREFIX + "/"):
        allowed = _allowed_methods(request)
        detail = f"method {request.method} is not allowed on {request.url.path!r}; use {', '.join(allowed)}"
        return JSONResponse({"detail": detail}, status_code=405, headers={"Allow": ", ".join(allowed)})
    return await http_exception_handler(request, exc)


def _allowed_methods(request: Request) -> list[str]:
    """Methods the OpenAPI document lists for this request's path (for a 405 instead of a 404)."""
    app = request.app
    patterns = getattr(app.state, "path_patterns", None)
    if patterns is None:
        patterns = [
            (re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path)) + "$"), [m.upper() for m in ops])
            for path, ops in app.openapi()["paths"].items()
        ]
        app.state.path_patterns = patterns
    return sorted({m for rx, methods in patterns if rx.match(request.url.path) for m in methods})


def _mount_dashboard(app: FastAPI, settings: ApiSettings) -> None:
    try:
        from app.dashboard import create_dash
    except ModuleNotFoundError as err:
        if err.name not in ("app", "app.dashboard"):
            raise
        log.info("app.dashboard is not available; serving the API only")
        return
    create_dash(server=app, data_dir=Path(settings.data_dir), read_only=settings.read_only)
    from dash.exceptions import DependencyException

    # Dash serves only registered component files and raises this for any other path: a 404, not a 500.
    app.add_exception_handler(DependencyException, _unknown_dash_file)


async def _unknown_dash_file(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": f"no such dashboard file {request.url.path!r}"}, status_code=404)


# Callbacks run Python in worker threads; the event loop answering REST reads waits up to one
# switch interval for the GIL at each step, so a shorter interval keeps short requests short.
GIL_SWITCH_S = 0.001


def tune_for_serving() -> None:
    """Process settings of a server process (not of tests or the CLI's batch commands)."""
    sys.setswitchinterval(GIL_SWITCH_S)


def app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory``: settings from ORIENTSCOPE_DATA_DIR, _READ_ONLY and _TOKEN."""
    tune_for_serving()
    read_only = os.environ.get(READ_ONLY_ENV, "").lower() in ("1", "true", "yes")
    return create_app(os.environ.get(DATA_DIR_ENV), read_only=read_only, token=os.environ.get(TOKEN_ENV), warm=True)
