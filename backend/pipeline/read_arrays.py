"""The read arrays of a result: the memory-mapped columns and the map arrays every read serves from.

Written at the end of every precompute (with the other results, under the result's lock),
by ``orientscope map`` and ``orientscope migrate``, and on the first open of a result stored
before they existed (``services.cache``, ``services.map_data``). Each folder is written
atomically (a temporary folder renamed into place) and records the signature of what it
was built from (the dataset's shards, the result's frames and models stages), so a re-run
skips a folder that is current and rebuilds a stale one; a failed write leaves the
earlier folder as it was.
"""

from __future__ import annotations

import logging
from pathlib import Path

from orientscope.core.progress import Progress
from orientscope.pipeline.map_stage import TABLES, write_maps
from orientscope.store import columns as cols
from orientscope.store import datasets as ds
from orientscope.store.results import ResultStore
from orientscope.store.shards import shard_table_paths

log = logging.getLogger(__name__)


def has_scores(store: ResultStore) -> bool:
    """Whether the result's models stage wrote per-molecule scores (one table, or one per shard)."""
    entry = store.manifest().get("stages", {}).get("models")
    if entry is None:
        return False
    return "scores" in entry.get("tables", []) or bool(shard_table_paths(store.dir, "models", "scores"))


def write_columns(data_dir: Path, dataset_id: str, store: ResultStore, folder: Path | None = None) -> Path:
    """The result's columns folder (``store.columns``), built unless ``folder`` (default: in the result) is current."""
    meta = ds.read_meta(data_dir, dataset_id)
    folder = cols.store_columns_folder(store.dir) if folder is None else Path(folder)
    limit = store.params.get("limit")
    signature = cols.columns_signature(meta, store.manifest(), limit)
    if cols.current_columns(folder, signature):
        return folder
    log.info("writing the columns of %s [%s] to %s", dataset_id, store.key, folder)
    return cols.build_columns(data_dir, dataset_id, meta, store.dir, folder, has_scores(store), signature, limit)


def write_read_arrays(
    data_dir: Path, dataset_id: str, store: ResultStore, engine=None, progress: Progress | None = None
) -> list[Path]:
    """Write (or keep, if current) the result's columns and both tables' map arrays in its folder."""
    if progress:
        progress(0.0, "memory-mapped columns", "read arrays")
    folders = [write_columns(data_dir, dataset_id, store)]
    if progress:
        progress(0.5, "map arrays", "read arrays")
    folders += write_maps(store, engine, TABLES)
    if progress:
        progress(1.0, "done", "read arrays")
    return folders
