"""Run Dash callbacks, and the encoding of their answers, in worker threads.

Dash 4's FastAPI backend dispatches a callback on the event loop: it calls a
plain (sync) callback there, and for a coroutine callback it still builds and
JSON-encodes the answer there, which for a map is megabytes of work. Either way
every other request of the process, REST reads included, waits behind it.

So callbacks stay plain functions, and Dash's whole dispatch of one request
runs in a worker thread (``dispatch_in_threads``). With a plain callback that
dispatch never awaits anything, so the thread finishes its coroutine without an
event loop; ``dash.callback_context`` works because the thread runs in a copy
of the request's context.
"""

from __future__ import annotations

import contextvars
import functools
import logging

import anyio
import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException

log = logging.getLogger(__name__)

# What a callback raises when a hand-made request feeds it values the page never sends
# (a string where the page sends a dict, a negative click count, ...).
MALFORMED_INPUT = (AttributeError, TypeError, KeyError, ValueError, IndexError)

CALLBACK_PATH = "_dash-update-component"
# Callbacks are mostly Python holding the GIL: more threads only share it more finely, which
# stretches every callback of a burst (40 threads doubled the map-recolour p95 of 32 users
# arriving at once, against 2-4); a few keep one slow callback from holding up the rest.
CALLBACK_THREADS = 4


def rejecting_malformed(fn):
    """The callback ``fn``, except that malformed inputs become a 422 naming it (logged with the
    traceback) instead of Dash's 500."""

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MALFORMED_INPUT as err:
            log.warning("callback %s rejected its input", fn.__name__, exc_info=True)
            detail = f"callback {fn.__name__!r} cannot use its inputs: {type(err).__name__}: {str(err)[:200]}"
            raise HTTPException(422, detail) from None

    return checked


def guarded(register):
    """Wrap ``app.callback`` so every callback it registers answers malformed input with a 422.

    The callbacks run in worker threads once ``dispatch_in_threads`` has been applied to the app.
    """

    def with_dependencies(*args, **kwargs):
        add = register(*args, **kwargs)

        def decorate(fn):
            add(rejecting_malformed(fn))
            return fn

        return decorate

    return with_dependencies


def finish_without_loop(coro):
    """The result of a coroutine that never suspends (Dash's dispatch of a plain callback)."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("a Dash callback awaited: register plain functions, which run in worker threads")


def dispatch_in_threads(server: FastAPI, routes_prefix: str = "/") -> None:
    """Replace Dash's callback route by one that runs Dash's own dispatch in a worker thread."""
    path = routes_prefix + CALLBACK_PATH
    route = next((r for r in server.router.routes if isinstance(r, APIRoute) and r.path == path), None)
    if route is None:
        raise RuntimeError(f"Dash has no callback route {path!r} on this server")
    dash_dispatch = route.endpoint
    limiter = anyio.CapacityLimiter(CALLBACK_THREADS)

    def run(request: Request):
        return finish_without_loop(dash_dispatch(request))

    async def dispatch(request: Request):
        context = contextvars.copy_context()  # Dash's current request and our request id
        return await anyio.to_thread.run_sync(context.run, run, request, limiter=limiter)

    server.router.routes.remove(route)
    server.add_api_route(path, dispatch, methods=sorted(route.methods), name=route.name, include_in_schema=False)
