"""One facility for caches of derived per-view and per-result data, bounded in bytes.

Map data, map layers, map figures and first page views are each a few MB at
full-QM9 size; bounding them by count let a worker grow by whatever the largest
entries happened to be. Every such cache is a namespace of a
:class:`ByteBudgetCache`, a cachetools LRU whose size is the sum of its
entries' bytes (:func:`nbytes`). A process has three instances, each with its own
budget so that entries of very different sizes do not evict each other:

* :func:`shared_cache`, ``ORIENTSCOPE_CACHE_MB`` (default 256 MB): figures, first
  page views, layers, panels, SMARTS matches (a full-QM9 view costs about 2.5 MB of
  figure plus 3-5 MB of layers: some 30-40 distinct views, more than the load
  test's 32 users visit);
* :func:`map_cache`, ``ORIENTSCOPE_MAP_CACHE_MB``: the map's points (hundreds of MB
  at 10M molecules, 15 MB for QM9);
* the loaded dataset views, ``ORIENTSCOPE_VIEW_CACHE_MB`` (about 360 MB for a
  warmed QM9), see :mod:`orientscope.services.cache`.

An item larger than its budget is built and served but not kept.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import cachetools
import numpy as np
import pandas as pd
import pyarrow as pa
from scipy.spatial import cKDTree

from orientscope.core.settings import env_name, settings
from orientscope.store.columns import mmap_base

log = logging.getLogger(__name__)

CACHE_MB_ENV = env_name("cache_mb")
MB = 1024 * 1024
_KDTREE_NODE_BYTES = 100  # scipy's ckdtreenode: split dim and value, bounds, children, start/end indices


def budget_bytes(setting: str = "cache_mb") -> int:
    """The byte budget of the setting ``setting``, a number of MB (``cache_mb``: ``$ORIENTSCOPE_CACHE_MB``)."""
    return int(getattr(settings(), setting) * MB)


def nbytes(value: Any, _seen: set[int] | None = None) -> int:
    """Approximate bytes held by ``value``: arrays, strings and bytes in full, containers recursed.

    An object may say its own size with a ``cache_nbytes()`` method (for example to leave
    out data it shares with other cached entries). Objects reached twice count once.
    """
    seen = set() if _seen is None else _seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if hasattr(value, "cache_nbytes"):
        return int(value.cache_nbytes())
    if isinstance(value, pd.DataFrame | pd.Series):
        return int(np.sum(value.memory_usage(index=True, deep=True)))
    if isinstance(value, cKDTree):  # points (unless memory-mapped), their order and about one node per 8 points
        points = 0 if mmap_base(value.data) is not None else value.data.nbytes
        return int(points + value.indices.nbytes + value.size * _KDTREE_NODE_BYTES)
    if isinstance(value, np.ndarray):
        if mmap_base(value) is not None:  # file pages the OS may drop, not this process's heap
            return 0
        if value.dtype != object:
            return int(value.nbytes)
        items = value.ravel().tolist()
        flat = _scalars_nbytes(items)
        return int(value.nbytes) + (sum(nbytes(v, seen) for v in items) if flat is None else flat)
    if isinstance(value, bytes | bytearray | str):
        return sys.getsizeof(value)
    if isinstance(value, dict):
        keys, values = _scalars_nbytes(value.keys()), _scalars_nbytes(value.values())
        if keys is not None and values is not None:  # e.g. a view's id -> row index: 134k entries at QM9
            return sys.getsizeof(value) + keys + values
        return sys.getsizeof(value) + sum(nbytes(k, seen) + nbytes(v, seen) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        flat = _scalars_nbytes(value)
        if flat is not None:
            return sys.getsizeof(value) + flat
        return sys.getsizeof(value) + sum(nbytes(v, seen) for v in value)
    if hasattr(value, "to_plotly_json"):  # Dash components and plotly figures: what they send
        return nbytes(value.to_plotly_json(), seen)
    fields = getattr(value, "__dict__", None)
    if fields is not None:
        return sys.getsizeof(value) + nbytes(fields, seen)
    return sys.getsizeof(value)


_SCALAR_BASES = (str, bytes, int, float, bool, type(None), np.generic)
_EMPTY_STR = sys.getsizeof("")


def _scalars_nbytes(items) -> int | None:
    """Bytes of a collection's items if all are scalars (counted in C, not one call each), else None."""
    types = set(map(type, items))
    if types == {str}:  # e.g. a map's 130k hover ids: 2 ms where getsizeof on each took 30 ms
        return _EMPTY_STR * len(items) + sum(map(len, items))  # exact for ASCII
    if all(issubclass(t, _SCALAR_BASES) for t in types):  # also NumPy scalars, e.g. np.str_ ids
        return sum(map(sys.getsizeof, items))
    return None


