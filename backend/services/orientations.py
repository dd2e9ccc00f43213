"""Per-molecule orientations of a dataset's active result, as a table or a download."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from backend.core.orientations_schema import EV_COLUMNS, LONLAT_COLUMNS, Q_COLUMNS, R_COLUMNS
from backend.services.cache import get_view
from backend.services.errors import InvalidInput

FORMATS = ("json", "csv", "parquet")
MEDIA_TYPES = {"json": "application/json", "csv": "text/csv", "parquet": "application/vnd.apache.parquet"}
COLUMNS = [
    "id",
    *R_COLUMNS,
    *Q_COLUMNS,
    *EV_COLUMNS,
    "degenerate",
    "degenerate_reason",
    *LONLAT_COLUMNS,
    "classifier_score",
]


def orientations_table(data_dir: Path, dataset_id: str) -> pd.DataFrame:
    """One row per molecule with the :data:`COLUMNS` (R rows r00..r22, quaternion x,y,z,w, eigenvalues, score)."""
    view = get_view(data_dir, dataset_id)

    def build() -> pd.DataFrame:
        data = {"id": view.ids}
        data.update(zip(R_COLUMNS, view.rotations.reshape(-1, 9).T, strict=True))
        data.update(zip(Q_COLUMNS, view.quaternions.T, strict=True))
        data.update(zip(EV_COLUMNS, view.eigenvalues.T, strict=True))
        data["degenerate"] = view.degenerate
        data["degenerate_reason"] = view.reasons
        data.update(zip(LONLAT_COLUMNS, view.lonlat.reshape(-1, 6).T, strict=True))
        data["classifier_score"] = view.scores
        return pd.DataFrame(data, columns=COLUMNS)

    return view.extra("orientations_table", build)


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
