"""Settings resolved from the environment (read when called, never at import)."""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path

from orientscope.core.errors import OrientScopeError

DATA_DIR_ENV = "ORIENTSCOPE_DATA_DIR"
TOKEN_ENV = "ORIENTSCOPE_TOKEN"
EXPORT_DIR_ENV = "ORIENTSCOPE_EXPORT_DIR"
DEFAULT_DATASET = "qm9"
DEFAULT_SEED = 0
MAP_POINT_BUDGET_ENV = "ORIENTSCOPE_MAP_POINT_BUDGET"
# Above this many points in view the map is aggregated on the server into an image
# (one pixel grid's worth of bytes); at or below it the browser draws the real points. 30,000: a
# software-WebGL plot (headless Chromium, SwiftShader) took 0.9-1.4 s to draw a zoom of 30-84k points
# at load 8 against 0.2-0.6 s for an image of the same region, and a zoom is to be drawn in 400 ms.
DEFAULT_MAP_POINT_BUDGET = 30_000

# Ids name folders on disk, so they are restricted to a safe alphabet.
ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,63}$")


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """The data folder, in one order for every entry point (CLI, server, Python).

    An explicit argument, else $ORIENTSCOPE_DATA_DIR, else ``data/`` of the OrientScope checkout the
    working directory is in (so ``make serve`` keeps ./data), else the platform's user data folder:
    a wheel install never writes into site-packages.
    """
    chosen = data_dir or os.environ.get(DATA_DIR_ENV)
    if not chosen:
        checkout = find_checkout(Path.cwd())
        chosen = checkout / "data" if checkout else user_data_dir()
    return Path(chosen).expanduser().resolve()


