"""Columnar in-memory molecule set, validated on construction.

Atoms of all molecules are stored flat; molecule ``i`` owns atoms
``offsets[i]:offsets[i+1]``. Positions are float64 in ångström.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from orientscope.core.elements import MAX_Z, atomic_number_message
from orientscope.core.errors import DatasetError

# The stored molecules table's column of each molecule's total charge (and a file's key for it).
TOTAL_CHARGE = "total_charge"
# Columns of the stored molecules table that are not properties: a property of such a name is renamed at loading.
RESERVED_COLUMNS = frozenset({"id", "smiles", "offset", "n_atoms", TOTAL_CHARGE})


@dataclass(frozen=True, eq=False)
class MoleculeSet:
    """A set of molecules in columnar form.

    Attributes
    ----------
    atomic_numbers : (n_atoms_total,) int16
    positions_angstrom : (n_atoms_total, 3) float64
    offsets : (n_molecules + 1,) int64, ``offsets[0] == 0``
    ids : (n_molecules,) str, unique molecule ids
    smiles : (n_molecules,) str or None ("" where unknown)
    properties : DataFrame with n_molecules rows, numeric columns
    property_units : column name -> unit string
    frame_dependent : property columns whose values change with the lab frame by
        definition (e.g. tensor components); declared by the loader or at ingest,
        stored in the dataset's metadata (see :func:`frame_dependent_properties`)
    charges : (n_molecules,) float64 total charge in e as the file gives it (whole
        numbers), NaN where the file gives none; None if no molecule has one
    """

    atomic_numbers: np.ndarray
    positions_angstrom: np.ndarray
    offsets: np.ndarray
    ids: np.ndarray
    smiles: np.ndarray | None = None
    properties: pd.DataFrame = field(default_factory=pd.DataFrame)
    property_units: dict[str, str] = field(default_factory=dict)
    frame_dependent: frozenset[str] = frozenset()
    charges: np.ndarray | None = None

    def __post_init__(self) -> None:
        z = np.ascontiguousarray(self.atomic_numbers, dtype=np.int16)
        pos = np.ascontiguousarray(self.positions_angstrom, dtype=np.float64)
        off = np.ascontiguousarray(self.offsets, dtype=np.int64)
        ids = np.asarray(self.ids).astype(str)
        object.__setattr__(self, "atomic_numbers", z)
        object.__setattr__(self, "positions_angstrom", pos)
        object.__setattr__(self, "offsets", off)
        object.__setattr__(self, "ids", ids)
        if self.smiles is not None:
            object.__setattr__(self, "smiles", np.asarray(self.smiles).astype(str))
        if self.charges is not None:
            object.__setattr__(self, "charges", np.asarray(self.charges, dtype=np.float64).reshape(-1))
        props = self.properties if self.properties is not None else pd.DataFrame()
        object.__setattr__(self, "properties", props.reset_index(drop=True))
        object.__setattr__(self, "frame_dependent", frozenset(map(str, self.frame_dependent)))
        self._validate()

    # ------------------------------------------------------------------ checks
    def _name(self, i: int) -> str:
        return f"molecule {str(self.ids[i])!r} (index {i})" if i < len(self.ids) else f"index {i}"

    def _validate(self) -> None:
        z, pos, off = self.atomic_numbers, self.positions_angstrom, self.offsets
        if off.ndim != 1 or off.size < 1 or off[0] != 0:
            raise DatasetError("offsets must be a 1-d array starting at 0")
        n = off.size - 1
        if pos.ndim != 2 or pos.shape[1] != 3:
            raise DatasetError(f"positions must have shape (n_atoms, 3), got {pos.shape}")
        if z.shape != (pos.shape[0],):
            raise DatasetError(f"{z.shape[0]} atomic numbers but {pos.shape[0]} positions")
        if off[-1] != pos.shape[0]:
            raise DatasetError(f"offsets end at {off[-1]} but there are {pos.shape[0]} atoms")
        counts = np.diff(off)
        if (counts < 0).any():
            raise DatasetError(f"offsets decrease at {self._name(int(np.argmax(counts < 0)))}")
        if (counts == 0).any():
            raise DatasetError(f"{self._name(int(np.argmax(counts == 0)))} has no atoms")
        if self.ids.shape != (n,):
            raise DatasetError(f"{self.ids.shape[0]} ids for {n} molecules")
        if n and len(np.unique(self.ids)) != n:
            uniq, cnt = np.unique(self.ids, return_counts=True)
            raise DatasetError(f"duplicate molecule id {str(uniq[cnt > 1][0])!r}")
        bad = ~np.isfinite(pos).all(axis=1)
        if bad.any():
            i = int(np.searchsorted(off, int(np.argmax(bad)), side="right") - 1)
            raise DatasetError(f"{self._name(i)} has NaN or infinite coordinates")
        badz = (z < 1) | (z > MAX_Z)
        if badz.any():
            i = int(np.searchsorted(off, int(np.argmax(badz)), side="right") - 1)
            raise DatasetError(f"{self._name(i)}: {atomic_number_message(int(z[badz][0]))}")
        if self.smiles is not None and self.smiles.shape != (n,):
            raise DatasetError(f"{self.smiles.shape[0]} SMILES for {n} molecules")
        self._validate_charges(n)
        if len(self.properties.columns) and len(self.properties) != n:
            raise DatasetError(f"property table has {len(self.properties)} rows for {n} molecules")
        check_frame_dependent(self.frame_dependent, self.properties.columns)

    def _validate_charges(self, n: int) -> None:
        q = self.charges
        if q is None:
            return
        if q.shape != (n,):
            raise DatasetError(f"{q.shape[0]} total charges for {n} molecules")
        known = ~np.isnan(q)
        bad = known & (~np.isfinite(q) | (q != np.round(q)))
        if bad.any():
            i = int(np.argmax(bad))
            raise DatasetError(
                f"{self._name(i)} has a total charge of {q[i]}; a total charge is a whole number of e (or unknown)"
            )

    # ------------------------------------------------------------------ access
    @property
    def n_molecules(self) -> int:
        return int(self.offsets.size - 1)

    @property
    def n_atoms(self) -> np.ndarray:
        """(n_molecules,) atom count per molecule."""
        return np.diff(self.offsets)

    @property
    def molecule_index(self) -> np.ndarray:
        """(n_atoms_total,) index of the molecule that owns each atom."""
        return np.repeat(np.arange(self.n_molecules), self.n_atoms)

    def index_of(self, mol_id: str) -> int:
        """Row index of a molecule id; KeyError naming the id if absent."""
        hits = np.flatnonzero(self.ids == str(mol_id))
        if hits.size == 0:
            raise KeyError(f"unknown molecule id {str(mol_id)!r}")
        return int(hits[0])

    def atoms_of(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(atomic numbers, positions) of molecule row ``i``."""
        a, b = self.offsets[i], self.offsets[i + 1]
        return self.atomic_numbers[a:b], self.positions_angstrom[a:b]

    def charge_of(self, i: int) -> float:
        """Total charge of molecule row ``i`` in e, NaN if the file gave none."""
        return float(self.charges[i]) if self.charges is not None else float("nan")

    def subset(self, rows) -> MoleculeSet:
        """A new set with the molecules at ``rows`` (in that order)."""
        rows = np.asarray(rows, dtype=np.int64)
        counts = self.n_atoms[rows]
        starts = self.offsets[rows]
        new_off = np.concatenate([[0], np.cumsum(counts)])
        atom_idx = np.repeat(starts - new_off[:-1], counts) + np.arange(new_off[-1])
        return MoleculeSet(
            atomic_numbers=self.atomic_numbers[atom_idx],
            positions_angstrom=self.positions_angstrom[atom_idx],
            offsets=new_off,
            ids=self.ids[rows],
            smiles=None if self.smiles is None else self.smiles[rows],
            properties=self.properties.iloc[rows].reset_index(drop=True)
            if len(self.properties.columns)
            else pd.DataFrame(),
            property_units=dict(self.property_units),
            frame_dependent=self.frame_dependent,
            charges=None if self.charges is None else self.charges[rows],
        )

    def with_positions(self, positions_angstrom: np.ndarray) -> MoleculeSet:
        """The same molecules with new coordinates (e.g. a rotated copy)."""
        return MoleculeSet(
            atomic_numbers=self.atomic_numbers,
            positions_angstrom=positions_angstrom,
            offsets=self.offsets,
            ids=self.ids,
            smiles=self.smiles,
            properties=self.properties,
            property_units=dict(self.property_units),
            frame_dependent=self.frame_dependent,
            charges=self.charges,
        )


