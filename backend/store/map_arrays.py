"""Persisted orientation-map arrays of one result table, for a server to memory-map instead of building.

Projecting 10M molecules' frames onto the map and sorting their 30M points by x takes
one to two minutes; stored once, a server opens them in milliseconds and holds only the
pages its requests touch. The folder is written by the pipeline's map stage
(``orientscope.pipeline.map_stage``: every precompute, ``orientscope map``, ``orientscope migrate``)
into the store (``<result dir>/map/<table>/``), or, for a result stored before it, on first open: into
the store, or, if the store is read-only, into a folder beside the memory-mapped columns
(:func:`orientscope.store.columns.columns_root`).

Layout of one map folder (row ``i`` is the ``i``-th molecule of the result, in shard order)::

    x.npy, y.npy (n, 3) float32      Mollweide coordinates of axes 1..3
    degenerate.npy (n,) bool         frames flagged as degenerate
    ids.arrow                        Arrow IPC file: one string column "id" in one record batch
    id_hash.npy (n,) uint64 sorted, id_order.npy (n,) int64: row of each sorted hash (id lookup)
    view-x.npy, view-y.npy (m,) float32, view-rows.npy (m,) int32, view-axis.npy (m,) int8:
                                     the default view (axes 1, 2, 3, no filter) sorted by x within
                                     bands of y (orientscope.science.map_order.banded_order)
    map.json                         {"signature", "n_molecules", "n_points", "whole", "bounds",
                                     "band_starts"}; written last

``signature`` names the map's rule, the frames the arrays were projected from and the view's order (a folder
whose signature differs from the result's is stale and rewritten); ``whole`` is [points,
distinct molecules] of the default view, ``bounds`` its [x0, x1, y0, y1] and ``band_starts``
the first row of each band of y (and the end).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa

from orientscope.store.atomic import atomic_write_json, read_json
from orientscope.store.columns import columns_root, save_id_index
from orientscope.store.shards import hash_ids

MAP_DIR = "map"
META = "map.json"
IDS = "ids.arrow"
VIEW_ARRAYS = ("x", "y", "rows", "axis")


def store_map_folder(result_dir: Path, table: str) -> Path:
    """The map folder of a result table inside the store."""
    return Path(result_dir) / MAP_DIR / table


def cache_map_folder(result_dir: Path, dataset_id: str, result_key: str, table: str) -> Path:
    """The map folder of a result table beside the memory-mapped columns (for stores a server may not write)."""
    tag = hashlib.sha1(str(Path(result_dir).resolve()).encode()).hexdigest()[:12]
    return columns_root() / f"map-{dataset_id}-{result_key}-{table}-{tag}"


def write_map_arrays(
    folder: Path, arrays: dict[str, np.ndarray], view: dict[str, np.ndarray], ids: pa.Array, meta: dict
) -> Path:
    """Write a map folder atomically (a temporary folder renamed into place; a stale folder is replaced).

    arrays : {"x", "y", "degenerate"}; view : {"x", "y", "rows", "axis"} of the x-sorted default view;
    ids : (n,) Arrow string array; meta : the JSON fields of the layout (the signature included).
    """
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        for name, values in arrays.items():
            np.save(tmp / f"{name}.npy", values)
        for name in VIEW_ARRAYS:
            np.save(tmp / f"view-{name}.npy", view[name])
        with pa.OSFile(str(tmp / IDS), "wb") as sink, pa.ipc.new_file(sink, pa.schema([("id", ids.type)])) as out:
            out.write_batch(pa.record_batch([ids], names=["id"]))
        # Hashed a million ids at a time: the object array hash_ids needs costs ~60 bytes an id.
        step = 1 << 20
        id_hash = np.concatenate(
            [hash_ids(ids.slice(a, step).to_numpy(zero_copy_only=False)) for a in range(0, len(ids), step)]
            or [np.zeros(0, np.uint64)]
        )
        save_id_index(tmp, id_hash)
        del id_hash
        atomic_write_json(tmp / META, meta)
        if (folder / META).is_file() and read_json(folder / META).get("signature") == meta["signature"]:
            shutil.rmtree(tmp)  # another process renamed the same map into place meanwhile (a reader may use it)
            return folder
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not (folder / META).is_file():  # another process renamed its copy into place first: use that
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


def open_map_arrays(folder: Path, signature) -> tuple[dict[str, np.ndarray], pa.Array, dict] | None:
    """({name: read-only memory map}, ids (memory-mapped Arrow array), meta) of a complete map folder
    whose signature is ``signature``; None if the folder is missing, incomplete or stale.

    Names: "x", "y", "degenerate", "id_hash", "id_order" and "view-x", "view-y", "view-rows", "view-axis".
    """
    folder = Path(folder)
    if not (folder / META).is_file():
        return None
    meta = read_json(folder / META)
    if meta.get("signature") != signature:
        return None
    arrays = {p.stem: np.load(p, mmap_mode="r") for p in sorted(folder.glob("*.npy"))}
    ids = pa.ipc.open_file(pa.memory_map(str(folder / IDS))).get_batch(0).column(0)
    return arrays, ids, meta
