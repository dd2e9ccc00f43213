"""Settings: every ``ORIENTSCOPE_*`` environment variable, declared once in :class:`Settings`.

Each field declares its type, default, unit and a one-line doc; the settings table of
``docs/operations.md`` is generated from them (``make docs``; a test checks it). Modules get
settings from :func:`settings`, never from ``os.environ``: it reads the variables when called
(never at import), so ``monkeypatch.setenv`` and a variable set in a notebook take effect at
once, and it reuses the parsed object while the variables are unchanged: a call costs one lookup
per variable (about 40 µs on the shared 2-core machine, against milliseconds per request), so it
may be called per request.

``ORIENTSCOPE_SETTINGS`` holds one JSON object of settings by field name, which overrides the
single variables: ``orientscope serve --workers N`` hands its resolved settings to its uvicorn
workers in it. The tokens never travel in it (each stays in its own variable).

A frozen dataclass rather than pydantic-settings: that package is not installed (a new dependency for
some 30 variables), pydantic itself costs about 60 ms of import in every CLI command and Dask worker
while ``core`` imports nothing heavy, and its errors would have to be re-worded to name the variable
and what it accepts; the per-kind parsers below are a few lines each.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import math
import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path

from orientscope.core.errors import OrientScopeError

DEFAULT_DATASET = "qm9"
DEFAULT_SEED = 0

# Ids name folders on disk, so they are restricted to a safe alphabet.
ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,63}$")
_HOST_NAME = re.compile(r"^(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9\-.]*[a-z0-9])?)$")
_ORIGIN = re.compile(r"^(\*|https?://[^/\s]+)$")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

PREFIX = "ORIENTSCOPE_"
SETTINGS_ENV = "ORIENTSCOPE_SETTINGS"
SPEC = "orientscope.setting"  # the key of a field's Spec in its metadata


def env_name(name: str) -> str:
    """The environment variable of the setting ``name``: ``shard_size`` -> ``ORIENTSCOPE_SHARD_SIZE``."""
    return PREFIX + name.upper()


@dataclass(frozen=True)
class Spec:
    """How one setting is read from its text, and documented.

    kind : count (a whole number of ``unit``, at least ``minimum``), megabytes (a non-negative number of
        ``unit``), path, text, secret (text kept out of reprs and of ``ORIENTSCOPE_SETTINGS``), flag,
        hosts (host names, comma-separated) or origins (comma-separated)
    """

    kind: str
    doc: str
    unit: str = ""
    minimum: int = 0
    option: str = ""  # the CLI option that overrides the variable
    default_text: str = ""  # the default as the docs say it, where the value alone says too little
    accepts: str = ""  # what is accepted, where the kind alone says too little

    @property
    def secret(self) -> bool:
        return self.kind == "secret"

    def describe(self) -> str:
        """What the setting accepts, as an error message and the docs say it."""
        if self.accepts:
            return self.accepts
        return {
            "count": f"a whole number of {self.unit}" + (f", at least {self.minimum}" if self.minimum else ""),
            "megabytes": f"a non-negative number of {self.unit}",
            "path": "a folder",
            "text": "text",
            "secret": "text (a secret: it never reaches a log line or ORIENTSCOPE_SETTINGS)",
            "flag": "1, true, yes or on (0, false, no, off or empty: off)",
            "hosts": "host names or addresses without scheme or port, comma-separated",
            "origins": "origins such as https://lab.example:8443 (scheme, host, optional port), comma-separated",
        }[self.kind]

    def parse(self, text: str):
        """The value of the non-empty ``text``; ValueError (empty, or a reason) when it is not accepted."""
        if self.kind == "count":
            if not text.isdigit() or int(text) < self.minimum:
                raise ValueError
            return int(text)
        if self.kind == "megabytes":
            value = float(text)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError
            return value
        if self.kind == "path":
            return Path(text).expanduser()
        if self.kind == "flag":
            if text.lower() not in (*_TRUE, *_FALSE):
                raise ValueError
            return text.lower() in _TRUE
        if self.kind == "hosts":
            return parse_allowed_hosts(text)
        if self.kind == "origins":
            origins = tuple(o.strip() for o in text.split(",") if o.strip())
            bad = [o for o in origins if not _ORIGIN.fullmatch(o)]
            if bad:
                raise ValueError(f"{bad[0]!r} is not an origin")
            return origins
        return text  # text, secret


def _setting(default, kind: str, doc: str, **spec):
    return field(default=default, repr=kind != "secret", metadata={SPEC: Spec(kind, doc, **spec)})


@dataclass(frozen=True)
class Settings:
    """Every ``ORIENTSCOPE_*`` variable: field ``shard_size`` is ``ORIENTSCOPE_SHARD_SIZE``.

    ``Settings()`` holds the defaults; :func:`settings` the current values. Megabytes are 2**20 bytes.
    """

    # --- the server: where it stores, who may write and read, from where
    data_dir: Path | None = _setting(
        None, "path", "the store", option="--data-dir",
        default_text="`data/` of the OrientScope checkout the working directory is in, else the user data folder",
    )  # fmt: skip
    read_only: bool = _setting(False, "flag", "refuse every write with 403 and hide uploads in the UI",
                               option="--read-only")  # fmt: skip
    token: str | None = _setting(None, "secret", "bearer token every write must carry")
    allow_anonymous_writes: bool = _setting(
        False, "flag", "start a writable server without a token on a non-loopback address (warns)",
        option="--allow-anonymous-writes",
    )  # fmt: skip
    host: str | None = _setting(
        None, "text", "the address the uvicorn factory is served on (loopback or not, for the write rule)",
        default_text="set by `serve`", accepts="an IP address or host name",
    )  # fmt: skip
    allowed_hosts: tuple[str, ...] = _setting(
        (), "hosts",
        "more Host names to answer (a tunnel's, the proxy's public name); given on a non-loopback bind, the only "
        "names answered besides loopback and the bound address. Other names get 400 ([security.md](security.md))",
        option="--allowed-hosts",
        default_text="loopback names only on a loopback bind; any name on another bind",
    )  # fmt: skip
    read_token: str | None = _setting(
        None, "secret",
        "make the server private: every page, asset and API read needs this token or the write token, as "
        "`Authorization: Bearer` or the sign-in cookie; needs `ORIENTSCOPE_TOKEN` or `--read-only` "
        "([security.md](security.md))",
        default_text="unset (reads are open)",
    )  # fmt: skip
    read_token_file: Path | None = _setting(
        None, "path", "a file whose first line is the read token (before `ORIENTSCOPE_READ_TOKEN`): the token "
        "stays out of the environment and the command line", option="--read-token-file", accepts="a file",
    )  # fmt: skip
    cors_origins: tuple[str, ...] = _setting(
        (), "origins", "origins allowed to call the API from a browser", default_text="none (no cross-origin access)"
    )
    # --- caches and the map, per worker
    cache_mb: float = _setting(
        256, "megabytes",
        "per worker: the byte budget of every cache of derived data (map layers and figures, first page views, "
        "per-result panels, SMARTS matches); an item larger than it is served but not kept; 0 keeps nothing. The "
        "loaded datasets and the map's points have budgets of their own (below)",
        unit="MB",
    )  # fmt: skip
    # A view's columns are memory maps: only its warmed indexes count. 1024 MB holds one warmed 10M-molecule
    # view (~290 MB) with room for others (see services/cache.py).
    view_cache_mb: float = _setting(
        1024, "megabytes",
        "per worker: the byte budget of the open datasets: their columns when at most a quarter of it (read into "
        "memory; full QM9's 130 MB), else memory-mapped and counting nothing, plus the indexes and panels built on "
        "them (a warmed 10M-molecule set about 290 MB). A separate "
        "budget so one large dataset neither evicts nor is evicted by the small derived entries above. A dataset "
        "larger than it is served but reloaded on every request (logged as a warning): raise it for large "
        "datasets or to keep several warm. The server warms datasets at start while they fit",
        unit="MB",
    )  # fmt: skip
    map_cache_mb: float = _setting(
        1024, "megabytes",
        "per worker: the byte budget of the map's points (each dataset's projected axes and ids, and the banded, "
        "x-sorted points of the views drawn). A dataset's map data and default view are memory-mapped from its "
        "stored map arrays (section 9) and cost none of it; each further view or colouring of 10M molecules "
        "30-120 MB, QM9's together about 15 MB",
        unit="MB",
    )  # fmt: skip
    columns_dir: Path | None = _setting(
        None, "path",
        "where a server writes the memory-mapped columns and map arrays of a result stored without them when it "
        "cannot write into the store (about 1 KB per molecule; precompute and migrate write them into the result)",
        default_text="`<tmp>/orientscope-columns`",
    )  # fmt: skip
    # Above this many points in view the map is aggregated on the server into an image (one pixel grid's worth
    # of bytes); at or below it the browser draws the real points. 30,000: a software-WebGL plot (headless
    # Chromium, SwiftShader) took 0.9-1.4 s to draw a zoom of 30-84k points at load 8 against 0.2-0.6 s for an
    # image of the same region, and a zoom is to be drawn in 400 ms.
    map_point_budget: int = _setting(
        30_000, "count",
        "points in view above which the map is the server's datashader image instead of the points themselves "
        "(the browser then receives one image per view, whatever the dataset's size)",
        unit="points",
    )  # fmt: skip
    # --- limits on what is uploaded, ingested and exported (core/limits.py)
    max_upload_mb: float = _setting(
        2048, "megabytes", "uploads above this are cut off with 413 while they stream in", unit="MB"
    )
    # A request body that is not a file upload (JSON: canonicalize, exports, SMARTS, rename) is read into memory
    # before it is checked: without a bound, one request to a public read-only server could exhaust its memory.
    # 32 MB holds an export's list of 2,000,000 ids (the molecule limit) with room.
    max_request_mb: float = _setting(
        32, "megabytes",
        "API request bodies other than file uploads (JSON, forms) above this are refused with 413 while they stream in",
        unit="MB",
    )  # fmt: skip
    max_molecules: int = _setting(2_000_000, "count", "per dataset", unit="molecules")
    max_atoms_per_molecule: int = _setting(
        2_000, "count", "per molecule (also the limit of `POST /api/canonicalize`)", unit="atoms"
    )
    max_total_atoms: int = _setting(60_000_000, "count", "per dataset", unit="atoms")
    max_prediction_rows: int = _setting(20_000_000, "count", "per model audit's predictions file", unit="rows")
    direct_export_max: int = _setting(
        200_000, "count",
        "largest dataset `GET …/export` writes while the request waits; above it, 413 and `POST …/exports`",
        unit="molecules",
    )  # fmt: skip
    export_dir: Path | None = _setting(
        None, "path",
        "where export jobs write their files and SMARTS search jobs keep their results (must be writable, also on "
        "read-only servers)",
        default_text="`<data dir>/exports`",
    )  # fmt: skip
    max_queued_jobs: int = _setting(
        8, "count", "jobs of every kind queued or running at once per data folder, counted across `--workers` "
        "(a lock file in `ORIENTSCOPE_EXPORT_DIR`); beyond it, 429",
        unit="jobs", minimum=1,
    )  # fmt: skip
    smarts_job_above: int = _setting(
        250_000, "count",
        "sharded datasets of more molecules are searched for a SMARTS pattern by a background job (section 9); "
        "smaller ones while the request waits (at most 10 s)",
        unit="molecules",
    )  # fmt: skip
    # A set made in Python larger than this lives in a store on disk rather than in memory.
    in_memory_mb: float = _setting(
        1024, "megabytes",
        "Python API: the largest set made in Python (`orientscope.read` of one file, `from_arrays`, …) kept in "
        "memory; a larger one lives in its private store under the data folder ([python.md](python.md))",
        unit="MiB",
    )  # fmt: skip
    # --- where the pipeline computes
    cluster: str | None = _setting(
        None, "text", "where sharded datasets are computed (section 9)", option="--cluster",
        default_text="by the set's size (below)", accepts="in-process, local:W (W workers) or tcp://HOST:PORT",
    )  # fmt: skip
    local_cluster_above: int = _setting(
        2_000_000, "count",
        "without a cluster setting, sets of at least this many molecules run on a local cluster with one worker "
        "per core; below it, a set whose chemistry (RDKit) work is estimated at more than 8 s (12 µs per atom "
        "from SMILES, 60 µs per atom perceived from 3D) parses it on two local workers started for that step",
        unit="molecules",
    )  # fmt: skip
    shard_size: int = _setting(
        250_000, "count", "molecules per shard of a sharded dataset", unit="molecules", minimum=1,
        option="--shard-size",
    )  # fmt: skip

    def to_json(self) -> str:
        """These settings as ``ORIENTSCOPE_SETTINGS`` holds them: every one but the tokens, by field name."""
        out = {}
        for f in fields(self):
            if not f.metadata[SPEC].secret:
                value = getattr(self, f.name)
                out[f.name] = (
                    str(value) if isinstance(value, Path) else list(value) if isinstance(value, tuple) else value
                )
        return json.dumps(out, sort_keys=True)


FIELDS = {f.name: f for f in fields(Settings)}
VARIABLES = (*map(env_name, FIELDS), SETTINGS_ENV)


def settings() -> Settings:
    """The current settings: the ``ORIENTSCOPE_*`` variables as they are now, overridden by ``ORIENTSCOPE_SETTINGS``.

    SettingsError (a ValueError) naming the variable and what it accepts when one is not accepted.
    """
    return _parsed(tuple(map(os.environ.get, VARIABLES)))


def hand_to_workers(chosen: Settings) -> None:
    """Put ``chosen`` into this process's environment as ``ORIENTSCOPE_SETTINGS``, for the processes it starts
    (uvicorn's workers), whose :func:`settings` then read it back. The tokens stay in their own variables."""
    os.environ[SETTINGS_ENV] = chosen.to_json()


class SettingsError(ValueError):
    """An ``ORIENTSCOPE_*`` variable holds a value its setting does not accept."""


def _as_text(value) -> str:
    """A value of ``ORIENTSCOPE_SETTINGS``' JSON as a variable would spell it (parsed by the same rule)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, list):
        return ",".join(map(str, value))
    return str(value)


def _serialised(raw: str) -> dict[str, str]:
    """The settings an ``ORIENTSCOPE_SETTINGS`` value overrides, as text by field name."""
    try:
        given = json.loads(raw)
    except json.JSONDecodeError as err:
        raise SettingsError(f"{SETTINGS_ENV} is not JSON ({err.msg}); expected an object of settings") from None
    if not isinstance(given, dict):
        raise SettingsError(f"{SETTINGS_ENV}: expected a JSON object of settings by name, got {type(given).__name__}")
    for name in given:
        if name not in FIELDS:
            known = sorted(n for n, f in FIELDS.items() if not f.metadata[SPEC].secret)
            raise SettingsError(f"{SETTINGS_ENV}: unknown setting {name!r}; expected names among {known}")
        if FIELDS[name].metadata[SPEC].secret:
            raise SettingsError(f"{SETTINGS_ENV} may not hold {name!r}: set {env_name(name)} instead")
    return {name: _as_text(value) for name, value in given.items()}


@functools.lru_cache(maxsize=8)
def _parsed(raw: tuple[str | None, ...]) -> Settings:
    """Settings from the variables' values (in VARIABLES' order); cached, so a call costs a tuple of lookups."""
    texts = {name: (value, env_name(name)) for name, value in zip(FIELDS, raw, strict=False)}
    if raw[-1]:
        texts.update({name: (text, f"{SETTINGS_ENV}[{name!r}]") for name, text in _serialised(raw[-1]).items()})
    values = {}
    for name, (text, label) in texts.items():
        spec, text = FIELDS[name].metadata[SPEC], (text or "").strip()
        if not text:
            continue  # unset or empty: the default
        try:
            values[name] = spec.parse(text)
        except ValueError as err:  # a secret is text: never refused, so never shown here
            reason = f" ({err})" if str(err) and spec.kind != "megabytes" else ""  # not float()'s own words
            raise SettingsError(f"{label}={text!r}: expected {spec.describe()}{reason}") from None
    return Settings(**values)


DATA_DIR_ENV = env_name("data_dir")
TOKEN_ENV = env_name("token")
MAP_POINT_BUDGET_ENV = env_name("map_point_budget")


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """The data folder, in one order for every entry point (CLI, server, Python).

    An explicit argument, else $ORIENTSCOPE_DATA_DIR, else ``data/`` of the OrientScope checkout the
    working directory is in (so ``make serve`` keeps ./data), else the platform's user data folder:
    a wheel install never writes into site-packages.
    """
    chosen = data_dir or settings().data_dir
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


def map_point_budget() -> int:
    """$ORIENTSCOPE_MAP_POINT_BUDGET, else 30,000 points in view."""
    return settings().map_point_budget


def in_memory_bytes() -> int:
    """$ORIENTSCOPE_IN_MEMORY_MB (a non-negative number of MiB), else 1 GiB: the largest Python set kept in memory."""
    return int(settings().in_memory_mb * 1024 * 1024)


def resolve_export_dir(data_dir: str | os.PathLike) -> Path:
    """$ORIENTSCOPE_EXPORT_DIR, else ``<data_dir>/exports``: export files live apart from the dataset store,
    so a read-only server (whose data dir may be mounted read-only) can still export to a writable place."""
    chosen = settings().export_dir or Path(data_dir) / "exports"
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
HOST_ENV = env_name("host")  # the address the server listens on, for the uvicorn factory
READ_ONLY_ENV = env_name("read_only")
ANONYMOUS_WRITES_ENV = env_name("allow_anonymous_writes")


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
READ_TOKEN_ENV = env_name("read_token")
READ_TOKEN_FILE_ENV = env_name("read_token_file")  # the environment form of --read-token-file
ALLOWED_HOSTS_ENV = env_name("allowed_hosts")


def check_read_token(read_only: bool, token: str | None, read_token: str | None) -> None:
    """A read token makes a server private; then writes need the write token, or there are none.

    Without this rule anyone holding the read token could write, as writes need no token on loopback.
    """
    if read_token and not read_only and not (token or "").strip():
        raise UnsafeServerError(
            f"a read token ({READ_TOKEN_ENV} or --read-token-file) needs a write token too, or its holders could "
            f"change the data: set {TOKEN_ENV}, or serve with --read-only"
        )
    if read_token and not read_only and read_token.strip() == (token or "").strip():
        raise UnsafeServerError(  # names the settings, never the value
            f"the read token ({READ_TOKEN_ENV} or --read-token-file) is the write token ({TOKEN_ENV}), so its "
            "holders could change the data: give them different values, or serve with --read-only"
        )


def resolve_read_token(token_file: str | os.PathLike | None = None) -> str | None:
    """The read token: the first line of --read-token-file ($ORIENTSCOPE_READ_TOKEN_FILE), else $ORIENTSCOPE_READ_TOKEN.

    None when neither is set (reads are open). ValueError when the file is empty or unreadable.
    """
    current = settings()
    token_file = token_file or current.read_token_file
    if token_file:
        try:
            lines = Path(token_file).expanduser().read_text().splitlines()
        except OSError as err:
            raise ValueError(f"cannot read the read-token file {str(token_file)!r}: {err.strerror}") from None
        token = lines[0].strip() if lines else ""
        if not token:
            raise ValueError(f"the read-token file {str(token_file)!r} is empty; put the token on its first line")
        return token
    return current.read_token


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