def check_frame_dependent(names, properties) -> frozenset[str]:
    """``names`` as a set; DatasetError naming any that is not one of ``properties``."""
    names = frozenset(map(str, names))
    unknown = sorted(names - set(map(str, properties)))
    if unknown:
        raise DatasetError(
            f"frame-dependent properties {unknown} are not properties of the dataset; it has {list(properties)}"
        )
    return names


def frame_dependent_properties(meta: dict) -> frozenset[str]:
    """Properties whose values change with the lab frame, as the dataset's metadata declares them."""
    return frozenset(meta.get("frame_dependent", ()))


def select_rows(n_total: int, limit: int | None) -> np.ndarray:
    """Deterministic, evenly spread subset of row numbers (all rows if no limit)."""
    if limit is None or limit >= n_total:
        return np.arange(n_total)
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    return np.unique(np.linspace(0, n_total - 1, limit).round().astype(np.int64))


def rows_of_ids(dataset_ids: np.ndarray, ids, what: str = "the dataset") -> np.ndarray:
    """(m,) sorted rows of ``ids`` (one id, or a sequence) among ``dataset_ids``; DatasetError naming unknown or
    repeated ids."""
    values = [ids] if isinstance(ids, str) else ids
    wanted = pd.Index(np.asarray(values if isinstance(values, np.ndarray) else list(values)).astype(str))
    if wanted.empty:
        raise DatasetError("no ids given: give at least one molecule id")
    if wanted.has_duplicates:
        repeated = wanted[wanted.duplicated()].unique()
        raise DatasetError(f"{len(repeated):,} id(s) are given more than once, e.g. {list(repeated[:5])}")
    where = pd.Index(np.asarray(dataset_ids).astype(str)).get_indexer(wanted)
    if (where < 0).any():
        unknown = wanted[where < 0]
        raise DatasetError(
            f"{len(unknown):,} of the {len(wanted):,} ids are not molecules of {what}, e.g. {list(unknown[:5])}"
        )
    return np.sort(where)


