"""Exports of a dataset with de-biased poses: directly for small datasets, as a background job for any.

Exports only read the dataset store; their files go to a temporary folder (direct)
or to the exports area (jobs), so they work on read-only servers.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from orientscope.core.errors import TooLarge
from orientscope.core.limits import Limits
from orientscope.core.settings import resolve_export_dir
from orientscope.pipeline import export_jobs
from orientscope.pipeline.export import (
    EXPORT_FORMATS,
    MAX_COPIES,
    MODES,
    ExportRequest,
    default_format,
    export_dataset,
    export_filename,
)
from orientscope.science.copy_rotations import PURPOSES
from orientscope.store import datasets as ds

__all__ = [
    "EXPORT_FORMATS", "MAX_COPIES", "MODES", "PURPOSES", "ExportFiles", "ExportRequest", "export_files", "export_now",
]  # fmt: skip


@dataclass(frozen=True)
class ExportFiles:
    """An export's file and its per-molecule rotations (CSV); ``folder`` is removed by ``cleanup``
    when the files are temporary."""

    data: Path
    rotations: Path
    folder: Path | None = None

    def cleanup(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def export_now(data_dir: Path, dataset_id: str, request: ExportRequest, limits: Limits | None = None) -> ExportFiles:
    """Export while the caller waits, into a temporary folder (TooLarge above ``limits.direct_export_max``)."""
    limits = limits or Limits.from_env()
    meta = ds.read_meta(data_dir, dataset_id)
    n = int(meta.get("n_molecules", 0))
    if n > limits.direct_export_max:
        raise TooLarge(
            f"dataset {dataset_id!r} has {n:,} molecules, more than the {limits.direct_export_max:,} exported "
            f"while a request waits (ORIENTSCOPE_DIRECT_EXPORT_MAX); use POST /api/datasets/{dataset_id}/exports "
            "to export it as a background job"
        )
    fmt = request.format or default_format(meta)
    tmp = Path(tempfile.mkdtemp(prefix="orientscope-export-"))
    try:
        out = tmp / export_filename(dataset_id, request.mode, fmt)
        info = export_dataset(
            data_dir, dataset_id, request.mode, out, request.seed, fmt,
            purpose=request.purpose, ids=request.ids, limit=request.limit,
        )  # fmt: skip
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ExportFiles(Path(info["path"]), Path(info["rotations_path"]), tmp)


def export_files(data_dir: Path, dataset_id: str, export_id: str, copy: int = 0) -> ExportFiles:
    """The files of a finished export job, copy ``copy`` of a multi-copy export (NotFoundError if unknown,
    NotReady while it runs or if it failed)."""
    data, rotations = export_jobs.export_files(resolve_export_dir(data_dir), dataset_id, export_id, copy)
    return ExportFiles(data, rotations)
