"""A file of molecule ids (``export --ids``, ``audit-model --ids``): which molecules to use.

Accepted:

* a text file with one id per line (a first line ``id`` is a header and skipped; blank lines are skipped);
* a CSV file (its first line holds a comma) or a Parquet file with an ``id`` column (other columns ignored).

Ids are text, kept as written (only the line ending is removed); a repeated id is an error.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from orientscope.core.errors import DatasetError
from orientscope.loaders.parquet_orientations import PARQUET_MAGIC

ID_COLUMN = "id"


def read_ids(path: Path) -> list[str]:
    """The ids in ``path``, in file order; DatasetError naming the file and what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no ids file {path}")
    with open(path, "rb") as fh:
        head = fh.read(len(PARQUET_MAGIC))
    if head == PARQUET_MAGIC:
        ids = _column(pd.read_parquet(path), path)
    else:
        with open(path, encoding="utf-8", newline="") as fh:
            lines = fh.read().splitlines()
        if lines and "," in lines[0]:
            ids = _column(pd.read_csv(path, dtype=str, keep_default_na=False), path)
        else:
            ids = [line for line in lines if line.strip()]
            if ids and ids[0].strip() == ID_COLUMN:
                ids = ids[1:]
    if not ids:
        raise DatasetError(f"{path.name}: no ids (one per line, or a CSV or Parquet file with an 'id' column)")
    seen: set[str] = set()
    for line, value in enumerate(ids, start=1):
        if value in seen:
            raise DatasetError(f"{path.name}: id {value!r} is given more than once (entry {line})")
        seen.add(value)
    return ids


def _column(table: pd.DataFrame, path: Path) -> list[str]:
    if ID_COLUMN not in table.columns:
        raise DatasetError(f"{path.name}: no 'id' column (it has {list(table.columns)[:10]})")
    return table[ID_COLUMN].astype(str).tolist()
