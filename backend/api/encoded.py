"""Fast answers for hot reads: in-memory reads on the event loop, orjson records, gzip encoded once.

GZipMiddleware leaves a response alone once it carries Content-Encoding, so a
body compressed once per result is not compressed again on every request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import orjson
from fastapi import Request, Response
from starlette.concurrency import run_in_threadpool

from orientscope.services.cache import WouldBlock, warm_only

T = TypeVar("T")

JSON = "application/json"


def accepts_gzip(request: Request) -> bool:
    return "gzip" in request.headers.get("accept-encoding", "").lower()


def json_bytes(request: Request, raw: bytes, gzipped: bytes | None = None) -> Response:
    """``raw`` JSON, or its ``gzipped`` twin when the client accepts gzip."""
    if gzipped is not None and accepts_gzip(request):
        return Response(gzipped, media_type=JSON, headers={"Content-Encoding": "gzip", "Vary": "Accept-Encoding"})
    return Response(raw, media_type=JSON, headers={"Vary": "Accept-Encoding"})


def json_record(record: dict) -> Response:
    """A dict of plain values and numpy arrays, encoded by orjson (NaN becomes null)."""
    return Response(orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY), media_type=JSON)


async def answer(fn: Callable[..., T], *args) -> T:
    """``fn(*args)`` on the event loop when all it reads is already in memory, else in a worker thread.

    Hot reads then skip the thread hand-off, and its GIL ping-pong, under load;
    a cold one (seconds of loading) never blocks the loop.
    """
    try:
        return warm_only(fn, *args)
    except WouldBlock:
        return await run_in_threadpool(fn, *args)
