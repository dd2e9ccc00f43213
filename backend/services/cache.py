"""The one read view of a dataset's active result, shared by every read service, at every size.

A :class:`DatasetView` serves the molecules and the per-molecule tables of the
dataset's active result from the result's memory-mapped columns
(``store.columns``), for 200 molecules as for 10M: a request for one molecule is
a hash lookup plus a few reads, and only the pages requests touch are held. Views live in an LRU bounded in bytes
(``ORIENTSCOPE_VIEW_CACHE_MB``) keyed by (data dir, dataset id); each lookup compares the modification times of
``dataset.json`` and of the result's ``manifest.json`` with the ones the view
was built from, so a recomputed or re-activated result is picked up at once.
Expensive pieces (report, export bytes, k-d tree, chemistry tables) are built
lazily, once, under a lock.
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from orientscope.core.errors import NotFoundError
from orientscope.core.settings import env_name, validate_id
from orientscope.pipeline.read_arrays import write_columns
from orientscope.services.bytecache import ByteBudgetCache, budget_bytes, nbytes, release_freed_memory
from orientscope.services.results import open_result
from orientscope.store import columns as cols
from orientscope.store import datasets as ds
from orientscope.store.results import MANIFEST, ResultStore
from orientscope.store.shards import shard_table_paths

log = logging.getLogger(__name__)

# Dataset views get their own byte budget, apart from ORIENTSCOPE_CACHE_MB's cache of
# derived data: a warmed full-QM9 view holds its panels, k-d tree, fingerprint and SMARTS
# indexes on the heap (its columns are memory maps), so in one shared budget a single view would evict
# every map figure and first page (or be refused outright), while a burst of small map entries
# would evict the view that costs seconds to reload. The default holds one warmed 10M-molecule
# view (~290 MB with its k-d tree and one sort order; ~600 MB before the tree kept the mapped quaternions;
# at 512 MB it was reloaded on every request, 20-80 s each) and several warmed QM9-sized views; with the
# 256 MB of derived data a warmed worker stays near 1.1 GB after `make loadtest` (one dataset). Several large
# datasets used in turn fill it: lower it to bound a worker (e.g. 512 MB holds one warmed QM9).
VIEW_CACHE_MB_ENV = env_name("view_cache_mb")
_VIEWS = "views"

# Optional stages written by other parts of the pipeline: (stage, table).
MODELS_SCORES = ("models", "scores")
CHEMISTRY_MOLECULES = ("chemistry", "molecules")
CHEMISTRY_FINGERPRINTS = ("chemistry", "fingerprints")


class WouldBlock(Exception):
    """Raised under :func:`warm_only` when an answer needs the store read or a piece built."""


_WARM_ONLY = contextvars.ContextVar("orientscope_warm_only", default=False)


def warm_only(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` if it needs nothing but views and pieces already in memory; else WouldBlock.

    Lets an async handler answer hot requests on the event loop and send cold
    ones (seconds of loading) to a worker thread.
    """
    token = _WARM_ONLY.set(True)
    try:
        return fn(*args)
    finally:
        _WARM_ONLY.reset(token)


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except FileNotFoundError:
        return -1


def check_dataset_id(dataset_id: str) -> str:
    """The id if well formed and stored, else NotFoundError naming it."""
    try:
        validate_id(dataset_id)
    except ValueError as err:
        raise NotFoundError(f"unknown dataset {dataset_id!r} ({err})") from None
    return dataset_id


