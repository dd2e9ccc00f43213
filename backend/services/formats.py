"""The file formats as the API and the dashboard offer them, all read from the registry (``loaders/registry.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from orientscope.loaders import registry
from orientscope.services.errors import InvalidInput

AUTO = registry.AUTO
INGEST_CHOICES = registry.choices()  # an upload's ``format``: "auto" or a format read
EXPORT_CHOICES = registry.writable()  # an export's ``format``
DEFAULT_EXPORT = registry.DEFAULT_EXPORT.name
RECORD = registry.RECORDS.name  # GET …/molecules/{mol_id}'s own answer, a JSON record
DOWNLOADS = registry.downloads()  # the formats one molecule is downloaded in, besides its record
FALLBACK_MEDIA_TYPE = "application/octet-stream"


def media_type(name: str) -> str:
    """The media type a file in format ``name`` is served as."""
    return registry.get(name).media_type


def media_type_of(path: Path) -> str:
    """The media type of a written file, by the format its extension names."""
    fmt = registry.writer_for(Path(path))
    return fmt.media_type if fmt is not None else FALLBACK_MEDIA_TYPE


def export_media_types() -> tuple[str, ...]:
    """The media types an export's file can have."""
    return tuple(dict.fromkeys(media_type(name) for name in EXPORT_CHOICES))


def format_options(fmt: str, text: str | Mapping[str, str] | None, field=("body", "format_options")) -> dict:
    """An upload's format options (``name=value`` pairs separated by commas) checked against ``fmt``;
    InvalidInput naming ``field``, the option and what is accepted."""
    try:
        options = dict(text) if isinstance(text, Mapping) else registry.parse_options(text or "")
        return registry.check_options(fmt, options)
    except ValueError as err:
        raise InvalidInput(str(err), field) from None


def upload_summary() -> str:
    """The formats read, in words, for the upload page ("XYZ (.xyz), extended XYZ (.extxyz, …), …")."""
    return ", ".join(f"{f.label} ({', '.join(f.extensions)})" for f in registry.FORMATS)
