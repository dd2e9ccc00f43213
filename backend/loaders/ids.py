"""A file of molecule ids (``export --ids``, ``audit-model --ids``): which molecules to use.

Accepted:

* a text file with one id per line (a first line ``id`` is a header and skipped; blank lines are skipped);
* a CSV file (its first line holds a comma) or a Parquet file with an ``id`` column (other columns ignored).

Ids are text, kept as written (only the line ending is removed); a repeated id is an error. Ids to audit
as held out (``held_out=True``) refuse a ``split`` column that marks any of them other than ``test``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from orientscope.core.errors import DatasetError
from orientscope.loaders.parquet_orientations import PARQUET_MAGIC

ID_COLUMN = "id"


def read_ids(path: Path, held_out: bool = False) -> list[str]:
    """The ids in ``path``, in file order; DatasetError naming the file and what is wrong.

    ``held_out``: the ids are audited as molecules the model did not train on, so a split file (a ``split``
    column) that marks some of them ``train`` is refused rather than audited whole.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no ids file {path}")
    with open(path, "rb") as fh:
        head = fh.read(len(PARQUET_MAGIC))
    if head == PARQUET_MAGIC:
        ids = _column(pd.read_parquet(path), path, held_out)
    else:
        with open(path, encoding="utf-8", newline="") as fh:
            lines = fh.read().splitlines()
        if lines and "," in lines[0]:
            ids = _column(pd.read_csv(path, dtype=str, keep_default_na=False), path, held_out)
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


def _column(table: pd.DataFrame, path: Path, held_out: bool = False) -> list[str]:
    if ID_COLUMN not in table.columns:
        raise DatasetError(f"{path.name}: no 'id' column (it has {list(table.columns)[:10]})")
    if held_out and "split" in table.columns:
        other = table["split"].astype(str) != "test"
        if other.any():
            raise DatasetError(
                f"{path.name}: its 'split' column marks {int(other.sum()):,} of the {len(table):,} ids other than "
                f"'test' (e.g. {table['split'].astype(str)[other].iloc[0]!r} for id "
                f"{str(table[ID_COLUMN][other].iloc[0])!r}), and --ids audits every id it lists as held out; give "
                "only the held-out ids, or mark the split in the predictions file's 'split' column"
            )
    return table[ID_COLUMN].astype(str).tolist()
