"""Memory-mapped columns of one result of a dataset: how every read serves it, at any size, without loading it.

A sharded dataset's Parquet tables are compressed in row groups of up to a million
rows, so one molecule read from them costs a whole row group (tens of ms). The
pipeline converts them once, with the result's frames, into plain ``.npy`` files
(``pipeline.read_arrays``: at the end of every precompute into ``<result dir>/columns/``,
or on the first open of a result stored before that, into the result folder or, for a
read-only store, a cache folder outside it) and a server memory-maps them: a molecule is
then a few slices, and only the pages a request touches are read.

Layout of one cache folder (row ``i`` is the ``i``-th molecule of the result, in shard order)::

    ids.npy (n,) U          smiles.npy (n,) U        formula.npy (n,) U     n_atoms.npy (n,) int32
    offsets.npy (n+1,) int64 into z.npy (n_atoms,) uint8 and positions.npy (n_atoms, 3) float64 Å
    rotations.npy (n, 3, 3)  quaternions.npy (n, 4)  eigenvalues.npy (n, 3) centroids.npy (n, 3)
    lonlat.npy (n, 3, 2) deg degenerate.npy (n,) bool reason_codes.npy (n,) int32 into meta "reasons"
    scores.npy (n,) float64 (NaN without a models stage)   properties.npy (n, p) float64
    charges.npy (n,) float64 total charge in e (NaN where the file gave none)
    id_hash.npy (n,) uint64 sorted, id_order.npy (n,) int64: row of each sorted hash (id lookup)
    columns.json            property names, reasons, formulas and the signature of what they were
                            built from (:func:`columns_signature`); written last (marks the folder complete)

A result computed with a limit holds the subset's molecules, in the order of its frames
(``core.dataset.select_rows``). Folders written before the signature (server caches of
format 1) are stale and rebuilt.

On disk this is about 1 KB per molecule of ~18 atoms (positions are kept in float64
so every answer equals the in-memory one).
"""

from __future__ import annotations

import hashlib
import logging
import mmap
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from orientscope.core.dataset import RESERVED_COLUMNS, TOTAL_CHARGE, select_rows
from orientscope.core.settings import settings
from orientscope.store import column_parts as parts
from orientscope.store.atomic import atomic_write_json, read_json, read_table
from orientscope.store.shards import (
    ShardRef,
    hash_ids,
    open_shard_arrays,
    read_shard_table,
    shard_refs,
    shard_table_paths,
)

log = logging.getLogger(__name__)

META = "columns.json"
COLUMNS_DIR = "columns"  # in a result folder
FORMAT = 2  # 2: charges.npy, limit results, the signature


def columns_root() -> Path:
    """Where column caches live: ``$ORIENTSCOPE_COLUMNS_DIR``, else ``<tmp>/orientscope-columns``."""
    return Path(settings().columns_dir or Path(tempfile.gettempdir()) / "orientscope-columns")


def save_id_index(folder: Path, id_hash: np.ndarray) -> None:
    """``id_hash.npy`` (the (n,) id hashes sorted) and ``id_order.npy`` (the row of each) in ``folder``:
    a molecule's row is then a binary search away (:class:`IdIndex`)."""
    order = np.argsort(id_hash, kind="stable")
    np.save(folder / "id_order.npy", order)
    np.save(folder / "id_hash.npy", id_hash[order])


def store_columns_folder(result_dir: Path) -> Path:
    """The columns folder of a result inside the store."""
    return Path(result_dir) / COLUMNS_DIR


def cache_columns_folder(result_dir: Path, dataset_id: str, result_key: str) -> Path:
    """The columns folder of a result outside the store (for a store this process may not write)."""
    tag = hashlib.sha1(str(Path(result_dir).resolve()).encode()).hexdigest()[:12]
    return columns_root() / f"{dataset_id}-{result_key}-{tag}"


