"""One shard's part of a result's memory-mapped columns (``store.columns``), converted where its arrays are.

The frames stage's per-shard task holds the shard's molecules and its frames in memory, so it
writes the shard's columns there (``<result dir>/columns-parts/NNNNN/``); the columns
folder written at the end of the precompute is then assembled from the parts (a one-shard
result's part files are renamed into it) instead of reading the shard's Parquet tables again.
A result without parts (a store written before them, a limit run, a part missing or of
another shard) is built from the Parquet tables by the same conversion, :func:`shard_columns`,
so both ways give the same arrays.

Layout of one part folder: one ``.npy`` a column of :data:`PART_COLUMNS` (rows of the shard; the
string columns as wide as their longest value, ``reason_codes`` indexing the part's own reason
texts) and ``part.json`` (shard name, molecule count, reason texts), written last.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from orientscope.core.elements import hill_formulas
from orientscope.core.orientations_schema import C_COLUMNS, EV_COLUMNS, LONLAT_COLUMNS, Q_COLUMNS, R_COLUMNS
from orientscope.store.atomic import atomic_write_json, read_json
from orientscope.store.shards import hash_ids

PARTS_DIR = "columns-parts"  # in a result folder
PART_META = "part.json"
FLOAT_BLOCKS = {
    "rotations": (R_COLUMNS, (3, 3)),
    "quaternions": (Q_COLUMNS, (4,)),
    "eigenvalues": (EV_COLUMNS, (3,)),
    "centroids": (C_COLUMNS, (3,)),
    "lonlat": (LONLAT_COLUMNS, (3, 2)),
}
STRING_COLUMNS = ("ids", "smiles", "formula")
PART_COLUMNS = (
    "ids", "smiles", "formula", "n_atoms", "z", "positions", "properties", "charges", "degenerate", "reason_codes",
    "id_hash", *FLOAT_BLOCKS,
)  # fmt: skip


def _fitted(strings: np.ndarray) -> np.ndarray:
    """``strings`` as a ``<U`` array exactly as wide as its longest value (at least 1)."""
    strings = np.asarray(strings, dtype=str)
    width = int(np.char.str_len(strings).max()) if len(strings) else 1
    return strings.astype(f"<U{max(width, 1)}", copy=False)


def shard_columns(
    ids: np.ndarray, smiles: np.ndarray, counts: np.ndarray, z: np.ndarray, xyz: np.ndarray,
    properties: np.ndarray, charges: np.ndarray | None, frames: pd.DataFrame,
) -> tuple[dict[str, np.ndarray], list[str]]:  # fmt: skip
    """({column: rows of one shard}, reason texts) for the columns folder.

    Parameters
    ----------
    ids, smiles : (n,) str
    counts : (n,) atoms per molecule
    z : (n_atoms,) atomic numbers; xyz : (n_atoms, 3) float64 positions in Å
    properties : (n, p) float64 in the dataset's property order
    charges : (n,) float64 total charge in e, or None (NaN)
    frames : the shard's original frames table (``pipeline.frames_table``), in the same molecule order

    ``reason_codes`` index the returned texts, in order of first appearance in the shard.
    """
    ids = _fitted(ids)
    if not np.array_equal(frames["id"].to_numpy(str), ids):
        raise ValueError("a shard's frames are not in the order of its molecules")
    counts = np.asarray(counts, dtype=np.int64)
    # A hash factorisation of the reasons, not a Python loop per row.
    codes, texts = pd.factorize(frames["reason"].fillna("").astype(str), use_na_sentinel=False)
    n = len(ids)
    arrays = {
        "ids": ids,
        "smiles": _fitted(smiles),
        "formula": _fitted(hill_formulas(z, np.concatenate([[0], np.cumsum(counts)]))),
        "n_atoms": counts.astype(np.int32),
        "z": np.asarray(z).astype(np.uint8, copy=False),
        "positions": np.ascontiguousarray(xyz, dtype=np.float64),
        "properties": np.asarray(properties, dtype=np.float64),
        "charges": np.full(n, np.nan) if charges is None else np.asarray(charges, dtype=np.float64),
        "degenerate": frames["degenerate"].to_numpy(bool),
        "reason_codes": codes.astype(np.int32),
        "id_hash": hash_ids(ids),
        **{
            name: frames[columns].to_numpy(np.float64).reshape(n, *shape)
            for name, (columns, shape) in FLOAT_BLOCKS.items()
        },
    }
    return arrays, [str(t) for t in texts]


def parts_folder(result_dir: Path) -> Path:
    """The folder of a result's column parts."""
    return Path(result_dir) / PARTS_DIR


def part_folder(result_dir: Path, number: int) -> Path:
    return parts_folder(result_dir) / f"{number:05d}"


def write_part(result_dir: Path, number: int, shard: str, arrays: dict[str, np.ndarray], reasons: list[str]) -> Path:
    """Write shard ``number``'s part (``shard``: the dataset shard's name) atomically; replaces an earlier one."""
    folder = part_folder(result_dir, number)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        for name in PART_COLUMNS:
            np.save(tmp / f"{name}.npy", arrays[name])
        atomic_write_json(tmp / PART_META, {"shard": shard, "n_molecules": len(arrays["ids"]), "reasons": reasons})
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


def read_parts(result_dir: Path, shards: list[tuple[str, int]]) -> list[tuple[Path, dict]] | None:
    """[(part folder, its meta)] for ``shards`` ([(name, molecules)] in order), or None unless every
    shard has a complete part of that shard and size."""
    found = []
    for number, (name, n) in enumerate(shards):
        folder = part_folder(result_dir, number)
        path = folder / PART_META
        if not path.is_file():
            return None
        meta = read_json(path)
        if meta.get("shard") != name or meta.get("n_molecules") != n:
            return None
        if not all((folder / f"{c}.npy").is_file() for c in PART_COLUMNS):
            return None
        found.append((folder, meta))
    return found


def open_part(folder: Path, skip: set[str] = frozenset()) -> dict[str, np.ndarray]:
    """{column: memory-mapped rows} of one part folder, but for the columns ``skip`` (moved out of it)."""
    return {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in PART_COLUMNS if name not in skip}


def remove_parts(result_dir: Path) -> None:
    """Drop a result's column parts (once its columns folder holds them)."""
    shutil.rmtree(parts_folder(result_dir), ignore_errors=True)
