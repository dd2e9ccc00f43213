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
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from orientscope.core.progress import Progress
from orientscope.pipeline.map_stage import TABLES, map_signature, write_maps
from orientscope.store import columns as cols
from orientscope.store import datasets as ds
from orientscope.store import map_arrays
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


def read_arrays_current(data_dir: Path, dataset_id: str, store: ResultStore) -> bool:
    """Whether the result's columns and both maps are stored with the signature of what they are built from."""
    meta = ds.read_meta(data_dir, dataset_id)
    signature = cols.columns_signature(meta, store.manifest(), store.params.get("limit"))
    if not cols.current_columns(cols.store_columns_folder(store.dir), signature):
        return False
    return all(
        map_arrays.open_map_arrays(map_arrays.store_map_folder(store.dir, table), map_signature(store, table))
        is not None
        for table in TABLES
    )


def write_read_arrays(
    data_dir: Path, dataset_id: str, store: ResultStore, engine=None, progress: Progress | None = None
) -> list[Path]:
    """Write (or keep, if current) the result's columns and both tables' map arrays in its folder.

    The three folders are independent, so they are written on two threads: the columns on one, the maps on
    the other (Parquet reads, NumPy and file writes release the GIL). Run one after the other they added
    30 % to a frames-only ingest of 250,000 molecules, whose frames stage leaves the second core idle.
    Each folder is atomic on its own: if one fails the others are still written, and the first error is raised.
    ``progress`` hears nothing when every folder is current (a re-run that writes nothing shows no bar).
    """
    if progress and read_arrays_current(data_dir, dataset_id, store):
        progress = None
    if progress:
        progress(0.0, "memory-mapped columns and map arrays", "read arrays")
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="read-arrays") as pool:
        tasks = {
            pool.submit(write_columns, data_dir, dataset_id, store): "memory-mapped columns",
            pool.submit(write_maps, store, engine, TABLES): "map arrays",
        }
        done = 0
        for task in as_completed(tasks):
            done += 1
            if progress:
                progress(done / len(tasks), f"{tasks[task]} written", "read arrays")
        columns, maps = (task.result() for task in tasks)
    return [columns, *maps]
