"""The server's edge: which Host names it answers, which pages may change anything, who may read.

:class:`EdgeGuard` is the outermost ASGI layer (``backend/server.py`` adds it after the
dashboard is mounted), so every route passes it first: the API, Dash's pages, assets and
callbacks, the first paint and Dash's websocket. In order, for HTTP and websocket:

1. **Host allowlist** (DNS rebinding): on a loopback bind only ``localhost``, ``127.0.0.1``,
   ``[::1]`` and ``--allowed-hosts`` names, with any port; otherwise 400 naming the option.
   On another bind the check applies only when ``--allowed-hosts`` is given.
2. **Origin rule** (cross-site writes): a request other than GET, HEAD or OPTIONS, and every
   websocket handshake, carries a valid Bearer token or comes from a page of this server
   (``Origin`` is the request's Host or an allowed name, or ``Sec-Fetch-Site: same-origin``);
   else 403, decided from the headers before any body is read. Without ``Origin`` a ``Referer``
   stands for it (a browser too old to send ``Origin`` on a form post). A request with none of
   these headers is not from a browser page (curl, the CLI) and keeps the API's own rules.
3. **Read token** (private servers): with one set, every route but the sign-in page and a
   minimal ``/api/health`` needs the token (``Authorization: Bearer``) or the sign-in cookie.
   ``?token=`` signs in once: the answer is a redirect to the same URL without it.

Tokens are compared and the cookie derived in ``backend/api/tokens.py``.
"""

from __future__ import annotations

import html
import ipaddress
import logging
import re
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.requests import cookie_parser
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from orientscope.api.middleware import RequestContextMiddleware, cors_origins
from orientscope.api.tokens import Tokens, bearer, cookie_name, session_value
from orientscope.core.settings import ALLOWED_HOSTS_ENV, READ_TOKEN_ENV, TOKEN_ENV, is_loopback

log = logging.getLogger(__name__)

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SIGN_IN_PATH = "/sign-in"
SIGN_OUT_PATH = "/sign-out"
HEALTH_PATH = "/api/health"
TOKEN_PARAM = "token"
SESSION_MAX_AGE_S = 30 * 24 * 3600
MAX_SIGN_IN_BYTES = 8192


@dataclass(frozen=True)
class EdgeRules:
    """What the guard checks for one server.

    ``hosts`` is None when any Host is answered (a non-loopback bind without ``--allowed-hosts``);
    ``trusted`` are the operator's own ``--allowed-hosts`` names, whose pages may write;
    ``cors`` the origins of ``ORIENTSCOPE_CORS_ORIGINS``, which may too.
    """

    hosts: frozenset[str] | None
    trusted: frozenset[str] = frozenset()
    cors: frozenset[str] = frozenset()
    tokens: Tokens = field(default_factory=Tokens)


def edge_rules(
    bind_host: str | None, allowed_hosts=(), write_token: str | None = None, read_token: str | None = None
) -> EdgeRules:
    """The rules of a server bound to ``bind_host`` (None: unknown, treated as reachable from outside)."""
    trusted = frozenset(allowed_hosts)
    hosts = None
    if is_loopback(bind_host) or trusted:
        hosts = LOOPBACK_NAMES | trusted | _address_names(bind_host)
    tokens = Tokens(write=write_token or None, read=read_token or None)
    cors = frozenset(origin.lower() for origin in cors_origins())
    return EdgeRules(hosts=hosts, trusted=trusted, cors=cors, tokens=tokens)


def _address_names(bind_host: str | None) -> frozenset[str]:
    """The bound address as a Host header names it, when it is one address (not 0.0.0.0 or ::)."""
    try:
        address = ipaddress.ip_address((bind_host or "").strip("[]"))
    except ValueError:
        return frozenset({bind_host.lower()}) if bind_host else frozenset()
    if address.is_unspecified:
        return frozenset()
    return frozenset({f"[{address}]" if address.version == 6 else str(address)})


def install_edge(app, rules: EdgeRules) -> None:
    """Make :class:`EdgeGuard` the outermost layer of ``app``, with the request context just inside it,
    so that every route (first paint included) gets a request id, security headers and an access line."""
    app.user_middleware = [m for m in app.user_middleware if m.cls is not RequestContextMiddleware]
    app.add_middleware(RequestContextMiddleware)
    app.add_middleware(EdgeGuard, rules=rules)
    if rules.hosts is None:
        log.warning(
            "answering requests for any Host name: pass --allowed-hosts (%s) with this server's names "
            "to refuse others (DNS rebinding)",
            ALLOWED_HOSTS_ENV,
        )


def host_name(host_header: str) -> str:
    """The name part of a Host header (no port), lowercased; IPv6 addresses keep their brackets.

    Anything after the name other than ``:digits`` (``[::1]evil``, ``localhost:abc``) leaves the whole
    header as the name, which no allowlist holds: a browser never sends such a Host, so it is refused."""
    host = host_header.strip().lower()
    if host.startswith("["):
        end = host.find("]") + 1
        name, rest = (host[:end], host[end:]) if end else (host, "")
    else:
        name, colon, port = host.rpartition(":")
        name, rest = (name, colon + port) if colon else (host, "")
    return name if _PORT.fullmatch(rest) else host


