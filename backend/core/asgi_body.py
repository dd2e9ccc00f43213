"""A request body read whole before a route sees it, within a byte limit, then handed on unchanged.

Plain functions on the ASGI ``receive`` callable (no web framework): the API's body limit
(``api/middleware.py``) and the dashboard's callback check (``app/request_guard.py``) both hold a body
before deciding on it, and neither layer may import the other.
"""

from __future__ import annotations


class BodyTooLarge(Exception):
    """The body went past the limit while it streamed in (the rest is not read)."""


async def read_body(receive, limit: int) -> bytes | None:
    """The whole body, or None if the client left first; BodyTooLarge past ``limit`` bytes."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(size)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def replaying(body: bytes, receive):
    """A ``receive`` that gives ``body`` once, whole, then defers to the client's (a disconnect)."""
    replayed = False

    async def replay() -> dict:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay
