"""Sharded datasets: a folder of shards, each a small dataset of its own, listed by the meta file.

Layout::

    datasets/<id>/dataset.json             meta with "layout": "sharded" and "shards" (written last)
    datasets/<id>/shards/<name>/molecules.parquet, atoms.parquet   (the tables of datasets.py)

A shard entry is ``{"name", "start", "n_molecules", "n_atoms"}``; ``start`` is
the global index of the shard's first molecule, so shards in list order give
the dataset's molecule order. A dataset in the single-folder layout (no
``"layout"``) is refused with the ``orientscope migrate`` hint.

Shard-level result tables live next to the result's manifest, as
``<stage>/<table>-<shard number>.parquet``; shard-level arrays that a server
memory-maps are plain NumPy files, ``<stage>/<name>-<shard number>.npy``.

Packed fingerprints of a sharded result (written by the chemistry stage)::

    results/<key>/chemistry/fingerprints-00000.npy   (n_molecules of shard 0, 32) uint64, C order
    results/<key>/chemistry/popcounts-00000.npy      (n_molecules of shard 0,) uint16: set bits per row
    results/<key>/chemistry/molecules-00000.parquet  the same shard's rows: "id", "smiles", ..., in the same order

Row r of ``fingerprints-NNNNN.npy`` is the molecule of row r of
``molecules-NNNNN.parquet`` (and of the dataset shard NNNNN, global index
``start + r``). Each row is a 2048-bit Morgan fingerprint (radius 2) packed
little-endian into 32 words: bit b is bit ``b % 64`` of word ``b // 64``, the
layout of ``science.clustering.TanimotoIndex`` (which wants the transpose,
word-major). A molecule without a graph has an all-zero row. The bit counts let a
server bound every row's Tanimoto to a query without reading its fingerprint
(``science.clustering.ShardedTanimotoScan``) and load in 2 bytes per molecule. Open one with
``np.load(path, mmap_mode="r")`` (:func:`open_shard_arrays`); files are
written atomically and named in the manifest only once every shard is done.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from orientscope.core.dataset import TOTAL_CHARGE, MoleculeSet
from orientscope.core.settings import Settings, env_name, settings
from orientscope.store.atomic import atomic_write_bytes, atomic_write_table, read_table
from orientscope.store.datasets import (
    dataset_dir,
    meta_of,
    molecules_from_tables,
    read_meta,
    read_molecule_tables,
    require_current_layout,
    write_meta,
    write_molecule_tables,
)

SHARDS = "shards"
SHARDED = "sharded"
DEFAULT_SHARD_SIZE = Settings.shard_size
SHARD_SIZE_ENV = env_name("shard_size")
# The store format of datasets written in this layout from the start (the single-folder layout had none).
FORMAT_VERSION = 2


@dataclass(frozen=True)
class ShardRef:
    """Where one shard lives and which global molecule indices it holds: [start, start + n_molecules)."""

    number: int
    folder: str
    start: int
    n_molecules: int

    @property
    def stop(self) -> int:
        return self.start + self.n_molecules

    @property
    def index(self) -> np.ndarray:
        """(n_molecules,) global molecule indices."""
        return np.arange(self.start, self.stop, dtype=np.int64)


def shard_size_setting(shard_size: int | None = None) -> int:
    """Molecules per shard: ``shard_size`` if given, else ``$ORIENTSCOPE_SHARD_SIZE``, else the default."""
    size = int(shard_size or settings().shard_size)
    if size < 1:
        raise ValueError(f"shard size must be >= 1, got {size}")
    return size


def shard_sizes(n_molecules: int, shard_size: int) -> list[int]:
    """Molecules in each shard when ``n_molecules`` are cut in order into shards of ``shard_size``."""
    return [min(shard_size, n_molecules - start) for start in range(0, n_molecules, shard_size)]


def is_sharded(meta: dict) -> bool:
    return meta.get("layout") == SHARDED


def shard_refs(data_dir: Path, dataset_id: str, meta: dict | None = None) -> list[ShardRef]:
    """The dataset's shards in molecule order (OldLayout for a dataset stored before the sharded layout)."""
    meta = require_current_layout(dataset_id, meta or read_meta(data_dir, dataset_id))
    folder = dataset_dir(data_dir, dataset_id)
    return [
        ShardRef(k, str(folder / SHARDS / s["name"]), int(s["start"]), int(s["n_molecules"]))
        for k, s in enumerate(meta["shards"])
    ]


def write_shard(folder: Path, mols: MoleculeSet) -> dict:
    """Write one shard's tables; its entry without ``start`` (the caller numbers the molecules)."""
    write_molecule_tables(Path(folder), mols)
    return {"name": Path(folder).name, "n_molecules": mols.n_molecules, "n_atoms": int(mols.offsets[-1])}


def write_shards(mols: MoleculeSet, shard_size: int, folder: Callable[[int], Path]) -> list[dict]:
    """Write ``mols`` cut in order into shards of ``shard_size``, shard k in ``folder(k)``; their entries,
    ``start`` counted from the first molecule of ``mols``."""
    shards = []
    for k, start in enumerate(range(0, mols.n_molecules, shard_size)):
        rows = np.arange(start, min(start + shard_size, mols.n_molecules))
        shards.append({**write_shard(folder(k), mols.subset(rows)), "start": start})
    return shards


def save_sharded(
    data_dir: Path,
    dataset_id: str,
    mols: MoleculeSet,
    name: str,
    source: str,
    extra: dict | None = None,
    shard_size: int | None = None,
) -> dict:
    """Write ``mols`` as a sharded dataset (one shard for a small set), then its meta file last; the meta."""
    size = shard_size_setting(shard_size)
    folder = dataset_dir(data_dir, dataset_id) / SHARDS
    shards = write_shards(mols, size, lambda k: folder / f"m{k:05d}")
    layout = {"layout": SHARDED, "format_version": FORMAT_VERSION, "shard_size": size, "shards": shards}
    meta = meta_of(dataset_id, mols, name, source, {**(extra or {}), **layout})
    write_meta(data_dir, dataset_id, meta)
    return meta


def read_shard(ref: ShardRef, meta: dict) -> MoleculeSet:
    return read_molecule_tables(Path(ref.folder), meta)


def read_shard_rows(
    ref: ShardRef, meta: dict, lo: int, hi: int, columns: tuple[str, ...] = ("id", "smiles")
) -> MoleculeSet:
    """Molecules ``lo:hi`` of one shard with ``columns`` of its molecules table (and the total charge, if stored),
    reading only the row groups of its atoms table that hold their atoms (no properties)."""
    import pyarrow.parquet as pq

    folder = Path(ref.folder)
    names = pq.read_schema(folder / "molecules.parquet").names
    wanted = [c for c in (*columns, "n_atoms", TOTAL_CHARGE) if c in names]
    molecules = read_table(folder / "molecules.parquet", columns=list(dict.fromkeys(wanted))).slice(lo, hi - lo)
    counts = read_table(folder / "molecules.parquet", columns=["n_atoms"]).column("n_atoms").to_numpy()
    start = int(counts[:lo].sum())
    stop = start + int(counts[lo:hi].sum())
    atoms_file = pq.ParquetFile(folder / "atoms.parquet", memory_map=True)
    edges = np.cumsum([0] + [atoms_file.metadata.row_group(g).num_rows for g in range(atoms_file.num_row_groups)])
    groups = [g for g in range(atoms_file.num_row_groups) if edges[g] < stop and edges[g + 1] > start]
    if groups:
        atoms = atoms_file.read_row_groups(groups).slice(start - int(edges[groups[0]]), stop - start)
    else:
        atoms = atoms_file.schema_arrow.empty_table()
    return molecules_from_tables(molecules, atoms, {**meta, "frame_dependent": []})


def read_shard_ids(ref: ShardRef) -> np.ndarray:
    """(n_molecules,) str: the shard's molecule ids only."""
    table = read_table(Path(ref.folder) / "molecules.parquet", columns=["id"])
    return table.column("id").to_numpy(zero_copy_only=False)


def hash_ids(ids: np.ndarray) -> np.ndarray:
    """(n,) uint64 hash of each id (the same in every process)."""
    return pd.util.hash_array(np.asarray(ids, dtype=object), categorize=False)


def id_partition(ids: np.ndarray, n_partitions: int) -> np.ndarray:
    """(n,) int: a stable hash partition of each id (same id, same partition, in any process)."""
    return (hash_ids(ids) % np.uint64(n_partitions)).astype(np.int64)


def duplicate_in_partition(refs: list[ShardRef], partition: int, n_partitions: int) -> str | None:
    """The first id that occurs twice among the ids of one hash partition, else None.

    Every id lands in exactly one partition, so checking each partition on its
    own checks the whole dataset while holding only about 1/n_partitions of the ids.
    """
    parts = []
    for ref in refs:
        ids = read_shard_ids(ref)
        parts.append(ids[id_partition(ids, n_partitions) == partition])
    ids = np.concatenate(parts) if parts else np.array([], dtype=str)
    uniq, counts = np.unique(ids, return_counts=True)
    return str(uniq[counts > 1][0]) if (counts > 1).any() else None


def _shard_file(result_dir: Path, stage: str, name: str, number: int, suffix: str) -> Path:
    return Path(result_dir) / stage / f"{name}-{number:05d}{suffix}"


def _shard_files(result_dir: Path, stage: str, name: str, suffix: str) -> list[Path]:
    """Every shard's file of one result, in shard order (five-digit numbers sort as text)."""
    return sorted((Path(result_dir) / stage).glob(f"{name}-[0-9][0-9][0-9][0-9][0-9]{suffix}"))


def shard_table_path(result_dir: Path, stage: str, table: str, number: int) -> Path:
    return _shard_file(result_dir, stage, table, number, ".parquet")


def shard_table_paths(result_dir: Path, stage: str, table: str) -> list[Path]:
    """Every shard's file of one result table, in shard order (empty if the result is not sharded)."""
    return _shard_files(result_dir, stage, table, ".parquet")


def write_shard_table(result_dir: Path, stage: str, table: str, number: int, frame: pd.DataFrame) -> Path:
    path = shard_table_path(result_dir, stage, table, number)
    atomic_write_table(path, pa.Table.from_pandas(frame, preserve_index=False))
    return path


def read_shard_table(result_dir: Path, stage: str, table: str, number: int, columns=None) -> pa.Table:
    return read_table(shard_table_path(result_dir, stage, table, number), columns=columns)


def shard_array_path(result_dir: Path, stage: str, name: str, number: int) -> Path:
    return _shard_file(result_dir, stage, name, number, ".npy")


def shard_array_paths(result_dir: Path, stage: str, name: str) -> list[Path]:
    """Every shard's ``.npy`` file of one result array, in shard order (empty if there is none)."""
    return _shard_files(result_dir, stage, name, ".npy")


def write_shard_array(result_dir: Path, stage: str, name: str, number: int, array: np.ndarray) -> Path:
    """One shard's array as a plain ``.npy`` file (C order, so it memory-maps as is), written atomically."""
    path = shard_array_path(result_dir, stage, name, number)
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    atomic_write_bytes(path, buffer.getvalue())
    return path


def open_shard_arrays(result_dir: Path, stage: str, name: str) -> list[np.ndarray]:
    """Every shard's array memory-mapped read-only, in shard order."""
    return [np.load(p, mmap_mode="r", allow_pickle=False) for p in shard_array_paths(result_dir, stage, name)]
