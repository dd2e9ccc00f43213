"""Re-cut a dataset of the single-folder layout into shards, with its stored results, without recomputing.

Every per-molecule table of a result (the rows of the dataset, in its order)
is cut at the shard boundaries into the per-shard files the sharded stages
write (``<stage>/<table>-NNNNN.parquet``; the chemistry fingerprints as
``chemistry/fingerprints-NNNNN.npy``, see shards.py). Everything else (the
report sections, the group tables, the manifest) is a merged summary and is
taken over unchanged, so every report figure stays the same bits. Tables are
streamed shard by shard: memory holds about one shard of one table.

A result computed on a subset (``--limit``) is not aligned with the shards;
it is taken over unchanged (its single tables still read as before).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from orientscope.core.errors import DatasetError
from orientscope.store.atomic import atomic_write_json, atomic_write_table, iter_table_slices, read_json, read_table
from orientscope.store.datasets import META, molecules_from_tables
from orientscope.store.map_arrays import MAP_DIR
from orientscope.store.results import MANIFEST
from orientscope.store.shards import (
    SHARDS,
    ShardRef,
    read_shard_ids,
    shard_sizes,
    shard_table_path,
    write_shard,
    write_shard_array,
)

# The per-molecule tables of each stage, which the sharded stages write per shard.
PER_MOLECULE_TABLES = {
    "frames": ("original", "control"),
    "chemistry": ("molecules", "fingerprints"),
    "models": ("scores", "control_scores"),
}
# Per-molecule tables that the sharded layout keeps as .npy arrays: name -> (column prefix, dtype).
ARRAY_COLUMNS = {"fingerprints": ("fp", np.uint64)}
MOLECULE_TABLES = ("molecules.parquet", "atoms.parquet")


def link_or_copy(src: str | Path, dst: str | Path) -> None:
    """A hard link where the file system allows it (the store never rewrites a file in place), else a copy."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def cut_molecules(src: Path, dst: Path, meta: dict, shard_size: int, progress=None) -> list[dict]:
    """Write the molecules of dataset folder ``src`` as shards under ``dst``; the shard entries of the meta file.

    ``progress(done, total)`` hears the shards written.
    """
    n_atoms = read_table(src / "molecules.parquet", columns=["n_atoms"]).column("n_atoms").to_numpy()
    if len(n_atoms) != int(meta["n_molecules"]):
        raise DatasetError(
            f"{src}: molecules.parquet has {len(n_atoms)} rows, the meta file says {meta['n_molecules']}"
        )
    sizes = shard_sizes(len(n_atoms), shard_size)
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    atom_sizes = [int(n_atoms[a:b].sum()) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    molecules = iter_table_slices(src / "molecules.parquet", sizes)
    atoms = iter_table_slices(src / "atoms.parquet", atom_sizes)
    shards = []
    for k, (mol_rows, atom_rows) in enumerate(zip(molecules, atoms, strict=True)):
        entry = write_shard(dst / SHARDS / f"m{k:05d}", molecules_from_tables(mol_rows, atom_rows, meta))
        shards.append({**entry, "start": int(bounds[k])})
        if progress:
            progress(k + 1, len(sizes))
    return shards


def cut_result(src: Path, dst: Path, refs: list[ShardRef]) -> list[str]:
    """Copy result folder ``src`` to ``dst`` with its per-molecule tables cut by the shards ``refs`` (of ``dst``).

    Only the stages the manifest names are taken (files of an unfinished stage
    are left behind), with the stored orientation map; the manifest is written last. Each cut table's ids must
    be the shard's ids in order, else DatasetError. Returns the tables cut, as
    ``"<stage>.<table>"``.
    """
    manifest = read_json(src / MANIFEST)
    aligned = not manifest["params"].get("limit")
    dst.mkdir(parents=True, exist_ok=True)
    cut = []
    for stage, entry in manifest["stages"].items():
        link_or_copy(src / f"{stage}.json", dst / f"{stage}.json")
        for table in entry.get("tables", []):
            path = src / f"{stage}.{table}.parquet"
            if not path.is_file():
                raise DatasetError(f"{src}: stage {stage!r} names table {table!r}, but {path.name} is missing")
            if aligned and table in PER_MOLECULE_TABLES.get(stage, ()):
                _cut_table(path, dst, stage, table, refs)
                cut.append(f"{stage}.{table}")
            else:
                link_or_copy(path, dst / path.name)
    if aligned and (src / MAP_DIR).is_dir():  # the stored map: rows in molecule order, signed by the frames' stage
        shutil.copytree(src / MAP_DIR, dst / MAP_DIR, copy_function=link_or_copy)
    atomic_write_json(dst / MANIFEST, manifest)
    return cut


def _cut_table(path: Path, dst: Path, stage: str, table: str, refs: list[ShardRef]) -> None:
    n = sum(r.n_molecules for r in refs)
    rows = pq.ParquetFile(path).metadata.num_rows
    if rows != n:
        raise DatasetError(f"{path} has {rows} rows, the dataset {n}: it cannot be cut into the dataset's shards")
    for ref, part in zip(refs, iter_table_slices(path, [r.n_molecules for r in refs]), strict=True):
        ids = part.column("id").to_numpy(zero_copy_only=False).astype(str)
        if not np.array_equal(ids, read_shard_ids(ref).astype(str)):
            raise DatasetError(f"{path}: rows {ref.start}..{ref.stop} are not the dataset's molecules in order")
        if table in ARRAY_COLUMNS:
            prefix, dtype = ARRAY_COLUMNS[table]
            names = sorted(c for c in part.column_names if c.startswith(prefix))
            words = np.column_stack([part.column(c).to_numpy() for c in names]).astype(dtype, copy=False)
            write_shard_array(dst, stage, table, ref.number, words)
        else:
            atomic_write_table(shard_table_path(dst, stage, table, ref.number), part)


def copy_other_entries(src: Path, dst: Path) -> None:
    """Everything of dataset folder ``src`` that is not its molecules, meta or results (e.g. model audits)."""
    skip = {META, *MOLECULE_TABLES, "results"}
    for entry in src.iterdir():
        if entry.name in skip or entry.name.startswith("."):
            continue
        if entry.is_dir():
            shutil.copytree(entry, dst / entry.name, copy_function=link_or_copy)
        else:
            link_or_copy(entry, dst / entry.name)
