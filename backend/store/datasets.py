"""Datasets on disk: ``<data_dir>/datasets/<id>/`` with Parquet tables and a meta file.

Layout::

    datasets/<id>/dataset.json                     id, name, source, n_molecules, created, active_result,
                                                   layout "sharded", format_version, shards
    datasets/<id>/shards/<name>/molecules.parquet  id, smiles, offset, n_atoms, [total_charge], <properties>
    datasets/<id>/shards/<name>/atoms.parquet      z, x, y, z  (ångström)
    datasets/<id>/results/<key>/                   precomputed results (see results.py)

Stores written before the sharded layout kept one ``molecules.parquet`` and
``atoms.parquet`` in the dataset folder; only ``orientscope migrate`` reads them.

``total_charge`` (float64, e; NaN where the file gave none) is there only if some
molecule's file gave a charge; a table without it (every store written before
charges were read) reads as charges unknown.
"""

from __future__ import annotations

import fcntl
import shutil
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from orientscope.core.dataset import (
    RESERVED_COLUMNS,
    TOTAL_CHARGE,
    MoleculeSet,
    concat_molecule_sets,
    frame_dependent_properties,
)
from orientscope.core.errors import NotFoundError, OldLayout
from orientscope.core.settings import validate_id
from orientscope.store.atomic import atomic_write_json, atomic_write_table, read_json, read_table

META = "dataset.json"


def datasets_root(data_dir: Path) -> Path:
    return Path(data_dir) / "datasets"


def dataset_dir(data_dir: Path, dataset_id: str) -> Path:
    return datasets_root(data_dir) / validate_id(dataset_id)


def list_dataset_ids(data_dir: Path) -> list[str]:
    root = datasets_root(data_dir)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / META).is_file())


def read_meta(data_dir: Path, dataset_id: str) -> dict:
    path = dataset_dir(data_dir, dataset_id) / META
    if not path.is_file():
        raise NotFoundError(f"unknown dataset {dataset_id!r}")
    return read_json(path)


def write_meta(data_dir: Path, dataset_id: str, meta: dict) -> None:
    atomic_write_json(dataset_dir(data_dir, dataset_id) / META, meta)


def update_meta(data_dir: Path, dataset_id: str, **changes) -> dict:
    meta = read_meta(data_dir, dataset_id)
    meta.update(changes)
    write_meta(data_dir, dataset_id, meta)
    return meta


@contextmanager
def dataset_lock(data_dir: Path, dataset_id: str) -> Iterator[None]:
    """Exclusive lock on one dataset's folder as a whole (e.g. while it is replaced by a new layout).

    The lock file lives beside the folders (``datasets/.locks/<id>.lock``), so it
    holds across a rename of the dataset's folder.
    """
    with file_lock(datasets_root(data_dir) / ".locks" / f"{validate_id(dataset_id)}.lock"):
        yield


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Exclusive ``flock`` on ``path`` (created with its folder), held for the with-block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def has_dataset(data_dir: Path, dataset_id: str) -> bool:
    return (dataset_dir(data_dir, dataset_id) / META).is_file()


def meta_of(dataset_id: str, mols: MoleculeSet, name: str, source: str, extra: dict | None = None) -> dict:
    """The meta record of ``mols`` stored as ``dataset_id``."""
    return new_meta(
        dataset_id,
        name,
        source,
        n_molecules=mols.n_molecules,
        n_atoms=int(mols.offsets[-1]),
        has_smiles=bool(mols.smiles is not None and (mols.smiles != "").any()),
        properties=list(mols.properties.columns),
        property_units=mols.property_units,
        frame_dependent=mols.frame_dependent,
        extra=extra,
    )


def new_meta(
    dataset_id: str,
    name: str,
    source: str,
    *,
    n_molecules: int,
    n_atoms: int,
    has_smiles: bool,
    properties: list[str],
    property_units: dict[str, str],
    frame_dependent: Iterable[str],
    extra: dict | None = None,
) -> dict:
    """The meta record of a new dataset (in-memory or sharded: the same fields), before any result."""
    return {
        "id": dataset_id,
        "name": name,
        "source": source,
        "n_molecules": int(n_molecules),
        "n_atoms": int(n_atoms),
        "has_smiles": bool(has_smiles),
        "properties": list(properties),
        "property_units": dict(property_units),
        "frame_dependent": sorted(frame_dependent),
        "created": time.time(),
        "active_result": None,
        **(extra or {}),
    }