_PORT = re.compile(r"(:[0-9]*)?")


@dataclass
class _Request:
    """The few headers the guard reads, gathered in one pass."""

    host: str = ""
    origin: str | None = None
    fetch_site: str | None = None
    authorization: str | None = None
    cookie: str | None = None
    accept: str = ""
    referer: str | None = None

    hosts: int = 0  # how many Host headers came: HTTP/1.1 wants exactly one (RFC 9112, 3.2)

    @classmethod
    def of(cls, scope: Scope) -> _Request:
        found, hosts = {}, 0
        for key, value in scope["headers"]:  # ASGI servers give names in lower case
            hosts += key == b"host"
            name = _WANTED.get(key)
            if name and name not in found:  # the first of repeated headers
                found[name] = value.decode("latin-1")
        return cls(**found, hosts=hosts)


_WANTED = {
    b"host": "host",
    b"origin": "origin",
    b"sec-fetch-site": "fetch_site",
    b"authorization": "authorization",
    b"cookie": "cookie",
    b"accept": "accept",
    b"referer": "referer",
}


class EdgeGuard:
    """ASGI middleware applying :class:`EdgeRules` to every HTTP request and websocket handshake."""

    def __init__(self, app: ASGIApp, rules: EdgeRules) -> None:
        self.app = app
        self.rules = rules
        # A server sees few distinct Host values; a bounded cache makes the check one lookup per request.
        self.known_host = lru_cache(maxsize=1024)(lambda host: host_name(host) in rules.hosts)
        self.own_origin = lru_cache(maxsize=1024)(self.is_own_origin)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        request = _Request.of(scope)
        refusal = self.refusal(scope, request)
        if refusal is None and self.rules.tokens.read:
            refusal = await self.sign_in(scope, receive, request)
        if refusal is None:
            await self.app(scope, receive, send)
        elif kind == "websocket":
            await _deny_websocket(refusal, scope, receive, send)
        else:  # with the request id, security headers and access line of every answer
            await RequestContextMiddleware(refusal)(scope, receive, send)

    def refusal(self, scope: Scope, request: _Request) -> Response | None:
        """The answer to a Host or origin that may not reach the app, else None."""
        rules = self.rules
        if request.hosts > 1:  # the guard and the app might read different ones
            return _error(400, "send one Host header: this request has several")
        if rules.hosts is not None and not self.known_host(request.host):
            shown = host_name(request.host)[:100] or "(none)"
            return _error(
                400,
                f"this server does not answer for the host name {shown!r}; if it should, add the name to "
                f"--allowed-hosts ({ALLOWED_HOSTS_ENV}, comma-separated)",
            )
        if scope["type"] == "http" and scope["method"] in SAFE_METHODS:
            return None
        if rules.tokens.accepts(bearer(request.authorization)):
            return None  # a token: a script of someone who holds it, wherever it runs
        origin = request.origin if request.origin is not None else _referer_origin(request.referer)
        if origin is None and request.fetch_site is None:
            return None  # not a browser page: the API's own rules decide
        if request.fetch_site == "same-origin" or (origin and self.own_origin(origin, request.host)):
            return None
        # An empty Origin header is no page of this server either (and must not crash the message).
        shown = (origin or request.fetch_site or "an empty Origin header")[:100]
        return _error(
            403,
            f"a page of another site ({shown}) may not change anything here: "
            "requests other than GET must come from this server's own pages or carry 'Authorization: Bearer <token>'",
        )

    def is_own_origin(self, origin: str, host: str) -> bool:
        """Whether ``origin`` is a page of this server: its host and port are the request's ``host``,
        or its name is one of --allowed-hosts, or it is a configured CORS origin."""
        origin = origin.strip().lower()
        if origin in self.rules.cors:
            return True
        netloc = urlsplit(origin).netloc
        return bool(netloc) and (netloc == host.strip().lower() or host_name(netloc) in self.rules.trusted)

    async def sign_in(self, scope: Scope, receive: Receive, request: _Request) -> Response | None:
        """Read-token checks: the sign-in and sign-out routes, ``?token=``, and else the token or cookie."""
        tokens, path = self.rules.tokens, scope["path"]
        name = cookie_name((scope.get("server") or (None, None))[1])
        if path == SIGN_OUT_PATH:
            answer = RedirectResponse(SIGN_IN_PATH, status_code=303)
            answer.delete_cookie(name, path="/")
            return answer
        if path == SIGN_IN_PATH and scope.get("method") == "POST":
            form = dict(parse_qsl((await _small_body(receive)).decode("latin-1")))
            return self.signed_in(scope, name, form.get(TOKEN_PARAM), _local_path(form.get("next")))
        query = scope.get("query_string", b"").decode("latin-1")
        pairs = parse_qsl(query, keep_blank_values=True) if f"{TOKEN_PARAM}=" in query else []
        if any(k == TOKEN_PARAM for k, _ in pairs) and scope["type"] == "http" and scope["method"] in ("GET", "HEAD"):
            # Before anything logs the query string: the token leaves the URL at once.
            given = next(v for k, v in pairs if k == TOKEN_PARAM)
            rest = urlencode([(k, v) for k, v in pairs if k != TOKEN_PARAM])
            # A path like //evil.example/ would be a redirect to another site: _local_path makes it "/". A link to
            # the sign-in page itself goes on to the dashboard, not back to the form.
            target = "/" if path == SIGN_IN_PATH else _local_path(path + (f"?{rest}" if rest else ""))
            return self.signed_in(scope, name, given, target)
        if path == SIGN_IN_PATH:
            return sign_in_page(200)
        if tokens.accepts(bearer(request.authorization)) or tokens.accepts_session(_cookie(request.cookie, name)):
            return None
        if (
            scope["type"] == "http"
            and scope["method"] == "OPTIONS"
            and (request.origin or "").lower() in self.rules.cors
        ):
            return None  # a CORS preflight never carries credentials (Fetch spec), and its answer holds no data
        if path == HEALTH_PATH and scope["type"] == "http":
            return JSONResponse({"status": "ok"})  # for a container's health check; nothing more without the token
        if scope["type"] == "http" and scope["method"] == "GET" and "text/html" in request.accept:
            return sign_in_page(401, next_url=_local_path(path + (f"?{query}" if query else "")))
        return _error(
            401,
            f"this server is private: send 'Authorization: Bearer <token>' with its {READ_TOKEN_ENV} or "
            f"{TOKEN_ENV}, or sign in at {SIGN_IN_PATH}",
            headers={"WWW-Authenticate": "Bearer"},
        )

    def signed_in(self, scope: Scope, name: str, given: str | None, next_url: str) -> Response:
        """A redirect to ``next_url`` with the sign-in cookie when ``given`` is a token, else the sign-in page."""
        if not self.rules.tokens.accepts(given):
            return sign_in_page(401, next_url=next_url, failed=True)
        answer = RedirectResponse(next_url, status_code=303)
        answer.set_cookie(
            name,
            session_value(given),
            max_age=SESSION_MAX_AGE_S,
            path="/",
            httponly=True,
            samesite="lax",  # a link opened from mail is a top-level GET: it carries the cookie
            secure=scope.get("scheme") == "https",
        )
        return answer