@dataclass(frozen=True)
class _Entry:
    value: Any
    size: int


class ByteBudgetCache:
    """A thread-safe LRU of built values, bounded by the sum of their sizes in bytes.

    Keys are ``(namespace, key)``: every cache of a process shares one budget, so the
    ceiling holds for the worker, whichever views its users open.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = int(max_bytes)
        self._lru: cachetools.LRUCache = cachetools.LRUCache(maxsize=max(self.max_bytes, 1), getsizeof=_size)
        self._lock = threading.Lock()

    @property
    def current_bytes(self) -> int:
        with self._lock:
            return int(self._lru.currsize)

    def __len__(self) -> int:
        with self._lock:
            return len(self._lru)

    def entry_size(self, namespace: str, key: Hashable) -> int | None:
        """The size ``key`` was kept with (None if not cached)."""
        with self._lock:
            entry = self._lru.get((namespace, key))
        return None if entry is None else entry.size

    def get(self, namespace: str, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            entry = self._lru.get((namespace, key))
        return default if entry is None else entry.value

    def put(self, namespace: str, key: Hashable, value: Any, size: int | None = None) -> bool:
        """Keep ``value`` (size ``nbytes(value)`` unless given); False if it is larger than the budget."""
        size = nbytes(value) if size is None else int(size)
        if size > self.max_bytes:
            log.debug("not caching %s entry of %d bytes: over the %d-byte budget", namespace, size, self.max_bytes)
            with self._lock:
                self._lru.pop((namespace, key), None)
            return False
        with self._lock:
            self._lru[(namespace, key)] = _Entry(value, size)
        return True

    def get_or_build(
        self, namespace: str, key: Hashable, build: Callable[[], Any], size: Callable[[Any], int] | None = None
    ) -> Any:
        """The cached value of ``key``, else ``build()`` (kept if it fits the budget).

        Two threads missing the same key at once may both build it; the last one is kept.
        """
        hit = self.get(namespace, key, _MISSING)
        if hit is not _MISSING:
            return hit
        value = build()
        self.put(namespace, key, value, None if size is None else size(value))
        return value

    def clear(self, namespace: str | None = None) -> None:
        with self._lock:
            for k in [k for k in self._lru if namespace is None or k[0] == namespace]:
                del self._lru[k]


_MISSING = object()


def _size(entry: _Entry) -> int:
    return max(entry.size, 1)


_caches: dict[str, ByteBudgetCache] = {}
_shared_lock = threading.Lock()


def _named(name: str, setting: str) -> ByteBudgetCache:
    with _shared_lock:
        if name not in _caches:
            _caches[name] = ByteBudgetCache(budget_bytes(setting))
        return _caches[name]


def shared_cache() -> ByteBudgetCache:
    """The process's cache, with the budget of ``$ORIENTSCOPE_CACHE_MB`` read at first use."""
    return _named("shared", "cache_mb")


# The map's points (projected axes, ids, resolved views sorted by x) have a budget of their own: at 10M
# molecules the map data (370 MB) and its default view (420 MB) together are larger than every other
# cache, and sharing one budget would let them evict each other (or never be kept at all).
def map_cache() -> ByteBudgetCache:
    """The cache of the map's points (map data and resolved views), with the budget of
    ``$ORIENTSCOPE_MAP_CACHE_MB`` (default 1024 MB) read at first use."""
    return _named("map", "map_cache_mb")


def release_freed_memory() -> None:
    """Give memory that temporaries freed back to the system: Arrow's pool and the C heap keep it otherwise.

    Building a 10M-molecule map frees about 600 MB of per-shard float64 tables and projections that
    both allocators keep for reuse: measured resident growth 990 MB for 370 MB of map data without
    this, 410 MB with it. Call it after such builds, not per request (``malloc_trim`` walks the heap).
    """
    pa.default_memory_pool().release_unused()
    libc = ctypes.util.find_library("c")
    trim = getattr(ctypes.CDLL(libc), "malloc_trim", None) if libc else None
    if trim is not None:  # glibc only
        trim(0)