def from_molecules(molecules, ids=None, smiles=None, properties=None, property_units=None, charges=None):
    """Build a :class:`MoleculeSet` from a list of (atomic_numbers, positions) pairs (``charges``: total
    charge per molecule, None or NaN where unknown)."""
    molecules = list(molecules)
    zs = [np.asarray(m[0]).reshape(-1) for m in molecules]
    ps = [np.asarray(m[1], dtype=np.float64).reshape(-1, 3) for m in molecules]
    for i, (zz, pp) in enumerate(zip(zs, ps, strict=False)):
        if zz.shape[0] != pp.shape[0]:
            name = ids[i] if ids is not None else i
            raise DatasetError(f"molecule {name!r}: {zz.shape[0]} elements but {pp.shape[0]} positions")
    counts = np.array([len(z) for z in zs], dtype=np.int64)
    return MoleculeSet(
        atomic_numbers=np.concatenate(zs) if zs else np.zeros(0, np.int16),
        positions_angstrom=np.concatenate(ps) if ps else np.zeros((0, 3)),
        offsets=np.concatenate([[0], np.cumsum(counts)]),
        ids=np.arange(1, len(zs) + 1).astype(str) if ids is None else ids,
        smiles=smiles,
        properties=pd.DataFrame() if properties is None else pd.DataFrame(properties),
        property_units=property_units or {},
        charges=None if charges is None else [np.nan if q is None else q for q in charges],
    )


def concat_molecule_sets(parts: list[MoleculeSet]) -> MoleculeSet:
    """One set holding ``parts`` in order (e.g. the shards of a small sharded dataset)."""
    if not parts:
        raise DatasetError("no molecule sets to concatenate")
    counts = np.concatenate([p.n_atoms for p in parts])
    has_smiles = any(p.smiles is not None for p in parts)
    has_charges = any(p.charges is not None for p in parts)
    return MoleculeSet(
        atomic_numbers=np.concatenate([p.atomic_numbers for p in parts]),
        positions_angstrom=np.concatenate([p.positions_angstrom for p in parts]),
        offsets=np.concatenate([[0], np.cumsum(counts)]),
        ids=np.concatenate([p.ids for p in parts]),
        smiles=np.concatenate([p.smiles if p.smiles is not None else np.full(p.n_molecules, "") for p in parts])
        if has_smiles
        else None,
        properties=pd.concat([p.properties for p in parts], ignore_index=True),
        property_units=dict(parts[0].property_units),
        frame_dependent=parts[0].frame_dependent,
        charges=np.concatenate([p.charges if p.charges is not None else np.full(p.n_molecules, np.nan) for p in parts])
        if has_charges
        else None,
    )