def _referer_origin(referer: str | None) -> str | None:
    """The origin (scheme://host[:port]) of a ``Referer`` URL, or None when it names none.

    Browsers have sent ``Origin`` on every cross-site POST only since 2019-2020 (Firefox 70); an older
    one still sends the ``Referer`` of the page that posted, which tells a foreign page as well."""
    parts = urlsplit((referer or "").strip())
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") and parts.netloc else None


def _error(status: int, detail: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


def _cookie(header: str | None, name: str) -> str | None:
    return cookie_parser(header).get(name) if header and name in header else None


def _local_path(url: str | None) -> str:
    """``url`` if it is a path of this server, else "/": a sign-in never redirects to another site."""
    if not url or not url.startswith("/") or url.startswith("//") or "\\" in url:
        return "/"
    return url


async def _small_body(receive: Receive) -> bytes:
    """The sign-in form's body, at most MAX_SIGN_IN_BYTES (the rest is dropped: no token is that long)."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        if size < MAX_SIGN_IN_BYTES:
            chunks.append(chunk[: MAX_SIGN_IN_BYTES - size])
        size += len(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _deny_websocket(refusal: Response, scope: Scope, receive: Receive, send: Send) -> None:
    """Refuse a handshake with the HTTP answer where the server can send one, else close it (1008)."""
    if "websocket.http.response" in scope.get("extensions", {}):
        await refusal(scope, receive, send)
    else:
        await send({"type": "websocket.close", "code": 1008, "reason": "refused by the server's edge"})


SIGN_IN_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>OrientScope: sign in</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem}}
input,button{{font-size:1rem;padding:.4rem}}input{{width:100%;box-sizing:border-box}}.error{{color:#b00020}}</style>
</head><body><main id="sign-in">
<h1>OrientScope</h1>
<p>This server is private. Enter its read token (or its write token) to open it.</p>
{error}<form method="post" action="{action}">
<input type="hidden" name="next" value="{next_url}">
<p><label for="token">Token</label><br><input id="token" name="token" type="password" autocomplete="current-password"
 required autofocus></p>
<p><button type="submit">Sign in</button></p>
</form></main></body></html>
"""


def sign_in_page(status: int, next_url: str = "/", failed: bool = False) -> HTMLResponse:
    """The sign-in form (posting to SIGN_IN_PATH), which returns to ``next_url`` once signed in."""
    error = '<p class="error" role="alert">That token is not valid here.</p>\n' if failed else ""
    page = SIGN_IN_HTML.format(error=error, action=SIGN_IN_PATH, next_url=html.escape(next_url, quote=True))
    return HTMLResponse(page, status_code=status, headers={"Cache-Control": "no-store"})
