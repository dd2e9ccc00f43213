"""The file formats OrientScope reads and writes, one line each, and what the rest of the code asks of them.

A format is one module in ``loaders/`` ending with ``FORMAT = Format(...)`` (``loaders/formats.py``). Detection
(``loaders/detect.py``), ``ingest``'s and ``export``'s ``--format`` choices, export's writers, the API's
choices and media types, the downloads of one molecule and the format table of ``docs/formats.md`` are all
read from :data:`FORMATS`. Their order is the order of every list a user sees, and breaks ties in detection.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from orientscope.core.settings import check_choice
from orientscope.loaders import asedb, ccd, extxyz, json_records, npz, parquet_orientations, sdf, xyz
from orientscope.loaders.formats import Format

FORMATS: tuple[Format, ...] = (
    xyz.FORMAT,
    extxyz.FORMAT,
    sdf.FORMAT,
    asedb.FORMAT,
    npz.FORMAT,
    parquet_orientations.FORMAT,
    json_records.FORMAT,
    ccd.FORMAT,
)
AUTO = "auto"  # detect the format of each file
# What export writes when neither its --format, its file name nor the input's format says: every property kept.
DEFAULT_EXPORT = extxyz.FORMAT
# GET …/molecules/{mol_id} answers a JSON record, which this format reads back.
RECORDS = json_records.FORMAT

_BY_NAME = {f.name: f for f in FORMATS}


def names() -> tuple[str, ...]:
    """Every format read, by name."""
    return tuple(_BY_NAME)


def choices() -> tuple[str, ...]:
    """What ``--format`` of ingest (and ``format`` of an upload) takes: "auto" or a format's name."""
    return (AUTO, *names())


def writable() -> tuple[str, ...]:
    """The formats ``export`` writes."""
    return tuple(f.name for f in FORMATS if f.write is not None)


def downloads() -> tuple[str, ...]:
    """The formats one molecule is downloaded in (``GET …/molecules/{mol_id}?format=``), besides its JSON record."""
    return tuple(f.name for f in FORMATS if f.write_molecule is not None)


def get(name: str) -> Format:
    """The format called ``name``; ValueError listing the formats otherwise."""
    return _BY_NAME[check_choice(name, names(), "format")]


def check_format(fmt: str) -> str:
    """``fmt`` if it is "auto" or a format's name, else ValueError listing them."""
    return check_choice(fmt, choices(), "format")


def extensions() -> tuple[str, ...]:
    """Every extension some format reads, in the formats' order."""
    return tuple(dict.fromkeys(e for f in FORMATS for e in f.extensions))


def owners(path: Path) -> list[Format]:
    """The formats whose extensions include ``path``'s suffix, the one that lists it earliest first."""
    suffix = Path(path).suffix.lower()
    found = [f for f in FORMATS if suffix in f.extensions]
    return sorted(found, key=lambda f: f.extensions.index(suffix))


def writer_for(path: Path) -> Format | None:
    """The format export writes to a file named ``path`` when none is given: its extension's, if written."""
    return next((f for f in owners(path) if f.write is not None), None)


def folder_format(path: Path) -> Format | None:
    """The format a folder is one dataset in (the store's two Parquet tables), if any."""
    return next((f for f in FORMATS if f.reads_folder is not None and f.reads_folder(Path(path))), None)


# ------------------------------------------------------------------------------------------- reading options
def parse_options(items: Iterable[str] | str) -> dict[str, str]:
    """``name=value`` items (a list, or one text separated by commas) as a mapping; ValueError naming a bad one."""
    if isinstance(items, str):
        items = items.split(",")
    out: dict[str, str] = {}
    for item in items:
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise ValueError(f"format option {item.strip()!r}: expected name=value, e.g. coordinates=model")
        out[name.strip()] = value.strip()
    return out


def option_names() -> tuple[str, ...]:
    return tuple(dict.fromkeys(o.name for f in FORMATS for o in f.options))


def check_options(fmt: str, options: Mapping[str, str] | None) -> dict[str, str]:
    """``options`` checked against the format ``fmt`` (against every format's for "auto"): ValueError naming an
    unknown option or value and what is accepted. Returns them as given (the reader fills in its defaults)."""
    options = dict(options or {})
    formats = FORMATS if fmt == AUTO else (get(fmt),)
    for name, value in options.items():
        declared = [o for f in formats for o in f.options if o.name == name]
        if not declared:
            takes = "; ".join(f"{f.name}: {options_help(f)}" for f in formats if f.options)
            where = f"format {fmt!r}" if fmt != AUTO else "any format"
            raise ValueError(f"unknown format option {name!r} for {where}; accepted: {takes or 'none'}")
        allowed = tuple(dict.fromkeys(c for o in declared for c in o.choices))
        if value not in allowed:
            raise ValueError(f"format option {name}={value!r}: expected one of {allowed}")
    return options


def options_help(fmt: Format) -> str:
    """``name=a|b (default a)`` for each option of ``fmt``."""
    return ", ".join(f"{o.name}={'|'.join(o.choices)} (default {o.default})" for o in fmt.options) or "none"


# ------------------------------------------------------------------------------------------------ the docs
def format_table() -> str:
    """The Markdown table of ``docs/formats.md``: every format and what it does (tests check the docs hold it)."""
    rows = [
        "| `--format` | what | extensions | `export` writes it | one molecule (`?format=`) | media type | options |",
        "|---|---|---|---|---|---|---|",
    ]
    bar = " \\| "  # a | inside a Markdown table cell
    for f in FORMATS:
        exts = ", ".join(f"`{e}`" for e in f.extensions)
        options = "; ".join(f"`{o.name}`: {bar.join(o.choices)} (default {o.default}): {o.help}" for o in f.options)
        rows.append(
            f"| `{f.name}` | {f.label}: {f.description} | {exts} | {'yes' if f.write else '—'} | "
            f"{'yes' if f.write_molecule else ('the JSON record' if f is RECORDS else '—')} | `{f.media_type}` | "
            f"{options or '—'} |"
        )
    return "\n".join(rows) + "\n"
