"""Per-molecule orientations of a dataset's active result, as a table or a download."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from orientscope.core.orientations_schema import EV_COLUMNS, LONLAT_COLUMNS, Q_COLUMNS, R_COLUMNS
from orientscope.science.frames import orientation_of, symmetry_kinds
from orientscope.services.cache import DatasetView, get_view
from orientscope.services.errors import InvalidInput

FORMATS = ("json", "csv", "parquet")
MEDIA_TYPES = {"json": "application/json", "csv": "text/csv", "parquet": "application/vnd.apache.parquet"}
COLUMNS = [
    "id",
    *R_COLUMNS,
    *Q_COLUMNS,
    *EV_COLUMNS,
    "degenerate",
    "degenerate_reason",
    "orientation",
    *LONLAT_COLUMNS,
    "classifier_score",
]


# Up to this many rows the encoded table is kept in the view (full QM9's JSON: tens of MB); a larger one
# would hold gigabytes of bytes in the server (10M rows), so it is streamed and encoded on every request.
ENCODED_ROWS_MAX = 1_000_000
STREAM_BLOCK = 20_000  # rows encoded at a time for views too large to encode whole (~1-10 s of CSV on a busy machine)


def _block(view: DatasetView, a: int, b: int) -> pd.DataFrame:
    """Rows ``a:b`` of the orientations table (the view reads them without mapping them: a full
    export through its maps left every page of ten columns, ~2.7 GB at 10M, in the server's RSS)."""
    data = {"id": view.span("ids", a, b)}
    data.update(zip(R_COLUMNS, view.span("rotations", a, b).reshape(-1, 9).T, strict=True))
    data.update(zip(Q_COLUMNS, view.span("quaternions", a, b).T, strict=True))
    data.update(zip(EV_COLUMNS, view.span("eigenvalues", a, b).T, strict=True))
    data["degenerate"] = view.span("degenerate", a, b)
    data["degenerate_reason"] = reasons = view.span("reasons", a, b)
    # What the statistics read of each pose (science.frames): none, one axis, or the full frame. A
    # frame without the full class is arbitrary where its symmetry leaves it undefined (an ion's is the
    # identity): a script that trains on these rows should leave those out, as the statistics do.
    data["orientation"] = orientation_of(symmetry_kinds(np.asarray(reasons, dtype=str)))[0]
    data.update(zip(LONLAT_COLUMNS, view.span("lonlat", a, b).reshape(-1, 6).T, strict=True))
    data["classifier_score"] = view.span("scores", a, b)
    return pd.DataFrame(data, columns=COLUMNS)


def orientations_table(data_dir: Path, dataset_id: str) -> pd.DataFrame:
    """One row per molecule with the :data:`COLUMNS` (R rows r00..r22, quaternion x,y,z,w, eigenvalues, score)."""
    view = get_view(data_dir, dataset_id)
    return view.extra("orientations_table", lambda: _block(view, 0, len(view)))


def _encode(df: pd.DataFrame, fmt: str) -> bytes:
    if fmt == "json":
        return df.to_json(orient="records", double_precision=15).encode()
    if fmt == "csv":
        return df.to_csv(index=False, float_format="%.17g").encode()
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), buf, compression="zstd")
    return buf.getvalue()


def orientations_bytes(data_dir: Path, dataset_id: str, fmt: str = "json") -> tuple[bytes, str, str]:
    """(file bytes, media type, file name) of the orientations table; encoded once per result and cached."""
    if fmt not in FORMATS:
        raise InvalidInput(f"unknown format {fmt!r}; expected one of {FORMATS}", ("query", "format"))
    view = get_view(data_dir, dataset_id)
    data = view.extra(f"orientations_{fmt}", lambda: _encode(orientations_table(data_dir, dataset_id), fmt))
    return data, MEDIA_TYPES[fmt], f"{dataset_id}_{view.result_key}_orientations.{fmt}"


def _encode_blocks(view: DatasetView, fmt: str, block: int) -> Iterator[bytes]:
    """The table of ``view`` encoded ``block`` rows at a time: the same rows and values as :func:`_encode`."""
    starts = range(0, len(view), block)
    if fmt == "parquet":
        sink = io.BytesIO()
        writer = None
        for a in starts:
            table = pa.Table.from_pandas(_block(view, a, a + block), preserve_index=False)
            writer = writer or pq.ParquetWriter(sink, table.schema, compression="zstd")
            writer.write_table(table)
            yield sink.getvalue()
            sink.seek(0)
            sink.truncate()
        if writer is not None:
            writer.close()
            yield sink.getvalue()
        return
    if fmt == "json":
        yield b"["
    for a in starts:
        df = _block(view, a, a + block)
        if fmt == "json":
            yield (b"," if a else b"") + df.to_json(orient="records", double_precision=15).encode()[1:-1]
        else:
            yield df.to_csv(index=False, header=a == 0, float_format="%.17g").encode()
    if fmt == "json":
        yield b"]"


def orientations_stream(
    data_dir: Path, dataset_id: str, fmt: str = "json", block: int = STREAM_BLOCK
) -> tuple[Iterator[bytes], int | None, str, str]:
    """(chunks, total bytes or None, media type, file name) of the orientations table.

    A result of more than :data:`ENCODED_ROWS_MAX` molecules is encoded ``block`` rows at a time
    while it is sent (its size is not known in advance); a smaller one is :func:`orientations_bytes`.
    """
    view = get_view(data_dir, dataset_id)
    if len(view) <= ENCODED_ROWS_MAX:  # encoded whole once, its size known, and cached for the next request
        data, media, name = orientations_bytes(data_dir, dataset_id, fmt)
        return iter([data]), len(data), media, name
    if fmt not in FORMATS:
        raise InvalidInput(f"unknown format {fmt!r}; expected one of {FORMATS}", ("query", "format"))
    name = f"{dataset_id}_{view.result_key}_orientations.{fmt}"
    return _encode_blocks(view, fmt, block), None, MEDIA_TYPES[fmt], name