def columns_signature(meta: dict, manifest: dict, limit: int | None) -> dict:
    """What a columns folder is built from: the dataset's shards, the result's frames and models stages
    (the scores) and its limit. A folder holding another signature is stale."""
    stages = manifest.get("stages", {})
    return {
        "format": FORMAT,
        "shards": [[s["name"], int(s["n_molecules"])] for s in meta.get("shards", [])],
        "frames_completed_at": stages.get("frames", {}).get("completed_at"),
        "models_completed_at": stages.get("models", {}).get("completed_at"),
        "limit": limit,
    }


def current_columns(folder: Path, signature: dict) -> bool:
    """Whether ``folder`` is a complete columns folder built from ``signature``."""
    path = Path(folder) / META
    return path.is_file() and read_json(path).get("signature") == signature


def _max_len(refs: list[ShardRef], column: str) -> int:
    import pyarrow.compute as pc

    width = 1
    for ref in refs:
        col = read_table(Path(ref.folder) / "molecules.parquet", columns=[column]).column(column)
        if len(col):
            width = max(width, int(pc.max(pc.utf8_length(col)).as_py() or 0))
    return width


class _NpyWriter:
    """An ``.npy`` file of known dtype and shape written front to back, one shard at a time.

    Plain sequential writes rather than a writable memory map: the pages of a map being
    filled count in the process's RSS (10 GB at 10M molecules), written pages do not.
    """

    def __init__(self, path: Path, dtype, shape: tuple[int, ...]):
        self.dtype, self.shape = np.dtype(dtype), shape
        self.file = open(path, "wb")  # noqa: SIM115  (closed by close())
        header = {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": shape}
        np.lib.format.write_array_header_2_0(self.file, header)
        self.expected = int(np.prod(shape)) * self.dtype.itemsize
        self.written = 0

    def write(self, values) -> None:
        # The array's own bytes, not a ``tobytes`` copy of them (a second pass over ~200 MB at 250,000 molecules).
        data = np.ascontiguousarray(values, dtype=self.dtype).reshape(-1).view(np.uint8)
        self.file.write(data)
        self.written += data.nbytes

    def close(self) -> None:
        self.file.close()
        if self.written != self.expected:
            raise ValueError(f"{self.file.name}: wrote {self.written} bytes, expected {self.expected}")


def build_columns(
    data_dir: Path, dataset_id: str, meta: dict, result_dir: Path, folder: Path, has_scores: bool,
    signature: dict | None = None, limit: int | None = None,
) -> Path:  # fmt: skip
    """Write the columns of a dataset's result into ``folder`` (atomically, by rename; a stale folder is replaced).

    From the per-shard parts the frames stage wrote (``store.column_parts``) when every shard has one,
    else from the shards' Parquet tables, one shard at a time, so memory stays at about one shard's
    tables. ``has_scores``: the result has a models stage with per-shard ``scores`` tables. ``limit``:
    the result's limit (its frames hold the :func:`~orientscope.core.dataset.select_rows` subset).
    ``signature``: recorded in the folder's meta (:func:`columns_signature`).
    """
    folder = Path(folder)
    refs = shard_refs(data_dir, dataset_id, meta)
    n_total = sum(r.n_molecules for r in refs)
    picked = select_rows(n_total, limit) if limit and limit < n_total else None
    takes = [None if picked is None else picked[(picked >= r.start) & (picked < r.stop)] - r.start for r in refs]
    n = n_total if picked is None else len(picked)
    n_atoms_total = int(sum(int(s["n_atoms"]) for s in meta["shards"])) if picked is None else _atoms_of(refs, takes)
    schema = pq.read_schema(Path(refs[0].folder) / "molecules.parquet")
    names = [c for c in schema.names if c not in RESERVED_COLUMNS]  # the dataset's property order
    found = (
        None
        if picked is not None
        else parts.read_parts(result_dir, [(Path(r.folder).name, r.n_molecules) for r in refs])
    )
    folder.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(folder)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        widths = _string_widths(refs, found)
        shapes = {
            **{name: (f"<U{width}", (n,)) for name, width in widths.items()},
            "n_atoms": (np.int32, (n,)),
            "offsets": (np.int64, (n + 1,)),
            "z": (np.uint8, (n_atoms_total,)),
            "positions": (np.float64, (n_atoms_total, 3)),
            "degenerate": (bool, (n,)),
            "reason_codes": (np.int32, (n,)),
            "scores": (np.float64, (n,)),
            "charges": (np.float64, (n,)),
            "properties": (np.float64, (n, len(names))),
            **{name: (np.float64, (n, *shape)) for name, (_, shape) in parts.FLOAT_BLOCKS.items()},
        }
        # One part stored in this result: its files are renamed into the folder, not copied.
        moved = _move_whole_part(found, tmp, shapes, folder, result_dir)
        consume = found is not None and _inside(folder, result_dir)
        out = {
            name: _NpyWriter(tmp / f"{name}.npy", dtype, shape)
            for name, (dtype, shape) in shapes.items()
            if name not in moved
        }
        reasons: dict[str, int] = {}
        hashes, formulas = [], set()
        out["offsets"].write([0])
        atom = 0
        score_of = _Scores(result_dir, len(refs) if picked is None else None)
        frames_of = _FramesReader(result_dir, "frames", "original", len(refs) if picked is None else None)
        for number, (ref, take) in enumerate(zip(refs, takes, strict=True)):
            if found is not None:
                arrays, texts = parts.open_part(found[number][0], moved), found[number][1]["reasons"]
                arrays.update({name: np.load(tmp / f"{name}.npy", mmap_mode="r") for name in moved})
            else:
                arrays, texts = _parquet_part(ref, take, frames_of, names)
            ids = arrays["ids"]
            counts = np.asarray(arrays["n_atoms"], dtype=np.int64)
            for name, writer in out.items():
                if name in arrays and name != "reason_codes":
                    writer.write(arrays[name])
            out["offsets"].write(atom + np.cumsum(counts))
            # Codes in order of first appearance over the shards.
            code_of = np.array([reasons.setdefault(t, len(reasons)) for t in texts], dtype=np.int32)
            out["reason_codes"].write(code_of[np.asarray(arrays["reason_codes"])])
            scores = score_of(ref, ids) if has_scores else np.full(len(ids), np.nan)
            out["scores"].write(scores)
            hashes.append(np.asarray(arrays["id_hash"]))
            formulas.update(np.unique(arrays["formula"]).tolist())
            if "formula" not in widths:  # its width is known once every shard's formulas are made
                np.save(tmp / f"formula-{ref.number:05d}.part.npy", arrays["formula"])
            atom += int(counts.sum())
            del arrays, ids
            if consume:  # its rows are in the folder being written: the disk holds one copy at a time
                shutil.rmtree(found[number][0], ignore_errors=True)
            log.info("columns of %s: shard %d of %d", dataset_id, ref.number + 1, len(refs))
        for writer in out.values():
            writer.close()
        if "formula" not in widths:
            _join_formulas(tmp, refs, n)
        save_id_index(tmp, np.concatenate(hashes))
        del hashes
        texts = sorted(reasons, key=reasons.get)
        atomic_write_json(
            tmp / META,
            {"n_molecules": n, "properties": names, "reasons": texts, "formulas": sorted(formulas),
             "signature": signature},
        )  # fmt: skip
        _replace_folder(tmp, folder, signature)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if _inside(folder, result_dir):
        parts.remove_parts(result_dir)  # held by the folder now; a later rebuild reads the Parquet tables
    return folder


def _parquet_part(ref: ShardRef, take, frames_of: _FramesReader, names: list[str]) -> tuple[dict, list[str]]:
    """One shard's columns (rows ``take`` of it, or all) converted from its Parquet tables and frames."""
    mol = read_table(Path(ref.folder) / "molecules.parquet").to_pandas()
    atoms = read_table(Path(ref.folder) / "atoms.parquet")
    z = atoms.column("z").to_numpy()
    xyz = np.column_stack([atoms.column(c).to_numpy() for c in ("x", "y", "zc")])
    if take is not None:
        atom_rows = _atom_rows(mol["n_atoms"].to_numpy(np.int64), take)
        mol, z, xyz = mol.iloc[take].reset_index(drop=True), z[atom_rows], xyz[atom_rows]
    frames = frames_of.next(ref.number, len(mol)).to_pandas()
    charges = mol[TOTAL_CHARGE].to_numpy(np.float64) if TOTAL_CHARGE in mol.columns else None
    try:
        return parts.shard_columns(
            mol["id"].to_numpy(str), mol["smiles"].to_numpy(str), mol["n_atoms"].to_numpy(np.int64), z, xyz,
            mol[names].to_numpy(np.float64).reshape(len(mol), len(names)), charges, frames,
        )  # fmt: skip
    except ValueError as exc:
        raise ValueError(f"shard {ref.number} ({Path(ref.folder).name}): {exc}") from exc


def _string_widths(refs: list[ShardRef], found: list[tuple[Path, dict]] | None) -> dict[str, int]:
    """Characters of the widest id, SMILES and formula over the shards (the ``<U`` widths of their columns)."""
    if found is not None:
        return {
            name: max(np.load(folder / f"{name}.npy", mmap_mode="r").dtype.itemsize // 4 for folder, _ in found)
            for name in parts.STRING_COLUMNS
        }
    return {"ids": _max_len(refs, "id"), "smiles": _max_len(refs, "smiles")}


def _join_formulas(tmp: Path, refs: list[ShardRef], n: int) -> None:
    """``formula.npy`` from the shards' formula files in ``tmp``, as wide as the widest of them."""
    paths = [tmp / f"formula-{ref.number:05d}.part.npy" for ref in refs]
    width = max([np.load(p, mmap_mode="r").dtype.itemsize // 4 for p in paths] + [1])
    out = _NpyWriter(tmp / "formula.npy", f"<U{width}", (n,))
    for path in paths:
        out.write(np.load(path))
        path.unlink()
    out.close()


def _move_whole_part(found, tmp: Path, shapes: dict, folder: Path, result_dir: Path) -> set[str]:
    """Rename the columns of a result's only part into ``tmp`` where they are stored as the folder stores them."""
    if found is None or len(found) != 1 or not _inside(folder, result_dir):
        return set()
    source, moved = found[0][0], set()
    for name in parts.PART_COLUMNS:
        if name not in shapes or name == "reason_codes":  # codes are renumbered over the shards
            continue
        dtype, shape = shapes[name]
        array = np.load(source / f"{name}.npy", mmap_mode="r")
        if array.dtype == np.dtype(dtype) and array.shape == shape:
            del array
            os.replace(source / f"{name}.npy", tmp / f"{name}.npy")
            moved.add(name)
    return moved


def _inside(folder: Path, result_dir: Path) -> bool:
    return Path(folder).resolve().parent == Path(result_dir).resolve()


def _remove_stale_temps(folder: Path, age_s: float = 3600.0) -> None:
    """Remove temporary folders a killed write of ``folder`` left beside it (older than ``age_s``: a live
    write in another process is younger)."""
    now = time.time()
    for stale in folder.parent.glob(f".{folder.name}-*"):
        try:
            if stale.is_dir() and now - stale.stat().st_mtime > age_s:
                shutil.rmtree(stale, ignore_errors=True)
        except OSError:
            continue


def _replace_folder(tmp: Path, folder: Path, signature: dict | None) -> None:
    """Rename ``tmp`` to ``folder``, replacing a stale folder (readers that mapped its files keep them).

    A current folder that another process renamed into place meanwhile is kept (a reader may be opening it).
    """
    if signature is not None and current_columns(folder, signature):
        shutil.rmtree(tmp, ignore_errors=True)
        return
    if folder.exists():
        shutil.rmtree(folder)
    try:
        os.replace(tmp, folder)
    except OSError:
        if not (folder / META).is_file():  # another process renamed its copy into place first: use that
            raise
        shutil.rmtree(tmp, ignore_errors=True)


def _atom_rows(counts: np.ndarray, take: np.ndarray) -> np.ndarray:
    """(k,) atom rows of the molecules ``take`` (rows of a shard whose molecules have ``counts`` atoms)."""
    starts = np.concatenate([[0], np.cumsum(counts)])[take]
    lengths = counts[take]
    return np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths) + np.arange(lengths.sum())


def _atoms_of(refs: list[ShardRef], takes: list[np.ndarray]) -> int:
    total = 0
    for ref, take in zip(refs, takes, strict=True):
        counts = read_table(Path(ref.folder) / "molecules.parquet", columns=["n_atoms"]).column("n_atoms").to_numpy()
        total += int(counts[take].sum())
    return total


class _FramesReader:
    """A result's frames table read front to back in pieces of given lengths.

    A full result has one frames table per dataset shard (``n_shards``); a limit run's tables
    are cut by the subset's own shards, so its pieces are read across them in order.
    """

    def __init__(self, result_dir: Path, stage: str, table: str, n_shards: int | None):
        self.result_dir, self.stage, self.table, self.n_shards = Path(result_dir), stage, table, n_shards
        self.paths = shard_table_paths(self.result_dir, stage, table)
        self.pending: list = []
        self.next_path = 0

    def next(self, shard: int, count: int):
        import pyarrow as pa

        if self.n_shards is not None and len(self.paths) == self.n_shards:
            return read_shard_table(self.result_dir, self.stage, self.table, shard)
        if not self.paths:  # a result stored as one table
            whole = self.result_dir / f"{self.stage}.{self.table}.parquet"
            self.paths, self.n_shards = [whole], None
        have = sum(len(t) for t in self.pending)
        while have < count and self.next_path < len(self.paths):
            table = read_table(self.paths[self.next_path])
            self.next_path += 1
            self.pending.append(table)
            have += len(table)
        if have < count:
            raise ValueError(f"the frames of {self.result_dir} hold fewer rows than the dataset")
        joined = pa.concat_tables(self.pending) if self.pending else None
        if joined is None:
            return read_shard_table(self.result_dir, self.stage, self.table, shard).slice(0, 0)
        self.pending = [joined.slice(count)]
        return joined.slice(0, count)


def _shard_scores(result_dir: Path, ref: ShardRef, ids: np.ndarray) -> np.ndarray:
    df = read_shard_table(result_dir, "models", "scores", ref.number, columns=["id", "classifier_score"]).to_pandas()
    df["id"] = df["id"].astype(str)
    scores = df.drop_duplicates("id").set_index("id")["classifier_score"].reindex(ids)
    return pd.to_numeric(scores, errors="coerce").to_numpy(np.float64)


class _Scores:
    """Classifier scores of a result's molecules, per dataset shard: from the models stage's table of the
    same shard when the result's shards are the dataset's, else (a limit run's own shards, or one table
    for the whole result) from all of them, read once."""

    def __init__(self, result_dir: Path, n_shards: int | None):
        self.result_dir = Path(result_dir)
        paths = shard_table_paths(self.result_dir, "models", "scores")
        self.per_shard = n_shards is not None and len(paths) == n_shards
        self.paths = paths or [self.result_dir / "models.scores.parquet"]
        self.all = None

    def __call__(self, ref: ShardRef, ids: np.ndarray) -> np.ndarray:
        if self.per_shard:
            return _shard_scores(self.result_dir, ref, ids)
        if self.all is None:
            import pyarrow as pa

            parts = [read_table(p, columns=["id", "classifier_score"]) for p in self.paths if p.is_file()]
            df = pa.concat_tables(parts).to_pandas() if parts else pd.DataFrame({"id": [], "classifier_score": []})
            df["id"] = df["id"].astype(str)
            self.all = df.drop_duplicates("id").set_index("id")["classifier_score"]
        return pd.to_numeric(self.all.reindex(ids), errors="coerce").to_numpy(np.float64)


def open_columns(folder: Path, mapped: bool = True) -> tuple[dict[str, np.ndarray], dict]:
    """({column: read-only memory-mapped array}, the folder's meta) of a built columns folder;
    ``mapped=False`` reads the arrays into memory instead.

    The arrays are plain ndarrays over the maps, not ``np.memmap``: its Python-level
    ``__getitem__`` cost about 0.1 ms per served molecule (50 indexings).
    """
    meta = read_json(folder / META)
    arrays = {
        p.stem: np.load(p, mmap_mode="r" if mapped else None).view(np.ndarray) for p in sorted(folder.glob("*.npy"))
    }
    return arrays, meta


def folder_bytes(folder: Path) -> int:
    """Bytes of a columns folder's ``.npy`` files."""
    return sum(p.stat().st_size for p in Path(folder).glob("*.npy"))


class ArrayReader:
    """:class:`ColumnReader`'s rows of columns read into memory: indexing, no system call."""

    def __init__(self, arrays: dict[str, np.ndarray]):
        self._arrays = arrays

    def row(self, name: str, i: int) -> np.ndarray:
        column = self._arrays[name]
        if not 0 <= i < len(column):
            raise IndexError(f"row {i} of column {name!r} with {len(column)} rows")
        return column[int(i)]

    def span(self, name: str, start: int, stop: int) -> np.ndarray:
        column = self._arrays[name]
        if not 0 <= start <= stop or stop > len(column):
            raise IndexError(f"rows {start}:{stop} of column {name!r} with {len(column)} rows")
        return column[int(start) : int(stop)]

    def take(self, name: str, rows) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if len(rows) and rows.min() < 0:
            raise IndexError(f"row {rows.min()} of column {name!r}: rows are counted from 0")
        return self._arrays[name][rows]


class DictIndex:
    """:class:`IdIndex` of columns read into memory: a dictionary of the ids (plain ``str`` keys)."""

    def __init__(self, ids: np.ndarray):
        self.rows: dict[str, int] = {}
        for i, mol_id in enumerate(ids.tolist()):
            self.rows.setdefault(mol_id, i)

    def row_of(self, mol_id: str) -> int | None:
        return self.rows.get(mol_id)


class ColumnReader:
    """Rows of a cache folder's ``.npy`` columns read with ``preadv`` into new arrays.

    A row read through a memory map costs a page fault per column, and the kernel maps
    the pages around it too (whole large folios: 2,000 random rows of a 216 MB column
    mapped all of it), so serving random molecules grew the server's RSS towards the size
    of the columns (9 GB at 10M) and paid ~0.3 ms of faults per molecule. A read from the
    page cache costs one system call and leaves nothing mapped.
    """

    def __init__(self, folder: Path, names: list[str]):
        self._columns: dict[str, tuple[int, int, np.dtype, tuple[int, ...], int]] = {}
        self._files = []  # kept open as long as the reader; closed when it is collected
        for name in names:
            f = open(folder / f"{name}.npy", "rb", buffering=0)  # noqa: SIM115
            version = np.lib.format.read_magic(f)
            read_header = (
                np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            )
            shape, fortran, dtype = read_header(f)
            if fortran:
                raise ValueError(f"{f.name}: Fortran-ordered columns are not written by build_columns")
            row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
            self._columns[name] = (f.fileno(), f.tell(), dtype, tuple(shape[1:]), row_bytes)
            self._files.append(f)

    def _read(self, name: str, start: int, count: int) -> np.ndarray:
        fd, offset, dtype, row_shape, row_bytes = self._columns[name]
        out = np.empty((count, *row_shape), dtype)
        if count and os.preadv(fd, [out], offset + start * row_bytes) != out.nbytes:
            raise IndexError(f"rows {start}:{start + count} of column {name!r} are past its end")
        return out

    def row(self, name: str, i: int) -> np.ndarray:
        """Row ``i`` (0 <= i < rows) of a column: an array of the row's shape, a NumPy scalar for a flat column."""
        if i < 0:
            raise IndexError(f"row {i} of column {name!r}: rows are counted from 0")
        return self._read(name, int(i), 1)[0]

    def span(self, name: str, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` of a column, in one read."""
        if not 0 <= start <= stop:
            raise IndexError(f"rows {start}:{stop} of column {name!r}")
        return self._read(name, int(start), int(stop) - int(start))

    def take(self, name: str, rows) -> np.ndarray:
        """Rows ``rows`` (a 1-d sequence of row numbers) of a column, one read each."""
        fd, offset, dtype, row_shape, row_bytes = self._columns[name]
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if len(rows) and rows.min() < 0:
            raise IndexError(f"row {rows.min()} of column {name!r}: rows are counted from 0")
        out = np.empty((len(rows), *row_shape), dtype)
        for k, i in enumerate(rows.tolist()):
            if os.preadv(fd, [out[k : k + 1]], offset + i * row_bytes) != row_bytes:
                raise IndexError(f"row {i} of column {name!r} is past its end")
        return out


class IdIndex:
    """Row of a molecule id through the sorted id hashes, reading one block of them per lookup.

    Only every ``block``-th hash is held in memory (8 bytes per ``block`` molecules: 156 KB at
    10M); a lookup reads one block of hashes, the matching rows and their ids (``ColumnReader``).
    """

    def __init__(self, reader: ColumnReader, id_hash: np.ndarray, block: int = 512):
        self.reader, self.block = reader, block
        self.fence = np.array(id_hash[::block])  # reads every page of the hashes once
        self.n = len(id_hash)
        release_pages(id_hash)

    def row_of(self, mol_id: str) -> int | None:
        """Row of ``mol_id``, or None if it is not in the columns."""
        h = hash_ids(np.array([mol_id], dtype=object))[0]
        # Equal hashes may start in the block before the first fence post equal to h.
        lo = max(int(np.searchsorted(self.fence, h, "left")) - 1, 0)
        hi = max(int(np.searchsorted(self.fence, h, "right")), lo + 1)
        start = lo * self.block
        hashes = self.reader.span("id_hash", start, min(hi * self.block, self.n))
        for pos in np.flatnonzero(hashes == h).tolist():
            row = int(self.reader.row("id_order", start + pos))
            if str(self.reader.row("ids", row)) == mol_id:
                return row
        return None


def fingerprint_shards(result_dir: Path, n_shards: int) -> list[np.ndarray] | None:
    """Every shard's packed fingerprints (``store.shards`` layout), memory-mapped, in shard order; None unless all are there."""
    arrays = open_shard_arrays(result_dir, "chemistry", "fingerprints")
    return arrays if len(arrays) == n_shards else None


def fingerprint_counts(result_dir: Path, n_shards: int) -> list[np.ndarray] | None:
    """Every shard's (n_molecules,) uint16 set bits per fingerprint, memory-mapped; None unless all are there.

    Written beside the fingerprints by the chemistry stage (``chemistry/popcounts-NNNNN.npy``);
    results written before it have none, and a reader counts the bits itself.
    """
    arrays = open_shard_arrays(result_dir, "chemistry", "popcounts")
    return arrays if len(arrays) == n_shards else None


def release_pages(array: np.ndarray) -> None:
    """Drop a memory-mapped array's pages from this process (they stay in the page cache).

    A scan over every fingerprint would otherwise leave them all mapped: 2.5 GB of RSS at 10M.
    Reading them again costs minor page faults only. A no-op for arrays in memory.
    """
    base = mmap_base(array)
    if base is not None:
        base.madvise(mmap.MADV_DONTNEED)


def mmap_base(array: np.ndarray) -> mmap.mmap | None:
    """The memory-mapped file ``array`` is (a view of), else None."""
    base = array
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None)
    return base