class DatasetView:
    """Arrays of one dataset's active result, over its memory-mapped columns (``store.columns``), at any size.

    Row ``i`` of every array refers to the ``i``-th molecule of the result (the order
    of its frames table; a limit run's subset). The arrays are read-only memory maps,
    so only the pages a request touches are read; single molecules are read with
    ``pread``, and ids are found through a sorted hash index. Columns small enough
    (:data:`RESIDENT_SHARE`) are read into memory instead, behind the same readers
    (``store.columns.ArrayReader``, ``DictIndex``). The columns are written
    by the pipeline with the result (``pipeline.read_arrays``); a result stored before
    that has them written on first open (seconds at QM9, minutes at 10M).
    """

    def __init__(self, data_dir: Path, dataset_id: str, meta: dict, store: ResultStore, signature: tuple):
        self.data_dir = data_dir
        self.dataset_id = dataset_id
        self.meta = meta
        self.store = store
        self.signature = signature
        self.manifest = store.manifest()
        self._lock = threading.RLock()
        self._extras: dict[str, Any] = {}
        folder = _columns_folder(data_dir, dataset_id, meta, store)
        self.columns_dir = folder
        # Columns of at most a quarter of the view budget (full QM9's: 130 MB) are read into memory: a molecule
        # is then a few indexings, where a pread per column cost 0.99 ms against 0.36 ms per QM9 molecule
        # detail. Larger ones are memory-mapped and their single rows read with pread (the same code reads both).
        self.resident = cols.folder_bytes(folder) <= budget_bytes("view_cache_mb") // RESIDENT_SHARE
        arrays, info = cols.open_columns(folder, mapped=not self.resident)
        if self.resident:
            self._reader = cols.ArrayReader(arrays)
            self._id_index = cols.DictIndex(arrays["ids"])
        else:
            # Single molecules (details, page rows, neighbours) are read with pread, whole columns through the maps.
            self._reader = cols.ColumnReader(
                folder, [*_ROW_COLUMNS.values(), "formula", "offsets", "z", "positions", "id_hash", "id_order"]
            )
            self._id_index = cols.IdIndex(self._reader, arrays["id_hash"])
        self._mapped = {id(array): name for name, array in arrays.items()}  # for value_at
        self._labels = np.asarray(info["reasons"], dtype=str)
        self._reads, self._n = 0, len(arrays["ids"])
        self.ids = arrays["ids"]
        self.rotations = arrays["rotations"]
        self.quaternions = arrays["quaternions"]
        self.eigenvalues = arrays["eigenvalues"]
        self.centroids = arrays["centroids"]
        self.degenerate = arrays["degenerate"]
        self.reasons = _Labelled(arrays["reason_codes"], np.asarray(info["reasons"], dtype=str))
        self.lonlat = arrays["lonlat"]
        self.n_atoms = arrays["n_atoms"]
        self.smiles = arrays["smiles"]
        self.charges = arrays["charges"]
        self.property_names = list(info["properties"])
        self.property_values = arrays["properties"]
        self.property_units = dict(meta.get("property_units", {}))
        self.scores = arrays["scores"]
        # Known at build time (the chemistry stage's formulas are the same Hill formulas), so
        # nothing loads the chemistry tables (gigabytes at 10M) or scans 10M formulas for them.
        self._extras["formulas"] = arrays["formula"]
        if not self.has_table(*CHEMISTRY_MOLECULES):
            # With a chemistry stage, its own formula groups (codes and labels) are used instead.
            self._extras["group_labels:formula"] = {f: f for f in info["formulas"]}
        # Read into memory, the arrays are the view's heap (the formulas piece is one of them); mapped, the page cache's.
        self._base_bytes = nbytes(list(arrays.values())) + nbytes(self._id_index.rows) if self.resident else 0
        self._extra_bytes = 0 if self.resident else nbytes(self._extras)
        self._maps = [] if self.resident else list(arrays.values())

    # ------------------------------------------------------------ basics
    def __len__(self) -> int:
        return len(self.ids)

    @property
    def result_key(self) -> str:
        return self.store.key

    def cache_nbytes(self) -> int:
        """Bytes held on the heap: columns read into memory and every lazy piece built so far (memory maps count
        nothing: they are the page cache's)."""
        return self._base_bytes + self._extra_bytes

    def has_table(self, stage: str, table: str) -> bool:
        """True if the stage is computed and wrote ``table`` (one file, or one per shard)."""
        entry = self.manifest.get("stages", {}).get(stage)
        if entry is None:
            return False
        return table in entry.get("tables", []) or bool(shard_table_paths(self.store.dir, stage, table))

    def canonical_positions(self, i: int, positions: np.ndarray | None = None) -> np.ndarray:
        """(n, 3) Å: R @ (x - centroid), exactly as the pipeline defines it.

        ``positions``: row ``i``'s stored positions if the caller has read them already.
        """
        pos = self.atoms(i)[1] if positions is None else positions
        return (pos - self.cell("centroids", i)) @ self.cell("rotations", i).T

    def aligned_table(self, stage: str, table: str) -> pd.DataFrame | None:
        """A per-molecule table of an optional stage, reindexed to this result's rows (None if absent)."""
        if not self.has_table(stage, table):
            return None
        df = self.store.table(stage, table).to_pandas()
        if "id" not in df.columns:
            return df.reset_index(drop=True) if len(df) == len(self) else None
        df["id"] = df["id"].astype(str)
        return df.drop_duplicates("id").set_index("id").reindex(self.ids).reset_index()

    # ------------------------------------------------------------ lazy pieces
    def _built(self, name: str, build: Callable[[], Any]) -> Any:
        """A derived object built once per view (thread-safe)."""
        try:
            return self._extras[name]
        except KeyError:
            pass
        if _WARM_ONLY.get():
            raise WouldBlock(name)
        with self._lock:
            if name not in self._extras:
                value = build()
                self._extra_bytes += nbytes(value)
                self._extras[name] = value
            return self._extras[name]

    def extra(self, name: str, build: Callable[[], Any]) -> Any:
        """A derived object built once per view (thread-safe); after it is built, the pages it read are unmapped.

        Building a piece (a sort order, the pose tree) reads whole columns; left mapped they
        would count ~1 KB per molecule in the server's RSS, though the page cache keeps them.
        """
        if name in self._extras:
            return self._extras[name]
        value = self._built(name, build)
        for array in self._maps:
            cols.release_pages(array)
        return value

    def row_of(self, mol_id: str) -> int:
        row = self._id_index.row_of(str(mol_id))
        if row is None:
            raise NotFoundError(f"unknown molecule {mol_id!r} in dataset {self.dataset_id!r}")
        return row

    def atoms(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        a, b = self._reader.span("offsets", self._check(i), i + 2).tolist()
        return self._reader.span("z", a, b).astype(np.int16), self._reader.span("positions", a, b)

    def cell(self, column: str, i: int) -> Any:
        name = _ROW_COLUMNS.get(column)
        if name is None:
            return getattr(self, column)[i]
        value = self._reader.row(name, self._check(i))
        return self._labels[value] if column == "reasons" else value

    def cells(self, column: str, rows: np.ndarray) -> np.ndarray:
        name = _ROW_COLUMNS.get(column)
        rows = np.asarray(rows, dtype=np.int64)
        if name is None or len(rows) > _PREAD_MAX_ROWS:
            return getattr(self, column)[rows]
        for i in rows.tolist():
            self._check(i)
        values = self._reader.take(name, rows)
        return self._labels[values] if column == "reasons" else values

    def span(self, column: str, start: int, stop: int) -> np.ndarray:
        name = _ROW_COLUMNS.get(column)
        if name is None:
            return np.asarray(getattr(self, column)[start:stop])
        start, stop, _ = slice(start, stop).indices(len(self))
        values = self._reader.span(name, start, max(start, stop))
        return self._labels[values] if column == "reasons" else values

    def value_at(self, array: np.ndarray, i: int) -> Any:
        name = self._mapped.get(id(array))
        if name != "formula":  # the one mapped column handed out as a piece (formulas, formula group codes)
            return array[i]
        return self._reader.row(name, self._check(i))

    def _check(self, i: int) -> int:
        """``i`` if it is a row; every so many reads, unmap the pages whole-column reads left mapped."""
        if not 0 <= i < self._n:
            raise IndexError(f"row {i} of dataset {self.dataset_id!r} with {len(self)} molecules")
        self._reads += 1
        if self._maps and self._reads % _RELEASE_EVERY == 0:
            # Lists (formulas, group codes) and the pose tree's points are read through the maps; the
            # kernel maps whole folios around each touched page, so random rows would map the columns.
            for array in self._maps:
                cols.release_pages(array)
        return i


# Per-molecule arrays of a view and the column files it reads their rows from.
_ROW_COLUMNS = {
    "ids": "ids",
    "smiles": "smiles",
    "n_atoms": "n_atoms",
    "scores": "scores",
    "degenerate": "degenerate",
    "reasons": "reason_codes",
    "rotations": "rotations",
    "quaternions": "quaternions",
    "eigenvalues": "eigenvalues",
    "centroids": "centroids",
    "lonlat": "lonlat",
    "property_values": "properties",
    "charges": "charges",
}
RESIDENT_SHARE = 4  # columns of at most 1/RESIDENT_SHARE of ORIENTSCOPE_VIEW_CACHE_MB are read into memory
_PREAD_MAX_ROWS = 4096  # more rows than this are read through the maps (one read each would be slower)
_RELEASE_EVERY = 4096  # row reads between two releases of the mapped pages (~0.05 ms each)


class _Labelled:
    """(n,) str array stored as codes into a few labels (e.g. degenerate reasons); indexes like an array."""

    def __init__(self, codes: np.ndarray, labels: np.ndarray):
        self.codes, self.labels = codes, labels

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, key):
        return self.labels[self.codes[key]]


