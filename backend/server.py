"""The composition root: the REST API with the Dash dashboard mounted at /.

The only module that imports both ``orientscope.api`` and ``app`` (the import-linter
contract in pyproject.toml keeps it so). ``create_app(data_dir)`` builds one app per
call, so tests and several workers each get their own; ``app_from_env`` is the factory
that ``uvicorn --factory`` (and ``orientscope serve --workers N``) imports.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import os
import sys
import threading
import time
from pathlib import Path

from dash.exceptions import DependencyException
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from orientscope.api.edge import edge_rules, install_edge
from orientscope.api.main import create_api
from orientscope.api.middleware import JsonLogFormatter
from orientscope.app import map_paint
from orientscope.app.first_paint import warm_landing
from orientscope.app.initial_view import LAYOUT_PATH
from orientscope.app.mounting import mount_dashboard
from orientscope.app.request_guard import CALLBACK_PATH
from orientscope.core.settings import check_read_token, check_write_access, resolve_read_token, settings
from orientscope.figures.mapfigure import DEFAULT_VIEWPORT
from orientscope.services import depiction, map_raster
from orientscope.services.cache import view_cache
from orientscope.services.datasets import READY, dataset_summary, list_datasets
from orientscope.services.errors import NotComputed
from orientscope.services.map_view import MapQuery, view_points
from orientscope.services.molecules import list_molecules, warm_search
from orientscope.services.neighbors import neighbors

log = logging.getLogger(__name__)

FACTORY = "orientscope.server:app_from_env"


def create_app(
    data_dir: str | os.PathLike | None = None,
    read_only: bool = False,
    token: str | None = None,
    dashboard: bool = True,
    warm: bool = False,
    bind_host: str | None = "127.0.0.1",
    allowed_hosts: tuple[str, ...] = (),
    read_token: str | None = None,
) -> FastAPI:
    """The API, with the dashboard at / unless ``dashboard`` is false, for one data directory.

    ``bind_host`` is the address the server listens on (None: unknown); with ``allowed_hosts`` it
    decides which Host names are answered, and ``read_token`` makes every read need a token
    (backend/api/edge.py, the outermost layer).

    ``warm`` loads the ready datasets into the read cache in a background thread,
    so the first requests do not pay for reading the store; ``/api/health`` says
    ``warming`` until it is done. Datasets stored before the sharded layout are
    listed as needing ``orientscope migrate`` and never converted here.
    """
    check_read_token(read_only, token, read_token)
    # Dash's callback and layout answers are compressed (or not) by Dash's own rules. A zoom's figure is
    # mostly a base64 PNG: gzip saved a quarter of its 2 MB on the 10M-molecule map and cost 100-600 ms.
    uncompressed = (CALLBACK_PATH, LAYOUT_PATH, *map_paint.REGION_PATHS)
    server = create_api(data_dir, read_only=read_only, token=token, uncompressed_suffixes=uncompressed)
    # The map's drawings (api/routes/orientation_map.py) come from the dashboard's figure builders, which the
    # API cannot import: handed over here, with or without the dashboard mounted.
    server.state.map_painter = map_paint
    settings = server.state.settings
    if dashboard:
        mount_dashboard(server=server, data_dir=Path(settings.data_dir), read_only=settings.read_only)
        # Dash serves only registered component files and raises this for any other path: a 404, not a 500.
        server.add_exception_handler(DependencyException, _unknown_dash_file)
    # Last, so it is outermost: no route (first paint, Dash's websocket, assets) is served before it.
    install_edge(server, edge_rules(bind_host, allowed_hosts, write_token=token, read_token=read_token))
    server.state.warming = warm  # /api/health reports it: latencies measured before it clears are not a warm server's
    if warm:
        landing = warm_landing if dashboard else None
        threading.Thread(target=_warm_then_clear, args=(server, landing), name="orientscope-warm", daemon=True).start()
    return server


def _warm_then_clear(server: FastAPI, landing=None) -> None:
    try:
        _warm(server.state.settings.data_dir, landing=landing)
    finally:
        server.state.warming = False


async def _unknown_dash_file(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": f"no such dashboard file {request.url.path!r}"}, status_code=404)


def _warm(data_dir: Path, delay_s: float = 2.0, landing=None) -> None:
    """Load the ready datasets' default views into the caches; then ``landing(data_dir)``, the dashboard's
    landing page (its density pair: about 10 s at 10M molecules, which the first visitor would wait for);
    then the warmed datasets' SMARTS indexes (``services.molecules.warm_search``)."""
    # Let uvicorn bind and answer its first requests before loading the store competes for the GIL.
    time.sleep(delay_s)
    try:
        map_raster.warm_up()  # numba and datashader compile their kernels once per process (seconds)
    except Exception:  # the first map request would compile them instead
        log.exception("warming the map aggregation failed")
    try:
        depiction.warm_up()  # RDKit's drawing, imported by the first hover preview otherwise (80 ms)
    except Exception:
        log.exception("warming the 2D depictions failed")
    # Warm datasets in listed order while the view cache has room for one more of the largest seen
    # so far, so warming never evicts a dataset it has just loaded.
    views = view_cache()
    largest, warmed = 0, []
    for info in list_datasets(data_dir):
        if info.status != READY:
            continue
        if views.max_bytes - views.current_bytes < largest:  # the next one would likely evict a warmed one
            break
        before = views.current_bytes
        try:  # the default map view, indexed: it reads only the frames, so it is ready first whatever the size
            points = view_points(data_dir, MapQuery(info.id))
            map_raster.prepare(points)
            # and its first image, as a page's first paint draws it (about a second at 10M molecules)
            map_raster.render_map(points, DEFAULT_VIEWPORT)
            map_raster.nearest_point(points, 0.0, 0.0, DEFAULT_VIEWPORT.pixel_size)  # a hover's kernel, at its types
        except Exception:
            log.exception("warming the map of %s failed", info.id)
        try:
            dataset_summary(data_dir, info.id)
            page = list_molecules(data_dir, info.id, limit=1)  # formulas and group ids
            for by in ("pose", "chemistry") if page.items else ():  # k-d tree and fingerprint columns
                try:
                    neighbors(data_dir, info.id, page.items[0]["id"], by, 1)
                except NotComputed:  # no chemistry stage for this dataset
                    pass
            views.get(data_dir, info.id)  # re-weighs the view with the pieces just built
            warmed.append(info.id)
        except Exception:  # a warm-up failure must never stop the server; requests will report it
            log.exception("warming %s failed", info.id)
        largest = max(largest, views.current_bytes - before)
    if landing is not None:
        try:
            landing(data_dir)
        except Exception:
            log.exception("warming the landing page failed")
    for dataset_id in warmed:  # last: an index not kept with its result is parsed here (9 s on QM9)
        try:
            warm_search(data_dir, dataset_id)  # the first SMARTS search took 14 s building it
        except Exception:
            log.exception("warming the SMARTS index of %s failed", dataset_id)
    freeze_long_lived()


