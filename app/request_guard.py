"""Malformed Dash callback requests get a 422 with a reason instead of Dash's 500.

Dash's own middleware turns any error while handling ``/_dash-update-component``
into a 500, including a body that is not JSON or names no registered callback.
This ASGI guard is installed outside Dash's middleware, reads the (small)
callback body once, checks its envelope and hands the same bytes on.
"""

from __future__ import annotations

import json

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from orientscope.core.asgi_body import BodyTooLarge, read_body, replaying

CALLBACK_PATH = "/_dash-update-component"
# Callback bodies carry view state and the groups table; uploads never travel through a callback (the
# browser posts them straight to POST /api/datasets, app/pages_upload.py). This only bounds what the guard buffers.
MAX_BODY_BYTES = 64 * 2**20


def envelope_problem(body: bytes, known_outputs) -> str | None:
    """Why ``body`` is not a callback request Dash can dispatch (None if it is)."""
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: "[[[[…" nested thousands deep
        return "the request body is not valid JSON (or is nested too deeply)"
    if not isinstance(payload, dict):
        return "the request body must be a JSON object"
    output = payload.get("output")
    if not isinstance(output, str):
        return "'output' must be a string naming a callback output"
    if output not in known_outputs:
        return f"no callback has the output {output[:200]!r}"
    spec = known_outputs[output]
    if "callback" not in spec:
        return f"the callback of {output[:200]!r} runs in the browser, not on the server"
    if not isinstance(payload.get("outputs"), dict | list):
        return "'outputs' must be an object or a list"
    for key in ("inputs", "state", "changedPropIds"):
        if key in payload and not isinstance(payload[key], list):
            return f"{key!r} must be a list"
    for item in payload.get("inputs", []) + payload.get("state", []):
        if not _entries_named(item):
            return "every input and state entry needs an 'id' and a 'property'"
    # Dash reads these by position and by shape: a mismatch was an IndexError or TypeError inside it, a 500.
    for key in ("inputs", "state"):
        expected = len(spec.get(key, ()))
        if len(payload.get(key, [])) != expected:
            return f"{key!r} must have {expected} entries for the callback of {output[:200]!r}"
    outputs, n_outputs = payload["outputs"], output.count("...") + 1 if output.startswith("..") else 1
    if output.startswith(".."):
        if not (isinstance(outputs, list) and len(outputs) == n_outputs and all(map(_entries_named, outputs))):
            return f"'outputs' must be a list of {n_outputs} entries with an 'id' and a 'property'"
    elif not (isinstance(outputs, dict) or output.startswith("{")) or not _entries_named(outputs):  # "{": ALL ids
        return "'outputs' must be an entry with an 'id' and a 'property'"
    return None


def _entries_named(item) -> bool:
    """An input, state or output entry (or a pattern-matching list of them) names its 'id' and 'property'."""
    entries = item if isinstance(item, list) else [item]
    return all(isinstance(e, dict) and "id" in e and isinstance(e.get("property"), str) for e in entries)


class DashRequestGuard:
    """ASGI middleware; ``dash_app`` supplies the registered callback outputs."""

    def __init__(self, app: ASGIApp, dash_app) -> None:
        self.app = app
        self.dash_app = dash_app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not scope["path"].endswith(CALLBACK_PATH):
            await self.app(scope, receive, send)
            return
        try:
            body = await read_body(receive, MAX_BODY_BYTES)
        except BodyTooLarge:
            await JSONResponse({"detail": "callback request too large"}, status_code=413)(scope, receive, send)
            return
        if body is None:
            return
        problem = envelope_problem(body, self.dash_app.callback_map)
        if problem:
            await JSONResponse({"detail": problem}, status_code=422)(scope, receive, send)
            return
        await self.app(scope, replaying(body, receive), send)