def _columns_folder(data_dir: Path, dataset_id: str, meta: dict, store: ResultStore) -> Path:
    """The result's current columns folder: the one the pipeline stored with it, else one written now
    (into the result folder, or beside it in the column cache if the store is read-only)."""
    signature = cols.columns_signature(meta, store.manifest(), store.params.get("limit"))
    stored = cols.store_columns_folder(store.dir)
    cached = cols.cache_columns_folder(store.dir, dataset_id, store.key)
    for folder in (stored, cached):
        if cols.current_columns(folder, signature):
            return folder
    log.info("%s [%s] was stored without its columns: writing them", dataset_id, store.key)
    try:
        folder = write_columns(data_dir, dataset_id, store, stored)
    except PermissionError:  # a read-only store
        folder = write_columns(data_dir, dataset_id, store, cached)
    release_freed_memory()  # the build's per-shard tables and id sort: 350 MB kept by the allocators at 10M
    return folder


class ViewCache:
    """LRU of :class:`DatasetView` objects bounded in bytes, invalidated by file modification times.

    A view's size is measured when it is loaded and grows as its lazy pieces are built;
    the cache re-weighs a view on each hit, so those pieces count against the budget too.
    A view larger than the whole budget is served but not kept (each request reloads it).
    """

    def __init__(self, max_bytes: int | None = None):
        self._cache = ByteBudgetCache(budget_bytes("view_cache_mb") if max_bytes is None else max_bytes)
        self._lock = threading.Lock()
        self._key_locks: dict[tuple[str, str], threading.Lock] = {}
        self._paths: dict[tuple, tuple[str, str | None]] = {}

    @property
    def max_bytes(self) -> int:
        return self._cache.max_bytes

    @property
    def current_bytes(self) -> int:
        return self._cache.current_bytes

    def _signature(self, data_dir: Path, dataset_id: str, result_key: str | None) -> tuple:
        paths = self._paths.get((data_dir, dataset_id, result_key))
        if paths is None:  # building the Path objects cost more than the two stat calls (0.1 ms a request)
            folder = ds.dataset_dir(data_dir, dataset_id)
            manifest = str(folder / "results" / result_key / MANIFEST) if result_key else None
            paths = self._paths[(data_dir, dataset_id, result_key)] = (str(folder / ds.META), manifest)
        meta, manifest = paths
        return (_mtime(meta), _mtime(manifest) if manifest else -1)

    def _fresh(self, key: tuple[str, str], data_dir: Path, dataset_id: str) -> DatasetView | None:
        view = self._cache.get(_VIEWS, key)
        if view is None or view.signature != self._signature(data_dir, dataset_id, view.result_key):
            return None
        size = view.cache_nbytes()
        if self._cache.entry_size(_VIEWS, key) != size:  # lazy pieces were built since it was weighed
            self._cache.put(_VIEWS, key, view, size=size)
        return view

    def get(self, data_dir: Path, dataset_id: str) -> DatasetView:
        check_dataset_id(dataset_id)
        key = (str(data_dir), dataset_id)
        view = self._fresh(key, data_dir, dataset_id)
        if view is not None:
            return view
        if _WARM_ONLY.get():
            raise WouldBlock(dataset_id)
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:  # one loader per dataset; others wait for it
            view = self._fresh(key, data_dir, dataset_id)
            if view is not None:
                return view
            view = self._load(data_dir, dataset_id)
            if not self._cache.put(_VIEWS, key, view, size=view.cache_nbytes()):
                log.warning(
                    "%s needs %.0f MB, more than %s=%.0f MB: serving it uncached (every request reloads it)",
                    dataset_id, view.cache_nbytes() / 2**20, VIEW_CACHE_MB_ENV, self.max_bytes / 2**20,
                )  # fmt: skip
            return view

    def _load(self, data_dir: Path, dataset_id: str) -> DatasetView:
        meta = ds.read_meta(data_dir, dataset_id)
        store = open_result(data_dir, dataset_id)
        if not store.completed("frames"):
            raise NotFoundError(f"dataset {dataset_id!r} has no computed frames yet")
        signature = self._signature(data_dir, dataset_id, store.key)
        log.info("loading %s [%s] into the view cache", dataset_id, store.key)
        return DatasetView(data_dir, dataset_id, meta, store, signature)

    def clear(self) -> None:
        self._cache.clear()


_CACHE = ViewCache()


def get_view(data_dir: Path, dataset_id: str) -> DatasetView:
    """The cached view of ``dataset_id``'s active result (NotFoundError if unknown or not computed)."""
    return _CACHE.get(data_dir if isinstance(data_dir, Path) else Path(data_dir), dataset_id)


def view_cache() -> ViewCache:
    """The process's cache of dataset views."""
    return _CACHE


def clear_cache() -> None:
    _CACHE.clear()