def freeze_long_lived() -> None:
    """Exempt every object alive now (modules, the app, warmed stores) from later garbage collections.

    A full collection walks all tracked objects with the GIL held: about 0.1 s for a
    warmed server's 150k objects, which stalled every request in flight.
    """
    gc.collect()
    gc.freeze()


# Callbacks run Python in worker threads; the event loop answering REST reads waits up to one
# switch interval for the GIL at each step, so a shorter interval keeps short requests short.
GIL_SWITCH_S = 0.001


# glibc gives each thread that allocates its own malloc arena (up to 8 per core), and memory freed
# in one arena is not reused by the others: a worker's callback and REST threads each kept
# their own high-water mark of map arrays. Measured under the load test's 32 users: resident
# memory grew to 1382 MB with the default, stayed at 1076 MB with 2 arenas, at the same latency.
MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # mallopt parameter number (glibc's malloc.h)


def limit_malloc_arenas(n: int = MALLOC_ARENAS) -> bool:
    """Cap the C library's malloc arenas at ``n`` for threads that allocate from now on.

    True if the C library took it (glibc); False where there is no ``mallopt`` (macOS, musl).
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt(_M_ARENA_MAX, n) == 1


def tune_for_serving() -> None:
    """Process settings of a server process (not of tests or the CLI's batch commands)."""
    sys.setswitchinterval(GIL_SWITCH_S)
    limit_malloc_arenas()


def app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory``: the app of :func:`~orientscope.core.settings.settings` (data dir,
    read-only, tokens, host, anonymous writes, allowed hosts), which ``orientscope serve --workers N`` hands
    to each worker as one ``ORIENTSCOPE_SETTINGS`` value.

    uvicorn does not tell the factory which address it binds, so ``ORIENTSCOPE_HOST``
    does (``orientscope serve`` sets it); without it the address counts as reachable
    from outside and the write rule of :func:`check_write_access` applies.
    """
    current = settings()
    read_token = resolve_read_token()
    warning = check_write_access(
        current.host, current.read_only, current.token, current.allow_anonymous_writes, read_token
    )
    if warning:
        log.warning(warning)
    tune_for_serving()
    return create_app(
        current.data_dir,
        read_only=current.read_only,
        token=current.token,
        warm=True,
        bind_host=current.host,
        allowed_hosts=current.allowed_hosts,
        read_token=read_token,
    )


def serve_logging(access_log: bool = True) -> dict:
    """uvicorn.run arguments: uvicorn's console logging, plus our JSON access lines (uvicorn's own off).

    A dict config, because uvicorn applies it in every worker process.
    """
    from uvicorn.config import LOGGING_CONFIG

    config = {
        **LOGGING_CONFIG,
        "formatters": {**LOGGING_CONFIG["formatters"], "orientscope_json": {"()": JsonLogFormatter}},
    }
    config["handlers"] = {
        **LOGGING_CONFIG["handlers"],
        "orientscope": {
            "formatter": "orientscope_json",
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stderr",
        },
    }
    config["loggers"] = {
        **LOGGING_CONFIG["loggers"],
        "orientscope.access": {
            "handlers": ["orientscope"],
            "level": "INFO" if access_log else "WARNING",
            "propagate": False,
        },
    }
    return {"log_config": config, "access_log": False}
