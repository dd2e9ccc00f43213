"""Stored datasets and their status (ready, computing, failed, or stored before the sharded layout)."""

from __future__ import annotations

import fcntl
import gzip
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from orientscope.core.errors import OldLayout
from orientscope.services.bytecache import shared_cache
from orientscope.services.cache import check_dataset_id, get_view
from orientscope.services.report import build_report
from orientscope.store import datasets as ds
from orientscope.store.atomic import read_json
from orientscope.store.results import MANIFEST

READY, COMPUTING, FAILED = "ready", "computing", "failed"
NEEDS_MIGRATION = "needs_migration"  # stored before the sharded layout: `orientscope migrate ID` converts it


@dataclass(frozen=True)
class DatasetInfo:
    id: str
    name: str
    n_molecules: int
    source: str
    status: str
    message: str
    result_key: str | None
    stages: list[str]
    skipped_stages: dict[str, str]

    def to_dict(self) -> dict:
        return asdict(self)


def _locked(lock_file: Path) -> bool:
    """True if another process holds the pipeline's exclusive lock on this result."""
    try:
        fd = os.open(lock_file, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _status(data_dir: Path, dataset_id: str, meta: dict) -> tuple[str, str, dict]:
    """(status, message, manifest of the active result or {})."""
    try:
        ds.require_current_layout(dataset_id, meta)
    except OldLayout as err:
        return NEEDS_MIGRATION, str(err), {}
    results = ds.dataset_dir(data_dir, dataset_id) / "results"
    computing = results.is_dir() and any(_locked(p / ".lock") for p in results.iterdir() if p.is_dir())
    manifest: dict = {}
    key = meta.get("active_result")
    if key and (results / key / MANIFEST).is_file():
        manifest = read_json(results / key / MANIFEST)
    if computing:
        return COMPUTING, "the pipeline is computing results for this dataset", manifest
    if meta.get("status") == FAILED:
        return FAILED, str(meta.get("message") or meta.get("error") or "the pipeline failed"), manifest
    if not key or "frames" not in manifest.get("stages", {}):
        return COMPUTING, "waiting for the pipeline: no computed results yet", manifest
    return READY, "", manifest


def dataset_info(data_dir: Path, dataset_id: str) -> DatasetInfo:
    """Name, size, source and status of one dataset (NotFoundError if unknown)."""
    meta = ds.read_meta(data_dir, check_dataset_id(dataset_id))
    status, message, manifest = _status(data_dir, dataset_id, meta)
    return DatasetInfo(
        id=dataset_id,
        name=str(meta.get("name", dataset_id)),
        n_molecules=int(meta.get("n_molecules", 0)),
        source=str(meta.get("source", "")),
        status=status,
        message=message,
        result_key=meta.get("active_result"),
        stages=list(manifest.get("stages", {})),
        skipped_stages=dict(manifest.get("skipped_stages", {})),
    )


def list_datasets(data_dir: Path) -> list[DatasetInfo]:
    """Every stored dataset, sorted by id."""
    out = []
    for dataset_id in ds.list_dataset_ids(data_dir):
        try:
            out.append(dataset_info(data_dir, dataset_id))
        except (OSError, ValueError, KeyError):  # deleted or rewritten while listing
            continue
    return out


def dataset_summary(data_dir: Path, dataset_id: str) -> dict:
    """The report object of the active result (what ``orientscope report ID --json`` prints), cached.

    Built from the store's metadata files alone, never from a view of the dataset (its per-molecule
    tables: at 10M molecules a first load writes gigabytes of memory-mapped columns), so a page's map
    and its first paint need only the map arrays. Cached per the modification times of
    ``dataset.json`` and of the active result's manifest, which every stage rewrites.
    """
    meta = ds.read_meta(data_dir, check_dataset_id(dataset_id))  # NotFoundError naming an unknown dataset
    folder = ds.dataset_dir(data_dir, dataset_id)
    key = meta.get("active_result")
    manifest = folder / "results" / key / MANIFEST if key else None
    stamps = (_mtime(folder / ds.META), _mtime(manifest) if manifest else None)
    cache_key = (str(Path(data_dir).resolve()), dataset_id, key, stamps)
    return shared_cache().get_or_build("report", cache_key, lambda: build_report(data_dir, dataset_id))


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:  # a result replaced while it is read: the next call sees the new one
        return -1


def summary_json(data_dir: Path, dataset_id: str) -> bytes:
    """:func:`dataset_summary` encoded as compact JSON once per result."""
    view = get_view(data_dir, dataset_id)
    return view.extra(
        "report_json", lambda: json.dumps(dataset_summary(data_dir, dataset_id), allow_nan=False).encode()
    )


def summary_json_gzip(data_dir: Path, dataset_id: str) -> bytes:
    """:func:`summary_json` gzip-compressed once per result, for clients that accept gzip."""
    view = get_view(data_dir, dataset_id)
    return view.extra("report_json_gz", lambda: gzip.compress(summary_json(data_dir, dataset_id), compresslevel=6))
