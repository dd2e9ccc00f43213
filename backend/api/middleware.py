"""Cross-cutting HTTP concerns: request ids with structured access logs,
security headers, and a CORS policy that is closed unless configured."""

from __future__ import annotations

import itertools
import json
import logging
import os
import time

from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from orientscope.core.asgi_body import BodyTooLarge, read_body, replaying
from orientscope.core.numbers import format_number
from orientscope.core.settings import env_name, settings

access_log = logging.getLogger("orientscope.access")

REQUEST_ID_HEADER = "x-request-id"
# Dash needs inline scripts/styles and eval-free blob workers for WebGL; nothing
# is loaded from another origin.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "worker-src 'self' blob:; connect-src 'self'; font-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'self'; form-action 'self'"
)
SECURITY_HEADERS = {
    b"x-content-type-options": b"nosniff",
    b"x-frame-options": b"DENY",
    # Our own pages tell /_dash-layout which view they show (app/initial_view.py); no other site learns anything.
    b"referrer-policy": b"same-origin",
    b"cross-origin-opener-policy": b"same-origin",
    b"permissions-policy": b"camera=(), microphone=(), geolocation=()",
    b"content-security-policy": CONTENT_SECURITY_POLICY.encode(),
}


# A random per-process prefix plus a counter: unique across workers and restarts, and cheaper than uuid4.
_ID_PREFIX = os.urandom(6).hex()
_ID_COUNTER = itertools.count(1)


def _clean_request_id(raw: str | None) -> str:
    """Accept a caller's id only if it is short and plain; else make one."""
    if raw and len(raw) <= 64 and all(c.isalnum() or c in "-_." for c in raw):
        return raw
    return f"{_ID_PREFIX}-{next(_ID_COUNTER):x}"


class RequestContextMiddleware:
    """Adds a request id and security headers to every response and logs one
    JSON line per request (method, path, status, duration, request id)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        request_id = _clean_request_id(headers.get(REQUEST_ID_HEADER.encode(), b"").decode("latin-1") or None)
        scope.setdefault("state", {})["request_id"] = request_id
        started = time.perf_counter()
        status = {"code": 500}

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                raw = list(message.get("headers", []))
                present = {k.lower() for k, _ in raw}
                raw.append((REQUEST_ID_HEADER.encode(), request_id.encode()))
                for key, value in SECURITY_HEADERS.items():
                    if key not in present:
                        raw.append((key, value))
                message["headers"] = raw
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            if access_log.isEnabledFor(logging.INFO):
                access = {
                    "request_id": request_id,
                    "method": scope.get("method"),
                    "path": scope.get("path"),
                    "status": status["code"],
                    "ms": round(1000 * (time.perf_counter() - started), 2),
                    "client": (scope.get("client") or ["?"])[0],
                }
                access_log.info(
                    "%s %s %s", access["method"], access["path"], access["status"], extra={"access": access}
                )


class SelectiveGZip:
    """Starlette's GZipMiddleware, except for paths whose answers compress badly for their CPU cost.

    Dash callback answers and the layout are mostly base64 map arrays: gzip saves about 30 % of
    their bytes but costs about 0.1 s of server CPU per 2 MB map, which a
    shared server under load cannot spare.
    """

    def __init__(self, app: ASGIApp, skip_suffixes: tuple[str, ...] = (), **gzip_options) -> None:
        self.app = app
        self.gzip = GZipMiddleware(app, **gzip_options)
        self.skip_suffixes = skip_suffixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].endswith(self.skip_suffixes):
            await self.app(scope, receive, send)
        else:
            await self.gzip(scope, receive, send)


def cors_origins() -> list[str]:
    """Allowed cross-origin callers: none unless listed ($ORIENTSCOPE_CORS_ORIGINS, comma-separated)."""
    return list(settings().cors_origins)


class BodyLimit:
    """413 for an API request body other than a file upload above ``$ORIENTSCOPE_MAX_REQUEST_MB``, counted while
    it streams in (a Content-Length above it is refused before any byte is read).

    File uploads (``multipart/form-data``) have their own, larger limit where they are spooled to disk
    (``api/uploads.py``); every other body is parsed in memory, so it is held here until it is whole or too big,
    then handed to the route unchanged."""

    def __init__(self, app: ASGIApp, prefix: str) -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] in ("GET", "HEAD", "OPTIONS")
            or not scope["path"].startswith(self.prefix)
        ):
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if headers.get(b"content-type", b"").lower().startswith(b"multipart/form-data"):
            await self.app(scope, receive, send)
            return
        limit_mb = settings().max_request_mb
        limit = int(limit_mb * 2**20)
        declared = headers.get(b"content-length", b"").strip()
        if declared.isdigit() and int(declared) > limit:
            await self.too_large(scope, receive, send, limit_mb)
            return
        try:
            body = await read_body(receive, limit)
        except BodyTooLarge:
            await self.too_large(scope, receive, send, limit_mb)
            return
        if body is not None:
            await self.app(scope, replaying(body, receive), send)

    @staticmethod
    async def too_large(scope: Scope, receive: Receive, send: Send, limit_mb: float) -> None:
        from starlette.responses import JSONResponse

        detail = (
            f"the request body is larger than {format_number(limit_mb, 'g')} MB, this server's limit for requests "
            f"other than file uploads ({env_name('max_request_mb')})"
        )
        await JSONResponse({"detail": detail}, status_code=413)(scope, receive, send)


def install_middleware(app) -> None:
    """CORS (closed by default) inside, request context outermost."""
    allowed = cors_origins()
    if allowed:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=allowed,
            allow_methods=["GET", "POST", "PATCH", "DELETE"],
            allow_headers=["authorization", "content-type", REQUEST_ID_HEADER],
        )
    app.add_middleware(RequestContextMiddleware)


class JsonLogFormatter(logging.Formatter):
    """One JSON object per log line: time, level, logger, and the access record of a request
    (logged with ``extra={"access": {...}}``) or else the message."""

    def format(self, record: logging.LogRecord) -> str:
        payload = {"time": self.formatTime(record), "level": record.levelname, "logger": record.name}
        access = getattr(record, "access", None)
        if access is not None:
            payload["access"] = access
        else:
            payload["message"] = record.getMessage()
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload)
