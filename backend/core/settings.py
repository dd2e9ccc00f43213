"""Settings resolved from the environment (read when called, never at import)."""

from __future__ import annotations

import os
import re
from pathlib import Path

DATA_DIR_ENV = "ORIENTSCOPE_DATA_DIR"
TOKEN_ENV = "ORIENTSCOPE_TOKEN"
DEFAULT_DATA_DIR = "./data"
DEFAULT_DATASET = "qm9"
DEFAULT_SEED = 0

# Ids name folders on disk, so they are restricted to a safe alphabet.
ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,63}$")


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """--data-dir, else $ORIENTSCOPE_DATA_DIR, else ./data."""
    chosen = data_dir or os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR
    return Path(chosen).expanduser().resolve()


def validate_id(value: str, what: str = "dataset id") -> str:
    """Return ``value`` if it is a safe id, else ValueError naming the rule."""
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise ValueError(
            f"invalid {what} {value!r}: use 1-64 lowercase letters, digits, '-' or '_', starting with a letter or digit"
        )
    return value


def slugify(name: str) -> str:
    """A safe id derived from a free-text name."""
    slug = re.sub(r"[^a-z0-9_\-]+", "-", name.strip().lower()).strip("-_")
    return (slug or "dataset")[:64]
