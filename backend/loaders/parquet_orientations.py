"""Parquet in OrientScope's own schema, in either of two layouts.

* **One file** (what ``orientscope export --format parquet`` writes), one row
  per molecule: ``id`` (string), ``z`` (list of atomic numbers), ``pos`` (list
  of 3·n coordinates in ångström, x1 y1 z1 x2 ...), optional ``smiles``,
  ``total_charge`` (e, NaN where unknown) and numeric property columns.
* **Store layout**, a folder (or archive) holding the two tables of
  ``datasets/<id>/`` in the store: ``molecules.parquet`` (``id``, ``smiles``,
  ``offset``, ``n_atoms``, [``total_charge``], properties) and ``atoms.parquet`` (``z``, ``x``,
  ``y``, ``zc``).

Rows are streamed batch by batch; malformed molecules are skipped and counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa

from orientscope.core.dataset import RESERVED_COLUMNS, TOTAL_CHARGE
from orientscope.core.errors import DatasetError
from orientscope.core.progress import Progress
from orientscope.loaders.base import Collector, open_parquet, written_property_name
from orientscope.loaders.formats import NO, OPENING, Format

PARQUET_MAGIC = b"PAR1"
STORE_TABLES = ("molecules.parquet", "atoms.parquet")
BATCH_ROWS = 65_536
# The one-file layout's columns that are not properties.
ONE_FILE_COLUMNS = frozenset({"id", "z", "pos", "smiles", TOTAL_CHARGE})


def _properties(batch, skip) -> dict[str, np.ndarray]:
    """The numeric columns of ``batch`` but ``skip`` (a reserved name among them is renamed by the collector)."""
    import pyarrow.types as pat

    out = {}
    for name in batch.schema.names:
        if name in skip:
            continue
        col = batch.column(name)
        if pat.is_integer(col.type) or pat.is_floating(col.type) or pat.is_boolean(col.type):
            out[name] = col.to_numpy(zero_copy_only=False).astype(np.float64)
    return out


def _charges(batch) -> np.ndarray | None:
    """The ``total_charge`` column (NaN where unknown), else None."""
    if TOTAL_CHARGE not in batch.schema.names:
        return None
    return np.asarray(batch.column(TOTAL_CHARGE).to_numpy(zero_copy_only=False), dtype=np.float64)


def _smiles(batch) -> list[str] | None:
    if "smiles" not in batch.schema.names:
        return None
    return [s or "" for s in batch.column("smiles").to_pylist()]


def load_parquet_file(path: Path, collector: Collector, progress: Progress | None = None) -> None:
    path = Path(path)
    pf = open_parquet(path)
    names = pf.schema_arrow.names
    missing = [c for c in ("z", "pos") if c not in names]
    if missing:
        raise DatasetError(
            f"{path.name}: missing columns {missing}; expected one row per molecule with list columns "
            "'z' and 'pos' (or the store's molecules.parquet + atoms.parquet pair)"
        )
    collector.limits.check_molecules(pf.metadata.num_rows, path.name)
    done = 0
    for batch in pf.iter_batches(batch_size=BATCH_ROWS):
        z_col, pos_col = batch.column("z"), batch.column("pos")
        counts = np.asarray(z_col.value_lengths().to_numpy(zero_copy_only=False), dtype=np.int64)
        pos_len = np.asarray(pos_col.value_lengths().to_numpy(zero_copy_only=False), dtype=np.int64)
        ids = np.arange(done + 1, done + 1 + batch.num_rows).astype(str).astype(object)  # the row number, from 1
        if "id" in names:  # as written; a null id keeps the row number (never the text "None")
            written = batch.column("id").to_pylist()
            ids = np.array([ids[i] if v is None else str(v) for i, v in enumerate(written)], dtype=object)
        ids = ids.astype(str)
        wrong = np.flatnonzero(pos_len != 3 * counts)
        keep = np.ones(batch.num_rows, dtype=bool)
        for i in wrong:
            collector.bad(
                f"row {done + i} (molecule {str(ids[i])!r})",
                f"{counts[i]} atomic numbers but {pos_len[i]} coordinates (expected 3 per atom)",
            )
            keep[i] = False
        if wrong.size:
            batch = batch.filter(pa.array(keep))
            counts, ids = counts[keep], ids[keep]
            z_col, pos_col = batch.column("z"), batch.column("pos")
        z, pos = z_col.flatten(), pos_col.flatten()
        collector.add_bulk(
            z.to_numpy(zero_copy_only=False),
            pos.to_numpy(zero_copy_only=False),
            counts,
            ids,
            _properties(batch, ONE_FILE_COLUMNS),
            _smiles(batch),
            _charges(batch),
        )
        done += len(keep)
        if progress is not None:
            progress(done / max(pf.metadata.num_rows, 1), f"read {done:,} molecules")


def load_store_tables(folder: Path, collector: Collector) -> None:
    """The store layout: molecules.parquet + atoms.parquet in ``folder``."""
    folder = Path(folder)
    mol_pf, atom_pf = (open_parquet(folder / name) for name in STORE_TABLES)
    for pf, cols in ((mol_pf, ("id", "n_atoms")), (atom_pf, ("z", "x", "y", "zc"))):
        missing = [c for c in cols if c not in pf.schema_arrow.names]
        if missing:
            raise DatasetError(f"{folder.name}: store table lacks columns {missing}")
    collector.limits.check_molecules(mol_pf.metadata.num_rows, folder.name)
    collector.limits.check_total_atoms(atom_pf.metadata.num_rows, folder.name)
    mol = mol_pf.read()
    counts = mol.column("n_atoms").to_numpy().astype(np.int64)
    if counts.sum() != atom_pf.metadata.num_rows:
        raise DatasetError(
            f"{folder.name}: n_atoms sums to {counts.sum():,} but atoms.parquet has {atom_pf.metadata.num_rows:,} rows"
        )
    atoms = atom_pf.read()
    pos = np.column_stack([atoms.column(c).to_numpy() for c in ("x", "y", "zc")])
    collector.add_bulk(
        atoms.column("z").to_numpy(),
        pos,
        counts,
        mol.column("id").to_numpy(zero_copy_only=False).astype(str),
        _properties(mol, RESERVED_COLUMNS),
        _smiles(mol),
        _charges(mol),
    )


def is_store_folder(path: Path) -> bool:
    return Path(path).is_dir() and all((Path(path) / t).is_file() for t in STORE_TABLES)


def write_parquet(path: Path, mols) -> None:
    """The one-file layout: one row per molecule with list columns ``z`` and ``pos``."""
    import pyarrow.parquet as pq

    off = mols.offsets
    z = pa.ListArray.from_arrays(pa.array(off.astype(np.int32)), pa.array(mols.atomic_numbers))
    pos = pa.ListArray.from_arrays(
        pa.array((3 * off).astype(np.int64)).cast(pa.int32()), pa.array(mols.positions_angstrom.reshape(-1))
    )
    cols = {"id": pa.array(mols.ids.astype(str)), "z": z, "pos": pos}
    if mols.smiles is not None:
        cols["smiles"] = pa.array(mols.smiles.astype(str))
    if mols.charges is not None:
        cols[TOTAL_CHARGE] = pa.array(mols.charges)
    for col in mols.properties.columns:
        cols[written_property_name(str(col), ONE_FILE_COLUMNS)] = pa.array(mols.properties[col].to_numpy(np.float64))
    pq.write_table(pa.table(cols), path, compression="zstd")


def _read(path: Path, collector: Collector, progress: Progress | None, options: Mapping[str, str]) -> None:
    if is_store_folder(path):
        load_store_tables(path, collector)
    else:
        load_parquet_file(path, collector, progress)


def _sniff(head: bytes, path: Path) -> int:
    return OPENING if head.startswith(PARQUET_MAGIC) else NO


FORMAT = Format(
    name="parquet",
    label="Parquet",
    extensions=(".parquet", ".pq"),
    read=_read,
    description="OrientScope's own: one row per molecule (`id`, `z`, `pos`, `smiles`, properties), or a folder "
    "with the store's two tables",
    sniff=_sniff,
    write=write_parquet,
    media_type="application/vnd.apache.parquet",
    reads_folder=is_store_folder,
    folder_hint=" and ".join(STORE_TABLES),
)
