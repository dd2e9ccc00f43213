"""ASE databases: ``.db`` (SQLite, or ``.json``) and ``.aselmdb`` (LMDB via ``ase-db-backends``).

``.aselmdb`` is how OMol25 ships. Each row is one molecule; its id is the
``name``/``id``/``mol_id`` key if present, else ``<row id>``. Numeric key-value
pairs, scalar calculator results (``energy``, ``charge`` ...) and scalar
``data`` entries become properties. The total charge is ``total_charge`` or
``charge`` of ``data``, then of the key-value pairs, else the sum of the row's
``initial_charges``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from orientscope.core.dataset import TOTAL_CHARGE
from orientscope.core.errors import DatasetError
from orientscope.core.limits import Limits
from orientscope.core.progress import Progress
from orientscope.loaders.base import (
    BadRecord,
    Record,
    charge_value,
    first_charge,
    numeric_properties,
    written_property_name,
)
from orientscope.loaders.formats import MARKER, NO, OPENING, Format, records

ID_KEYS = ("name", "id", "mol_id", "identifier", "source")
OWN_KEYS = frozenset({*ID_KEYS, "smiles"})  # keys never read as properties
SQLITE_MAGIC = b"SQLite format 3\x00"


def db_type(path: Path) -> str:
    """ASE backend name for a database file: "db" (SQLite), "aselmdb" or "json"."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".aselmdb", ".lmdb"):
        return "aselmdb"
    if suffix == ".json":
        return "json"
    with open(path, "rb") as fh:
        if fh.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
            raise DatasetError(f"{path.name}: not an SQLite file; expected an ASE .db, .aselmdb or .json database")
    return "db"


def _connect(path: Path):
    from ase.db import connect

    kind = db_type(path)
    kwargs = {"readonly": True} if kind == "aselmdb" else {}
    try:
        return connect(str(path), type=kind, create_indices=False, use_lock_file=False, **kwargs)
    except Exception as err:  # corrupt files raise backend-specific errors
        raise DatasetError(
            f"{path.name}: cannot open as an ASE {kind} database ({type(err).__name__}: {err})"
        ) from None


def _row_record(row, where: str) -> Record:
    kvp = dict(row.key_value_pairs)
    data = dict(row.get("data") or {})
    mol_id = next((str(src[k]) for src in (kvp, data) for k in ID_KEYS if isinstance(src.get(k), str) and src[k]), None)
    smiles = next((src["smiles"] for src in (kvp, data) if isinstance(src.get("smiles"), str)), "")
    skip = {*ID_KEYS, "smiles", TOTAL_CHARGE}
    props = numeric_properties((k, v) for k, v in kvp.items() if k not in skip)
    for key in ("energy", "free_energy"):
        value = row.get(key)
        if value is not None and np.ndim(value) == 0:
            props.setdefault(key, float(value))
    for k, v in numeric_properties((k, v) for k, v in data.items() if k not in skip).items():
        props.setdefault(k, v)
    return Record(
        where,
        np.asarray(row.numbers),
        np.asarray(row.positions),
        id=mol_id or str(row.id),
        smiles=smiles,
        properties=props,
        charge=_row_charge(row, kvp, data),
    )


def _row_charge(row, kvp: dict, data: dict) -> float:
    """``total_charge``/``charge`` of ``data`` or the key-value pairs, else the sum of ``initial_charges`` (or NaN).

    ``data`` first: ASE's SQLite backend overwrites a ``charge`` key with the sum of the initial charges.
    """
    charge = first_charge(data, kvp)
    per_atom = row.get("initial_charges")
    if np.isnan(charge) and per_atom is not None and np.ndim(per_atom) == 1:
        charge = charge_value(float(np.sum(per_atom)))
    return charge


def read_asedb(path: Path, limits: Limits, progress: Progress | None = None) -> Iterator[Record | BadRecord]:
    db = _connect(Path(path))
    try:
        total = db.count()
    except Exception as err:
        raise DatasetError(f"{Path(path).name}: cannot read the database ({type(err).__name__}: {err})") from None
    limits.check_molecules(total, Path(path).name)
    rows = db.select()
    done = 0
    while True:
        try:
            row = next(rows)
        except StopIteration:
            break
        except Exception as err:  # a corrupt row stops the cursor: report where
            raise DatasetError(
                f"{Path(path).name}: row after {done} rows is unreadable ({type(err).__name__}: {err})"
            ) from None
        done += 1
        where = f"row {row.id}"
        limits.check_atoms(int(row.natoms), f"{Path(path).name}: {where}")
        try:
            yield _row_record(row, where)
        except Exception as err:
            yield BadRecord(where, f"{type(err).__name__}: {err}")
        if progress is not None and done % 1000 == 0:
            progress(done / max(total, 1), f"read {done:,} of {total:,} rows")


def write_asedb(path: Path, mols, kind: str | None = None) -> None:
    """An ASE database (``kind`` "db", "aselmdb" or "json"; by default from the suffix).

    The id, SMILES and properties are stored in ``data`` (ASE key-value pairs
    must be identifiers with non-numeric string values; ids and property names need not be).
    """
    from ase import Atoms
    from ase.db import connect

    path = Path(path)
    kind = kind or {".aselmdb": "aselmdb", ".lmdb": "aselmdb", ".json": "json"}.get(path.suffix.lower(), "db")
    db = connect(str(path), type=kind, use_lock_file=False, append=False)
    cols = list(mols.properties.columns)
    values = mols.properties.to_numpy(np.float64) if cols else None
    with db:
        for i in range(mols.n_molecules):
            z, pos = mols.atoms_of(i)
            data = {written_property_name(str(c), OWN_KEYS): float(values[i, k]) for k, c in enumerate(cols)}
            data["id"] = str(mols.ids[i])
            if mols.charges is not None and not np.isnan(mols.charges[i]):
                data[TOTAL_CHARGE] = int(mols.charges[i])
            if mols.smiles is not None and mols.smiles[i]:
                data["smiles"] = str(mols.smiles[i])
            db.write(Atoms(numbers=z.astype(int), positions=pos), data=data)
    if hasattr(db, "close"):
        db.close()


def _sniff(head: bytes, path: Path) -> int:
    if head.startswith(SQLITE_MAGIC):
        return OPENING
    # A ".json" of rows with "numbers" (or the "nextid" counter) and no molecule record's "elements" is ASE's
    # JSON database; the JSON records format reads the rest.
    if Path(path).suffix.lower() == ".json" and b'"elements"' not in head:
        return MARKER if b'"nextid"' in head or b'"numbers"' in head else NO
    return NO


FORMAT = Format(
    name="asedb",
    label="ASE database",
    extensions=(".db", ".aselmdb", ".lmdb", ".json"),
    read=records(read_asedb),
    description="ASE's SQLite (`.db`), LMDB (`.aselmdb`, as OMol25 ships) or JSON database, a row per molecule",
    sniff=_sniff,
    write=write_asedb,
    media_type="application/vnd.sqlite3",
)
