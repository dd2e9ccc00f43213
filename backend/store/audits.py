"""Model audits of one dataset: ``datasets/<id>/audits/<audit_id>/``.

Each audit folder holds ``audit.json`` (the figures, the input's sha256, the
seed and the bootstrap size) and ``molecules.parquet`` (one row per
(molecule, property, split)). The folder is built under a hidden name and
renamed into place at the end, so a reader sees a complete audit or none, and
a failed audit leaves nothing behind. The audits live inside the dataset's
folder, so deleting the dataset deletes them.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from pathlib import Path

import pandas as pd
import pyarrow as pa

from orientscope.core.errors import NotFoundError
from orientscope.core.settings import validate_id
from orientscope.store.atomic import atomic_write_json, atomic_write_table, read_json, read_table
from orientscope.store.datasets import dataset_dir

RECORD = "audit.json"
MOLECULES = "molecules.parquet"


def new_audit_id() -> str:
    return f"a{uuid.uuid4().hex[:16]}"


def audits_root(data_dir: Path, dataset_id: str) -> Path:
    return dataset_dir(data_dir, dataset_id) / "audits"


def audit_dir(data_dir: Path, dataset_id: str, audit_id: str) -> Path:
    try:
        validate_id(audit_id, "audit id")
    except ValueError:
        raise NotFoundError(f"unknown audit {audit_id!r} of dataset {dataset_id!r}") from None
    return audits_root(data_dir, dataset_id) / audit_id


def has_audit(data_dir: Path, dataset_id: str, audit_id: str) -> bool:
    return (audit_dir(data_dir, dataset_id, audit_id) / RECORD).is_file()


def write_audit(data_dir: Path, dataset_id: str, audit_id: str, record: dict, molecules: pd.DataFrame) -> Path:
    """Write an audit's record and per-molecule table, then rename the folder into place."""
    final = audit_dir(data_dir, dataset_id, audit_id)
    if final.exists():
        raise FileExistsError(f"audit {audit_id!r} of dataset {dataset_id!r} already exists")
    building = final.with_name(f".building-{audit_id}-{uuid.uuid4().hex[:8]}")
    try:
        atomic_write_table(building / MOLECULES, pa.Table.from_pandas(molecules, preserve_index=False))
        atomic_write_json(building / RECORD, {**record, "id": audit_id, "dataset": dataset_id, "created": time.time()})
        os.rename(building, final)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return final


def read_audit(data_dir: Path, dataset_id: str, audit_id: str) -> dict:
    path = audit_dir(data_dir, dataset_id, audit_id) / RECORD
    if not path.is_file():
        raise NotFoundError(f"unknown audit {audit_id!r} of dataset {dataset_id!r}")
    return read_json(path)


def molecules_path(data_dir: Path, dataset_id: str, audit_id: str) -> Path:
    read_audit(data_dir, dataset_id, audit_id)  # NotFoundError for unknown audits
    return audit_dir(data_dir, dataset_id, audit_id) / MOLECULES


def read_audit_molecules(data_dir: Path, dataset_id: str, audit_id: str, columns: list[str] | None = None) -> pa.Table:
    return read_table(molecules_path(data_dir, dataset_id, audit_id), columns=columns)


def list_audit_ids(data_dir: Path, dataset_id: str) -> list[str]:
    root = audits_root(data_dir, dataset_id)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / RECORD).is_file())


def delete_audit(data_dir: Path, dataset_id: str, audit_id: str) -> None:
    """Remove one audit (and nothing else)."""
    folder = audit_dir(data_dir, dataset_id, audit_id)
    if not (folder / RECORD).is_file():
        raise NotFoundError(f"unknown audit {audit_id!r} of dataset {dataset_id!r}")
    trash = folder.with_name(f".deleted-{audit_id}-{time.time_ns()}")
    folder.rename(trash)
    shutil.rmtree(trash, ignore_errors=True)