def find_checkout(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding OrientScope's own pyproject.toml, if any."""
    for folder in (start, *start.parents):
        project = folder / "pyproject.toml"
        if project.is_file() and (folder / "backend" / "cli.py").is_file():
            if re.search(r'(?m)^name\s*=\s*"orientscope"', project.read_text(encoding="utf-8", errors="replace")):
                return folder
    return None


def user_data_dir() -> Path:
    """The platform's per-user data folder for OrientScope (``~/.local/share/orientscope`` on Linux)."""
    import platformdirs  # only needed outside a checkout and without $ORIENTSCOPE_DATA_DIR

    return Path(platformdirs.user_data_dir("orientscope", appauthor=False))


def env_count(name: str, default: int, unit: str, minimum: int = 0) -> int:
    """$NAME as a whole number of ``unit`` (at least ``minimum``), else ``default``; ValueError naming the variable."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < minimum:
        at_least = f", at least {minimum}" if minimum else ""
        raise ValueError(f"{name}={raw!r}: expected a whole number of {unit}{at_least}")
    return int(raw)


def map_point_budget() -> int:
    """$ORIENTSCOPE_MAP_POINT_BUDGET, else 30,000 points in view."""
    return env_count(MAP_POINT_BUDGET_ENV, DEFAULT_MAP_POINT_BUDGET, "points")


IN_MEMORY_MB_ENV = "ORIENTSCOPE_IN_MEMORY_MB"
# A set made in Python larger than this lives in a store on disk rather than in memory.
DEFAULT_IN_MEMORY_MB = 1024


def in_memory_bytes() -> int:
    """$ORIENTSCOPE_IN_MEMORY_MB (a non-negative number of MiB), else 1 GiB: the largest Python set kept in memory."""
    raw = os.environ.get(IN_MEMORY_MB_ENV, "").strip()
    try:
        mib = float(raw) if raw else DEFAULT_IN_MEMORY_MB
    except ValueError:
        mib = -1.0
    if not mib >= 0:
        raise ValueError(f"{IN_MEMORY_MB_ENV}={raw!r}: expected a non-negative number of MiB")
    return int(mib * 1024 * 1024)


def resolve_export_dir(data_dir: str | os.PathLike) -> Path:
    """$ORIENTSCOPE_EXPORT_DIR, else ``<data_dir>/exports``: export files live apart from the dataset store,
    so a read-only server (whose data dir may be mounted read-only) can still export to a writable place."""
    chosen = os.environ.get(EXPORT_DIR_ENV) or Path(data_dir) / "exports"
    return Path(chosen).expanduser().resolve()


def check_choice(value, allowed, what: str):
    """``value`` if it is one of ``allowed``, else ValueError listing them."""
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}; expected one of {allowed}")
    return value


def validate_id(value: str, what: str = "dataset id") -> str:
    """Return ``value`` if it is a safe id, else ValueError naming the rule."""
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise ValueError(
            f"invalid {what} {value!r}: use 1-64 lowercase letters, digits, '-' or '_', starting with a letter or digit"
        )
    return value


MAX_NAME_LENGTH = 200


def display_name(name: str, what: str = "dataset") -> str:
    """``name`` without surrounding spaces, else ValueError if that leaves 0 or over 200 characters."""
    name = name.strip()
    if not name or len(name) > MAX_NAME_LENGTH:
        raise ValueError(
            f"a{'n' if what[0] in 'aeiou' else ''} {what} name must have 1 to {MAX_NAME_LENGTH} characters"
        )
    return name


def slugify(name: str) -> str:
    """A safe id derived from a free-text name."""
    slug = re.sub(r"[^a-z0-9_\-]+", "-", name.strip().lower()).strip("-_")
    return (slug or "dataset")[:64]


# --------------------------------------------------------------------------- who may write
HOST_ENV = "ORIENTSCOPE_HOST"  # the address the server listens on, for the uvicorn factory
READ_ONLY_ENV = "ORIENTSCOPE_READ_ONLY"
ANONYMOUS_WRITES_ENV = "ORIENTSCOPE_ALLOW_ANONYMOUS_WRITES"
_TRUE = ("1", "true", "yes", "on")


def env_flag(name: str) -> bool:
    """True when the environment variable ``name`` is 1, true, yes or on."""
    return os.environ.get(name, "").strip().lower() in _TRUE


def is_loopback(host: str | None) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``; any other address or name may be reachable from outside."""
    if not host:
        return False  # unknown, or "" (every interface)
    host = host.strip().strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class UnsafeServerError(OrientScopeError):
    """A writable server would accept anonymous writes on an address others can reach."""


def check_write_access(
    host: str | None,
    read_only: bool,
    token: str | None,
    allow_anonymous_writes: bool = False,
    read_token: str | None = None,
) -> str | None:
    """Apply the start-up rule for writes; a warning to show, or None.

    A server on a non-loopback address (or an unknown one: ``host`` None) must
    either need a token for writes or refuse them; otherwise anyone on the
    network could upload, rename or delete datasets. ``allow_anonymous_writes``
    overrides the rule and returns a warning. Raises UnsafeServerError naming
    both ways out.
    """
    check_read_token(read_only, token, read_token)
    if read_only or (token or "").strip() or is_loopback(host):
        return None
    where = f"on {host!r}" if host else f"on an address it cannot check (set {HOST_ENV})"
    if allow_anonymous_writes:
        return (
            f"WARNING: anonymous writes are allowed {where}: anyone who can reach this server can upload, "
            "rename or delete datasets"
        )
    raise UnsafeServerError(
        f"refusing to start a writable server without a token {where}: anyone who can reach it could upload, "
        f"rename or delete datasets. Either set {TOKEN_ENV} (writes then need 'Authorization: Bearer <token>') "
        f"or serve with --read-only ({READ_ONLY_ENV}=1). To accept anonymous writes on a trusted network, "
        f"pass --allow-anonymous-writes ({ANONYMOUS_WRITES_ENV}=1)."
    )


# --------------------------------------------------------------------------- who may read, from where
READ_TOKEN_ENV = "ORIENTSCOPE_READ_TOKEN"
READ_TOKEN_FILE_ENV = "ORIENTSCOPE_READ_TOKEN_FILE"  # the environment form of --read-token-file
ALLOWED_HOSTS_ENV = "ORIENTSCOPE_ALLOWED_HOSTS"
_HOST_NAME = re.compile(r"^(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9\-.]*[a-z0-9])?)$")


def check_read_token(read_only: bool, token: str | None, read_token: str | None) -> None:
    """A read token makes a server private; then writes need the write token, or there are none.

    Without this rule anyone holding the read token could write, as writes need no token on loopback.
    """
    if read_token and not read_only and not (token or "").strip():
        raise UnsafeServerError(
            f"a read token ({READ_TOKEN_ENV} or --read-token-file) needs a write token too, or its holders could "
            f"change the data: set {TOKEN_ENV}, or serve with --read-only"
        )


def resolve_read_token(token_file: str | os.PathLike | None = None) -> str | None:
    """The read token: the first line of --read-token-file ($ORIENTSCOPE_READ_TOKEN_FILE), else $ORIENTSCOPE_READ_TOKEN.

    None when neither is set (reads are open). ValueError when the file is empty or unreadable.
    """
    token_file = token_file or os.environ.get(READ_TOKEN_FILE_ENV)
    if token_file:
        try:
            lines = Path(token_file).expanduser().read_text().splitlines()
        except OSError as err:
            raise ValueError(f"cannot read the read-token file {str(token_file)!r}: {err.strerror}") from None
        token = lines[0].strip() if lines else ""
        if not token:
            raise ValueError(f"the read-token file {str(token_file)!r} is empty; put the token on its first line")
        return token
    return os.environ.get(READ_TOKEN_ENV, "").strip() or None


def parse_allowed_hosts(raw: str | None) -> tuple[str, ...]:
    """Host names from a comma-separated list (--allowed-hosts, $ORIENTSCOPE_ALLOWED_HOSTS), lowercased.

    Names and addresses only, no scheme or port: a name is allowed with any port. An IPv6 address
    may be written with or without brackets. ValueError names the first entry that is not a host name.
    """
    hosts = []
    for entry in (raw or "").split(","):
        name = entry.strip().lower().rstrip(".")
        if not name:
            continue
        if ":" in name and not name.startswith("["):
            name = f"[{name}]"  # a bare IPv6 address, as a Host header writes it
        if not _HOST_NAME.fullmatch(name):
            raise ValueError(
                f"allowed host {entry.strip()!r} is not a host name: give names or addresses without scheme or "
                "port, comma-separated, e.g. 'lab.example.org,10.0.0.5'"
            )
        hosts.append(name)
    return tuple(dict.fromkeys(hosts))
