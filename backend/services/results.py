"""Locate the result a read refers to: explicit parameters or the dataset's active result."""

from __future__ import annotations

from pathlib import Path

from orientscope.core.errors import NotFoundError
from orientscope.store import datasets as ds
from orientscope.store.results import ResultStore


def open_result(data_dir: Path, dataset_id: str, params: dict | None = None) -> ResultStore:
    meta = ds.require_current_layout(dataset_id, ds.read_meta(data_dir, dataset_id))
    if params is None:
        params = meta.get("active_params")
        if not params:
            raise NotFoundError(f"dataset {dataset_id!r} has no computed results yet")
    return ResultStore(data_dir, dataset_id, params)
