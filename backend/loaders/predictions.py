"""A model's predictions on stored and rotated poses, for the model audit (CSV or Parquet).

Columns (extra columns are ignored):

=========  ========  =======================================================
column     required  meaning
=========  ========  =======================================================
id         yes       molecule id, a string matched exactly against the dataset
property   yes       property name (a dataset property, unless ``true`` is given)
stored     yes       prediction on the molecule's stored pose
rotated    yes       prediction on a rotated copy
copy       no        integer copy number (several rows per (id, property) are copies)
true       no        true value; where absent, the dataset's own value is used
split      no        ``train`` or ``test``
=========  ========  =======================================================

:func:`check_header` reads only the header and the first rows (what an API
can afford before accepting an upload); :func:`read_predictions` reads and
validates everything. Both raise :class:`DatasetError` naming the problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from orientscope.core.errors import DatasetError
from orientscope.core.limits import Limits
from orientscope.loaders.base import open_parquet
from orientscope.loaders.parquet_orientations import PARQUET_MAGIC

REQUIRED = ("id", "property", "stored", "rotated")
OPTIONAL = ("copy", "true", "split")
SPLITS = ("train", "test")
HEADER_CHECK_ROWS = 100_000
STRING_COLUMNS = ("id", "property", "split")
FINITE = "Predictions must be finite numbers."
# Two `stored` values of one (id, property) closer than this (relative) are the same value written twice.
STORED_RTOL = 1e-9


@dataclass(frozen=True)
class Predictions:
    """A validated predictions file; ``rows`` has the columns id, property, stored, rotated, true, split.

    ``true`` is NaN where the file gives none; ``split`` is None without a split column.
    """

    rows: pd.DataFrame
    format: str
    has_true: bool
    has_split: bool
    has_copy: bool

    @property
    def n_rows(self) -> int:
        return len(self.rows)


def prediction_format(path: Path) -> str:
    """``parquet`` (by suffix or magic bytes) or ``csv``."""
    path = Path(path)
    if path.suffix.lower() in (".parquet", ".pq"):
        return "parquet"
    with open(path, "rb") as fh:
        return "parquet" if fh.read(4) == PARQUET_MAGIC else "csv"


def _csv_options(columns: list[str] | None = None):
    import pyarrow.csv as pcsv

    types = {c: pa.string() for c in STRING_COLUMNS}
    types.update({c: pa.float64() for c in ("stored", "rotated", "true")})
    types["copy"] = pa.int64()
    convert = pcsv.ConvertOptions(column_types=types, include_columns=columns, strings_can_be_null=False)
    return pcsv.ReadOptions(block_size=1 << 22), convert


def _arrow_error(path: Path, err: Exception) -> DatasetError:
    return DatasetError(f"{path.name}: cannot read the predictions ({str(err).strip()[:300]})")


def _csv_batches(path: Path, columns: list[str] | None = None):
    import pyarrow.csv as pcsv

    read, convert = _csv_options(columns)
    try:
        reader = pcsv.open_csv(path, read_options=read, convert_options=convert)
    except (pa.ArrowInvalid, UnicodeDecodeError) as err:
        raise _arrow_error(path, err) from None
    return reader


def _next_batch(path: Path, reader) -> pa.RecordBatch | None:
    try:
        return reader.read_next_batch()
    except StopIteration:
        return None
    except (pa.ArrowInvalid, UnicodeDecodeError) as err:
        raise _arrow_error(path, err) from None


def _check_columns(path: Path, names: list[str]) -> list[str]:
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        shown = ", ".join(repr(n) for n in names[:12]) or "none"
        raise DatasetError(
            f"{path.name}: the predictions lack the column(s) {missing}; required are {list(REQUIRED)} "
            f"(optional {list(OPTIONAL)}); found {shown}"
        )
    return [c for c in (*REQUIRED, *OPTIONAL) if c in names]


def _check_properties(path: Path, properties: np.ndarray, known: set[str], has_true: bool) -> None:
    unknown = sorted({str(p) for p in properties} - known)
    if unknown and not has_true:
        raise DatasetError(
            f"{path.name}: unknown property {unknown[0]!r}"
            + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else "")
            + f"; without a 'true' column the property must be one of the dataset's: {sorted(known)}"
        )


def shown_as(err: DatasetError, path: Path, shown_name: str | None) -> DatasetError:
    """``err`` naming ``shown_name`` (the user's file name) instead of the spooled copy at ``path``."""
    return DatasetError(str(err).replace(Path(path).name, shown_name)) if shown_name else err


def check_header(path: Path, known_properties: set[str] | list[str]) -> list[str]:
    """Check the columns, that there are rows, and every row check on the first rows; the columns to read.

    An upload is checked with this before it is accepted, so a bad value in the first
    ``HEADER_CHECK_ROWS`` rows (NaN, a repeated copy, two splits of one id, …) is refused at once.
    """
    path = Path(path)
    if prediction_format(path) == "parquet":
        pf = open_parquet(path)
        columns = _check_columns(path, pf.schema_arrow.names)
        first = _cast_parquet(path, pf.read_row_group(0, columns=columns)) if pf.num_row_groups else None
    else:
        columns = _check_columns(path, _csv_batches(path).schema.names)
        reader = _csv_batches(path, columns)
        batches, seen = [], 0
        while seen < HEADER_CHECK_ROWS and (batch := _next_batch(path, reader)) is not None:
            batches.append(batch)
            seen += batch.num_rows
        first = pa.Table.from_batches(batches, schema=reader.schema)
    if first is None or first.num_rows == 0:
        raise DatasetError(f"{path.name}: the predictions file has a header but no rows")
    _checked_rows(path, first.to_pandas(), columns, set(known_properties), prediction_format(path) == "csv")
    return columns


def _cast_parquet(path: Path, table: pa.Table) -> pa.Table:
    """A Parquet table's columns as a CSV's are read: text ids, properties and splits, float predictions."""
    casts = {c: pa.string() for c in STRING_COLUMNS if c in table.column_names}
    casts.update({c: pa.float64() for c in ("stored", "rotated", "true") if c in table.column_names})
    for name, typ in casts.items():
        try:
            table = table.set_column(table.schema.get_field_index(name), name, table.column(name).cast(typ))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
            raise DatasetError(f"{path.name}: column {name!r} cannot be read as {typ} ({err})") from None
    return table


def _read_table(path: Path, columns: list[str], limits: Limits) -> pa.Table:
    if prediction_format(path) == "parquet":
        pf = open_parquet(path)
        limits.check_prediction_rows(pf.metadata.num_rows, path.name)
        try:
            table = pf.read(columns=columns)
        except Exception as err:
            raise _arrow_error(path, err) from None
        return _cast_parquet(path, table)
    reader = _csv_batches(path, columns)
    batches, n_rows = [], 0
    while (batch := _next_batch(path, reader)) is not None:
        n_rows += batch.num_rows
        limits.check_prediction_rows(n_rows, path.name)
        batches.append(batch)
    return pa.Table.from_batches(batches, schema=reader.schema)


def _first_bad(path: Path, bad: np.ndarray, what: str, ids: pd.Series, csv: bool, rule: str = "") -> None:
    """Raise naming the first row where ``bad`` holds, what is wrong there, and the rule it breaks."""
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        where = f"line {row + 2}" if csv else f"row {row}"
        raise DatasetError(
            f"{path.name}, {where} (id {ids.iloc[row]!r}): {what}; {int(bad.sum()):,} row(s) affected."
            + (f" {rule}" if rule else "")
        )


def _repeated(rows: pd.DataFrame, key: list[str], column: str) -> np.ndarray:
    """Rows whose ``column`` differs from the first row of their ``key``."""
    return (rows[column] != rows.groupby(key, sort=False)[column].transform("first")).to_numpy()


def _check_stored_consistent(path: Path, rows: pd.DataFrame) -> None:
    """A molecule has one stored pose, so one `stored` prediction per (id, property)."""
    key = rows.groupby(["property", "id"], sort=False).ngroup().to_numpy()
    order = np.argsort(key, kind="stable")
    k, s = key[order], rows["stored"].to_numpy()[order]
    same = k[1:] == k[:-1]
    differs = same & ~np.isclose(s[1:], s[:-1], rtol=STORED_RTOL, atol=0.0)
    if differs.any():
        row = int(order[1:][differs][0])
        raise DatasetError(
            f"{path.name}: 'stored' differs between the copies of id {rows['id'].iloc[row]!r}, property "
            f"{rows['property'].iloc[row]!r} ({int(differs.sum()):,} such pairs); the stored pose has one "
            "prediction, written identically on every copy's row"
        )


def read_predictions(path: Path, known_properties: set[str] | list[str], limits: Limits | None = None) -> Predictions:
    """Read and validate a predictions file (see the module docstring)."""
    path = Path(path)
    limits = limits or Limits.from_env()
    columns = check_header(path, known_properties)
    fmt = prediction_format(path)
    rows = _checked_rows(path, _read_table(path, columns, limits).to_pandas(), columns, set(known_properties),
                         fmt == "csv")  # fmt: skip
    return Predictions(
        rows=rows[["id", "property", "stored", "rotated", "true", "split"]],
        format=fmt,
        has_true="true" in columns,
        has_split="split" in columns,
        has_copy="copy" in columns,
    )


def _checked_rows(path: Path, rows: pd.DataFrame, columns: list[str], known: set[str], csv: bool) -> pd.DataFrame:
    """``rows`` checked value by value (naming the first bad line), with ``true`` (NaN where not given) and
    ``split`` (None without the column); all of a file's rows, or the first rows an upload is checked on."""
    for col in ("id", "property"):
        _first_bad(path, rows[col].isna().to_numpy(), f"empty {col!r}", rows["id"].fillna(""), csv)
    for col in ("stored", "rotated"):
        bad = ~np.isfinite(rows[col].to_numpy(np.float64))
        _first_bad(path, bad, f"{col!r} is NaN, infinite or empty", rows["id"], csv, FINITE)
    has_true = "true" in columns
    if not has_true:
        rows["true"] = np.nan
    true = rows["true"].to_numpy(np.float64)
    _first_bad(path, np.isinf(true), "'true' is infinite", rows["id"], csv, FINITE)
    # Where the file gives no true value, the dataset's own is used, so the property must be the dataset's.
    _check_properties(path, rows.loc[np.isnan(true), "property"].unique(), known, False)
    has_split = "split" in columns
    if has_split:
        bad = ~rows["split"].isin(SPLITS).to_numpy()
        _first_bad(path, bad, f"'split' must be one of {list(SPLITS)}", rows["id"], csv)
        _first_bad(path, _repeated(rows, ["id"], "split"), "'split' differs from an earlier row of this id",
                   rows["id"], csv, "A molecule is either trained on or held out: give all its rows one split.")  # fmt: skip
    else:
        rows["split"] = None
    if "copy" in columns:  # a row without a copy number is a copy like any other, as without the column
        again = (rows.duplicated(["property", "id", "copy"]) & rows["copy"].notna()).to_numpy()
        _first_bad(path, again, "this (id, property, copy) is given again", rows["id"], csv,
                   "Each copy of a molecule has one row per property.")  # fmt: skip
    _check_stored_consistent(path, rows)
    return rows
