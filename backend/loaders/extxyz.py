"""Extended XYZ (ASE): per-structure ``key=value`` pairs on the comment line become properties.

Frames are split by our own streaming reader (so a bad frame is located by
line and stepped over) and each frame is parsed by ASE. Numeric info values
and scalar calculator results (e.g. ``energy``) become properties; string
values named ``id``/``name`` become the molecule id and ``smiles`` the SMILES.
The total charge is ``total_charge=`` or ``charge=`` (which stays a property
too), else the sum of a per-atom ``initial_charges`` or ``charges`` column.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from orientscope.core.dataset import TOTAL_CHARGE
from orientscope.core.limits import Limits
from orientscope.core.progress import Progress
from orientscope.loaders.base import (
    BadRecord,
    LineReader,
    Record,
    charge_value,
    first_charge,
    numeric_properties,
    open_text,
)
from orientscope.loaders.xyz import iter_xyz_blocks

ID_KEYS = ("id", "name", "mol_id", "identifier")
SMILES_KEYS = ("smiles", "SMILES", "canonical_smiles")


def atoms_properties(atoms) -> tuple[str | None, str, dict[str, float]]:
    """(id, smiles, numeric properties) of an ASE Atoms from its info and calculator."""
    info = dict(atoms.info)
    mol_id = next(
        (str(info[k]) for k in ID_KEYS if isinstance(info.get(k), str | int | np.integer) and str(info[k])), None
    )
    smiles = next((info[k] for k in SMILES_KEYS if isinstance(info.get(k), str)), "")
    skip = set(ID_KEYS) | set(SMILES_KEYS) | {TOTAL_CHARGE}
    props = numeric_properties((k, v) for k, v in info.items() if k not in skip)
    calc = getattr(atoms, "calc", None)
    results = getattr(calc, "results", None) or {}
    props.update(numeric_properties((k, v) for k, v in results.items() if np.ndim(v) == 0))
    return mol_id, smiles, props


def atoms_charge(atoms) -> float:
    """Total charge of an ASE Atoms: ``total_charge``/``charge`` in its info, else the sum of its per-atom
    ``initial_charges`` column or calculated ``charges`` (whole numbers only; NaN if none)."""
    charge = first_charge(atoms.info)
    if not np.isnan(charge):
        return charge
    results = getattr(getattr(atoms, "calc", None), "results", None) or {}
    for per_atom in (atoms.arrays.get("initial_charges"), results.get("charges")):
        if per_atom is not None and np.ndim(per_atom) == 1 and len(per_atom) == len(atoms):
            return charge_value(float(np.sum(per_atom)))
    return np.nan


def _columns_problem(comment: str, first_atom_line: str) -> str | None:
    """ASE makes one numpy field per declared column, so a count like ``species:S:2147483648``
    would take minutes and gigabytes: refuse more columns than the atom lines hold."""
    from ase.io.extxyz import key_val_str_to_dict

    try:
        spec = key_val_str_to_dict(comment).get("Properties")
    except Exception:  # ASE reports a malformed comment line itself
        return None
    counts = spec.split(":")[2::3] if isinstance(spec, str) else []
    if not all(c.strip().isdigit() for c in counts):
        return None
    declared, available = sum(int(c) for c in counts), len(first_atom_line.split())
    if declared > available:
        return f"Properties declares {declared:,} columns but the atom lines have {available}"
    return None


def _parse_frame(text: str):
    from ase.io import read  # ASE import is slow; only pay it when reading

    return read(io.StringIO(text), format="extxyz")


def read_extxyz(path: Path, limits: Limits, progress: Progress | None = None) -> Iterator[Record | BadRecord]:
    with open_text(path, progress) as fh:
        for block in iter_xyz_blocks(LineReader(fh, Path(path).name), limits):
            if isinstance(block, BadRecord):
                yield block
                continue
            problem = _columns_problem(block.comment, block.atom_lines[0])
            if problem:
                yield BadRecord(block.where, f"not a valid extended-XYZ frame ({problem})")
                continue
            text = f"{len(block.atom_lines)}\n{block.comment}\n{''.join(block.atom_lines)}"
            try:
                atoms = _parse_frame(text)
            except Exception as err:  # ASE raises many types for malformed frames
                yield BadRecord(block.where, f"not a valid extended-XYZ frame ({type(err).__name__}: {err})")
                continue
            mol_id, smiles, props = atoms_properties(atoms)
            yield Record(block.where, atoms.numbers, atoms.positions, id=mol_id, smiles=smiles, properties=props,
                         charge=atoms_charge(atoms))  # fmt: skip


def molecule_atoms(mols, i: int):
    """Molecule ``i`` as an ASE Atoms with id, SMILES and properties in ``info``."""
    from ase import Atoms

    z, pos = mols.atoms_of(i)
    atoms = Atoms(numbers=z.astype(int), positions=pos)
    atoms.info["id"] = str(mols.ids[i])
    if mols.smiles is not None and mols.smiles[i]:
        atoms.info["smiles"] = str(mols.smiles[i])
    for col in mols.properties.columns:
        atoms.info[col] = float(mols.properties[col].iat[i])
    if mols.charges is not None and not np.isnan(mols.charges[i]):
        atoms.info[TOTAL_CHARGE] = int(mols.charges[i])
    return atoms


def write_extxyz(path: Path, mols) -> None:
    """Extended XYZ with every property (and id, SMILES) on each frame's comment line."""
    from ase.io import write

    write(str(path), (molecule_atoms(mols, i) for i in range(mols.n_molecules)), format="extxyz")
