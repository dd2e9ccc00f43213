"""The FastAPI application of the REST API under /api.

``create_api(data_dir)`` builds one app per call (no global state), so tests
and several workers each get their own. The dashboard is mounted on it by the
composition root, ``backend/server.py``; this package never imports ``app``.
"""

from __future__ import annotations

import os
import re

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES

from orientscope import __version__
from orientscope.api.deps import ApiSettings, KnownQueryOnly
from orientscope.api.docs import install_docs
from orientscope.api.errors import install_error_handlers, validation_body
from orientscope.api.middleware import BodyLimit, SelectiveGZip, install_middleware
from orientscope.api.routes import ROUTERS, datasets
from orientscope.core.settings import resolve_data_dir

API_PREFIX = "/api"
DESCRIPTION = """
Every precomputed OrientScope result, per-molecule poses and stateless canonicalisation.

Limits: molecule pages hold at most 1000 items (`limit`), neighbour queries at most 100 (`k`),
and `POST /api/canonicalize` accepts molecules of 1 to 2000 atoms (`ORIENTSCOPE_MAX_ATOMS_PER_MOLECULE`).
Unknown datasets and molecules answer 404, missing pipeline stages 409, malformed input 422.
"""


def create_api(
    data_dir: str | os.PathLike | None = None,
    read_only: bool = False,
    token: str | None = None,
    uncompressed_suffixes: tuple[str, ...] = (),
) -> FastAPI:
    """The REST API for one data directory.

    ``uncompressed_suffixes`` are paths (of a mounted app) whose answers skip gzip.
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
        skip_suffixes=uncompressed_suffixes,
        minimum_size=4096,  # below a few kB, compressing costs more CPU than it saves on the wire
        compresslevel=5,
        exclude_content_types=(*DEFAULT_EXCLUDED_CONTENT_TYPES, "application/vnd.apache.parquet"),
    )
    app.add_middleware(BodyLimit, prefix=API_PREFIX)
    # Outermost: request ids, security headers and access logs on every response.
    install_middleware(app)
    install_docs(app)
    for router in ROUTERS:
        app.include_router(router, prefix=API_PREFIX, dependencies=[KnownQueryOnly])
        if router is datasets.router:
            # Beside its resource, not after every router: a request is matched route by route, and the summary
            # mounted last cost 17 matches instead of 3 (+40 % CPU a request, one client's req/s -20 to -30 %).
            app.include_router(datasets.summary_router(), prefix=API_PREFIX, dependencies=[KnownQueryOnly])

    # Registered before the dashboard so that no /api path ever falls through to Dash.
    @app.api_route(
        f"{API_PREFIX}/{{path:path}}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"], include_in_schema=False
    )
    def unknown_api_path(request: Request) -> JSONResponse:
        if _allowed_methods(request):
            return _method_not_allowed(request)
        return JSONResponse(
            {"detail": f"unknown API path {request.url.path!r}; see {API_PREFIX}/docs"}, status_code=404
        )

    return app


async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
    """FastAPI's default answer, except that a 405 lists every method of the path in ``Allow``
    and an unparseable body is a 422 like every other malformed input."""
    if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
        return JSONResponse(validation_body("the request body is not valid JSON", ("body",)), status_code=422)
    if exc.status_code == 405 and request.url.path.startswith(API_PREFIX + "/"):
        return _method_not_allowed(request)
    return await http_exception_handler(request, exc)


def _method_not_allowed(request: Request) -> JSONResponse:
    """A 405 naming, and listing in ``Allow``, every method of the path."""
    allowed = ", ".join(_allowed_methods(request))
    detail = f"method {request.method} is not allowed on {request.url.path!r}; use {allowed}"
    return JSONResponse({"detail": detail}, status_code=405, headers={"Allow": allowed})


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
