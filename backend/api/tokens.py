"""The server's secrets in one place: comparing tokens and deriving the sign-in cookie.

Every comparison is constant-time (``hmac.compare_digest``), so the time taken does not
reveal how much of a token matched. The cookie holds an HMAC of the token, never the
token: a copied cookie does not give the token away, and a new token invalidates it.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

# The message the cookie's HMAC signs; a new version here would sign everyone out.
_SESSION_MESSAGE = b"orientscope sign-in v1"


def same_secret(given: str | None, expected: str | None) -> bool:
    """True when both are set and equal (constant-time)."""
    if not given or not expected:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None.

    ASGI servers decode header values as Latin-1; a client sends a non-ASCII token as UTF-8, so its bytes are
    read again as UTF-8 (without this, a token like "pässwörd" matched as ``?token=`` but never as a header).
    """
    scheme, _, given = (authorization or "").partition(" ")
    given = given.strip()
    if scheme.lower() != "bearer" or not given:
        return None
    try:
        return given.encode("latin-1").decode("utf-8")
    except UnicodeError:  # not UTF-8 (a Latin-1 client, or text not from a header): as it came
        return given


def session_value(token: str) -> str:
    """What the sign-in cookie holds for ``token``: an HMAC keyed by the token."""
    return hmac.new(token.encode(), _SESSION_MESSAGE, hashlib.sha256).hexdigest()


def cookie_name(port: int | None) -> str:
    """One cookie per server port: browsers send a host's cookies to all its ports."""
    return f"orientscope-session-{port or 0}"


@dataclass(frozen=True)
class Tokens:
    """The write token (``ORIENTSCOPE_TOKEN``) and the read token (``ORIENTSCOPE_READ_TOKEN``), either unset."""

    write: str | None = None
    read: str | None = None

    def accepts(self, given: str | None) -> bool:
        """Whether ``given`` is one of the tokens: the write token also reads."""
        # Both compared always, so the time taken does not tell which one matched.
        return same_secret(given, self.read) | same_secret(given, self.write)

    def accepts_session(self, value: str | None) -> bool:
        """Whether a sign-in cookie's ``value`` was derived from one of the tokens."""
        derived = [session_value(t) for t in (self.read, self.write) if t]
        return any([same_secret(value, d) for d in derived])