def require_current_layout(dataset_id: str, meta: dict) -> dict:
    """``meta`` if the dataset is in the sharded layout, else OldLayout naming the command that converts it."""
    if meta.get("layout") != "sharded":
        raise OldLayout(
            f"dataset {dataset_id!r} is stored in the old single-folder layout (before store format 2); "
            f"run `orientscope migrate {dataset_id}` to convert it"
        )
    return meta


def read_molecule_columns(data_dir: Path, dataset_id: str, columns: list[str]) -> pd.DataFrame:
    """Some columns of the per-molecule table (id, smiles, properties), without the atoms."""
    meta = require_current_layout(dataset_id, read_meta(data_dir, dataset_id))
    folder = dataset_dir(data_dir, dataset_id)
    parts = [read_table(folder / "shards" / s["name"] / "molecules.parquet", columns=columns) for s in meta["shards"]]
    return pd.concat([p.to_pandas() for p in parts], ignore_index=True)


def write_molecule_tables(folder: Path, mols: MoleculeSet) -> None:
    """``molecules.parquet`` and ``atoms.parquet`` of ``mols`` in ``folder`` (a dataset or one shard)."""
    folder.mkdir(parents=True, exist_ok=True)
    cols = {
        "id": pa.array(mols.ids.astype(str)),
        "smiles": pa.array(mols.smiles.astype(str) if mols.smiles is not None else [""] * mols.n_molecules),
        "offset": pa.array(mols.offsets[:-1]),
        "n_atoms": pa.array(mols.n_atoms),
    }
    if mols.charges is not None:
        cols[TOTAL_CHARGE] = pa.array(mols.charges)
    for col in mols.properties.columns:
        if col in RESERVED_COLUMNS:
            raise ValueError(f"property name {col!r} is reserved")
        cols[col] = pa.array(mols.properties[col].to_numpy(np.float64))
    atomic_write_table(folder / "molecules.parquet", pa.table(cols))
    pos = mols.positions_angstrom
    atoms = pa.table({"z": mols.atomic_numbers, "x": pos[:, 0], "y": pos[:, 1], "zc": pos[:, 2]})
    atomic_write_table(folder / "atoms.parquet", atoms)


def read_molecule_tables(folder: Path, meta: dict) -> MoleculeSet:
    """The molecules stored in ``folder`` by :func:`write_molecule_tables`."""
    return molecules_from_tables(read_table(folder / "molecules.parquet"), read_table(folder / "atoms.parquet"), meta)


def molecules_from_tables(molecules: pa.Table, atoms: pa.Table, meta: dict) -> MoleculeSet:
    """The molecules of a ``molecules.parquet`` table (or a run of its rows) and their rows of ``atoms.parquet``."""
    mol = molecules.to_pandas()
    n_atoms = mol["n_atoms"].to_numpy(np.int64)
    props = mol.drop(columns=[c for c in RESERVED_COLUMNS if c in mol.columns])
    smiles = mol["smiles"].to_numpy(str) if meta.get("has_smiles") else None
    charges = mol[TOTAL_CHARGE].to_numpy(np.float64) if TOTAL_CHARGE in mol.columns else None
    pos = np.column_stack([atoms.column(c).to_numpy() for c in ("x", "y", "zc")])
    return MoleculeSet(
        atomic_numbers=atoms.column("z").to_numpy(),
        positions_angstrom=pos,
        offsets=np.concatenate([[0], np.cumsum(n_atoms)]),
        ids=mol["id"].to_numpy(str),
        smiles=smiles,
        properties=pd.DataFrame(props),
        property_units=meta.get("property_units", {}),
        frame_dependent=frame_dependent_properties(meta),
        charges=charges,
    )


def load_dataset(data_dir: Path, dataset_id: str) -> MoleculeSet:
    """The whole dataset in memory (a sharded one concatenated: for sets that fit, e.g. in tests)."""
    meta = require_current_layout(dataset_id, read_meta(data_dir, dataset_id))
    folder = dataset_dir(data_dir, dataset_id)
    parts = [read_molecule_tables(folder / "shards" / s["name"], meta) for s in meta["shards"]]
    return concat_molecule_sets(parts)


def delete_dataset(data_dir: Path, dataset_id: str) -> None:
    """Remove one dataset's folder (and nothing else)."""
    folder = dataset_dir(data_dir, dataset_id)
    if not (folder / META).is_file():
        raise NotFoundError(f"unknown dataset {dataset_id!r}")
    trash = folder.with_name(f".deleted-{dataset_id}-{time.time_ns()}")
    folder.rename(trash)  # atomic: the dataset disappears at once
    shutil.rmtree(trash, ignore_errors=True)
