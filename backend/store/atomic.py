"""Atomic file writes: write a temporary sibling, fsync, then rename over the target.

A reader (or a run killed with SIGKILL) sees either the old file or the new
one, never a half-written file.
"""

from __future__ import annotations

import ctypes
import io
import json
import os
import pickle
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


@contextmanager
def _atomic_file(path: Path, durable: bool) -> Iterator[io.BufferedWriter]:
    """A temporary sibling of ``path`` to write, renamed over it once written (fsynced if ``durable``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if durable:
        _fsync_dir(path.parent)


# What a write killed before its rename leaves: a file's temporary sibling (:func:`_atomic_file`) and a folder's
# temporary sibling (``tempfile.mkdtemp(prefix=f".{name}-")``, as the columns, column parts and map arrays write).
_TEMP_FILE = re.compile(r"^\..+\.tmp$")
_TEMP_DIR = re.compile(r"^\..+-[a-z0-9_]{8}$")


def remove_temporaries(folder: Path) -> list[Path]:
    """Remove, anywhere under ``folder``, the temporary files and folders that writes killed before their rename
    left (SIGKILL runs no cleanup); the paths removed.

    Only for a folder no one is writing into, e.g. a finished build about to be published: a resumed build
    takes over the folder of a killed one, and what that run was writing when it died is still there.
    """
    removed = []
    for path in sorted(Path(folder).rglob(".*"), reverse=True):  # children before their parents
        if path.is_file() and _TEMP_FILE.match(path.name):
            path.unlink(missing_ok=True)
        elif path.is_dir() and _TEMP_DIR.match(path.name):
            shutil.rmtree(path, ignore_errors=True)
        else:
            continue
        removed.append(path)
    return removed


def atomic_write_bytes(path: Path, data: bytes, durable: bool = True) -> None:
    """Write ``data`` to ``path`` atomically. ``durable`` False skips the fsyncs: a file that may be lost
    (or found empty) after a power failure, e.g. a cache the reader checks and can do without."""
    with _atomic_file(path, durable) as fh:
        fh.write(data)


def atomic_write_pickle(path: Path, obj, durable: bool = True) -> None:
    """Pickle ``obj`` to ``path`` atomically, streamed (protocol 5 writes large arrays straight to the
    file: no second copy of them in memory, as ``pickle.dumps`` would make)."""
    with _atomic_file(path, durable) as fh:
        pickle.dump(obj, fh, protocol=5)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _json_default(obj):
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.bool_):
        return bool(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__}")


def dumps_json(obj) -> str:
    return json.dumps(obj, default=_json_default, indent=1, allow_nan=False)


def atomic_write_json(path: Path, obj) -> None:
    atomic_write_bytes(path, dumps_json(obj).encode())


def read_json(path: Path):
    with open(path, "rb") as fh:
        return json.load(fh)


def atomic_write_table(path: Path, table: pa.Table) -> None:
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    atomic_write_bytes(path, buf.getvalue())


def read_table(path: Path, columns: list[str] | None = None) -> pa.Table:
    return pq.read_table(path, columns=columns, memory_map=True)


def iter_table_slices(path: Path, sizes: Iterable[int], columns: list[str] | None = None) -> Iterator[pa.Table]:
    """Consecutive slices of a Parquet table with ``sizes`` rows each, streamed batch by batch.

    Memory holds about one slice plus one read batch, never the whole table.
    """
    source = pq.ParquetFile(path, memory_map=True)
    empty = source.schema_arrow.empty_table()
    empty = empty.select(columns) if columns is not None else empty
    batches = source.iter_batches(batch_size=65_536, columns=columns)
    pending: list[pa.RecordBatch] = []
    held = 0
    for size in sizes:
        while held < size:
            batch = next(batches, None)
            if batch is None:
                raise ValueError(f"{path} has fewer rows than the {size} asked for")
            pending.append(batch)
            held += batch.num_rows
        table = pa.Table.from_batches(pending, schema=empty.schema)
        rest = table.slice(size)
        pending, held = rest.to_batches(), rest.num_rows
        yield table.slice(0, size)


_RENAME_EXCHANGE = 2  # linux/fs.h: swap two paths atomically
_AT_FDCWD = -100


def swap_dirs(a: Path, b: Path) -> None:
    """Exchange two folders: afterwards ``a`` holds what ``b`` held and the other way round.

    One ``renameat2(RENAME_EXCHANGE)`` where the kernel offers it, so a reader sees
    either folder complete at ``b``, never none. Elsewhere two renames; if the
    second fails, the first is undone.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is not None:
        if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
            _fsync_dir(Path(a).parent)
            _fsync_dir(Path(b).parent)
            return
        errno = ctypes.get_errno()
        if errno not in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: no exchange here, fall back
            raise OSError(errno, os.strerror(errno), str(a))
    aside = Path(b).with_name(f".{Path(b).name}.swap-{os.getpid()}")
    os.rename(b, aside)
    try:
        os.rename(a, b)
    except BaseException:
        os.rename(aside, b)
        raise
    os.rename(aside, a)
