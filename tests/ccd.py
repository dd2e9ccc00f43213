"""Real chemistry beyond QM9: components of the wwPDB Chemical Component Dictionary (CCD) that ships in ``biotite``.

The CCD holds ions, metal complexes, charged organics and ligands of up to a few hundred atoms, each with
ideal coordinates, per-atom formal charges and bonds. This module reads it in bulk (about 3 s) and writes
seeded selections of it as extended XYZ (``charge=`` on each comment line) or SDF (bonds and formal
charges in the mol block), for the chemistry tests and ``tests/bench/bench_chemistry.py``. ``biotite`` is
the optional extra ``ccd``; callers skip cleanly without it (:func:`require_ccd`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from orientscope.core.elements import SYMBOLS, symbol_to_z

# Elements that are not metals; every other element of a component makes it a "metal" component.
NON_METALS = frozenset("H He B C N O F Ne Si P S Cl Ar Ge As Se Br Kr Sb Te I Xe At Rn".split())
MAX_ATOMS = 400
BOND_ORDERS = {"SING": 1, "DOUB": 2, "TRIP": 3, "QUAD": 4, "AROM": 4}


def require_ccd():
    """The ``biotite`` CCD block, or a pytest skip naming the extra that provides it."""
    import pytest

    pytest.importorskip("biotite", reason="the CCD tests need the optional extra: pip install -e '.[ccd]'")
    from biotite.structure.info.ccd import get_ccd

    return get_ccd()


@dataclass(frozen=True)
class Components:
    """Every usable component: ideal coordinates present, known elements, 1 to MAX_ATOMS atoms.

    ids : (n,) str CCD ids; offsets : (n + 1,) int64 into the atom arrays
    atomic_numbers : (n_atoms,) int; positions_angstrom : (n_atoms, 3); atom_charges : (n_atoms,) int
    charge : (n,) int total formal charge; metal : (n,) bool contains a metal
    """

    ids: np.ndarray
    offsets: np.ndarray
    atomic_numbers: np.ndarray
    positions_angstrom: np.ndarray
    atom_charges: np.ndarray
    charge: np.ndarray
    metal: np.ndarray

    def index(self, name: str) -> int:
        return int(np.flatnonzero(self.ids == name)[0])

    def atoms(self, name: str) -> tuple[np.ndarray, np.ndarray, int]:
        """(atomic numbers, ideal positions, total charge) of one component."""
        i = self.index(name)
        a, b = self.offsets[i], self.offsets[i + 1]
        return self.atomic_numbers[a:b], self.positions_angstrom[a:b], int(self.charge[i])


@functools.cache
def components() -> Components:
    block = require_ccd()
    atoms = block["chem_comp_atom"]
    comp = atoms["comp_id"].as_array()
    symbols = np.char.capitalize(atoms["type_symbol"].as_array().astype(str))
    xyz = [atoms[f"pdbx_model_Cartn_{a}_ideal"] for a in "xyz"]
    missing = np.zeros(len(comp), bool)
    for column in xyz:
        if column.mask is not None:
            missing |= column.mask.array != 0
    known = np.isin(symbols, SYMBOLS[1:])
    starts = np.flatnonzero(np.r_[True, comp[1:] != comp[:-1]])
    counts = np.diff(np.r_[starts, len(comp)])
    metal_atom = known & ~np.isin(symbols, list(NON_METALS))
    usable = (np.add.reduceat(missing | ~known, starts) == 0) & (counts <= MAX_ATOMS)
    keep_atoms = np.repeat(usable, counts)
    kept_symbols, inverse = np.unique(symbols[keep_atoms], return_inverse=True)
    z = np.array([symbol_to_z(s) for s in kept_symbols], dtype=np.int64)[inverse.reshape(-1)]
    charges = atoms["charge"].as_array(int)[keep_atoms]
    kept_counts = counts[usable]
    offsets = np.concatenate([[0], np.cumsum(kept_counts)])
    return Components(
        ids=comp[starts][usable].astype(str),
        offsets=offsets,
        atomic_numbers=z,
        positions_angstrom=np.column_stack([c.as_array(float)[keep_atoms] for c in xyz]),
        atom_charges=charges,
        charge=np.add.reduceat(charges, offsets[:-1]) if len(kept_counts) else np.zeros(0, int),
        metal=np.add.reduceat(metal_atom, starts)[usable] > 0,
    )


def seeded_selection(seed: int, n_sample: int, metals: bool = True) -> np.ndarray:
    """Component ids: a seeded draw of ``n_sample`` without a metal plus (if ``metals``) every one with a metal,
    in CCD order."""
    ccd = components()
    organic = np.flatnonzero(~ccd.metal)
    picked = np.random.default_rng(seed).choice(organic, size=min(n_sample, len(organic)), replace=False)
    chosen = np.zeros(len(ccd.ids), bool)
    chosen[picked] = True
    if metals:
        chosen |= ccd.metal
    return ccd.ids[chosen]


def real_chemistry_set(seed: int, n: int = 10_000) -> np.ndarray:
    """Component ids of a seeded ``n``-molecule real-chemistry-like set: every metal-containing component,
    every one of 200 to 400 atoms, and a seeded draw of the others to make up ``n`` (CCD order)."""
    ccd = components()
    sizes = np.diff(ccd.offsets)
    chosen = ccd.metal | (sizes >= 200)
    rest = np.flatnonzero(~chosen)
    picked = np.random.default_rng(seed).choice(rest, size=max(0, min(n - int(chosen.sum()), len(rest))), replace=False)
    chosen[picked] = True
    return ccd.ids[chosen]


def _rotations(names: np.ndarray, rotate_seed: int | None) -> np.ndarray | None:
    if rotate_seed is None:
        return None
    from orientscope.science.counter_rng import haar_rotations

    return haar_rotations(rotate_seed, "ccd-pose", np.arange(len(names)))


def write_extxyz(path: Path, names, rotate_seed: int | None = None, charges: bool = True) -> Path:
    """Extended XYZ of ``names`` in ideal coordinates (turned by seeded Haar rotations if ``rotate_seed``),
    the id and (if ``charges``) ``charge=`` on each comment line."""
    ccd = components()
    names = np.asarray(names, dtype=str)
    rotations = _rotations(names, rotate_seed)
    lines = []
    for k, name in enumerate(names):
        z, pos, charge = ccd.atoms(name)
        if rotations is not None:
            pos = pos @ rotations[k].T
        extra = f" charge={charge}" if charges else ""
        lines.append(f'{len(z)}\nProperties=species:S:1:pos:R:3 id="{name}"{extra}\n')
        lines.extend(f"{SYMBOLS[int(a)]} {x:.4f} {y:.4f} {w:.4f}\n" for a, (x, y, w) in zip(z, pos, strict=True))
    Path(path).write_text("".join(lines))
    return Path(path)


@functools.cache
def _bonds() -> dict[str, list[tuple[str, str, int]]]:
    bonds = require_ccd()["chem_comp_bond"]
    out: dict[str, list[tuple[str, str, int]]] = {}
    for comp, a, b, order in zip(
        bonds["comp_id"].as_array(), bonds["atom_id_1"].as_array(), bonds["atom_id_2"].as_array(),
        bonds["value_order"].as_array(), strict=True,
    ):  # fmt: skip
        out.setdefault(str(comp), []).append((str(a), str(b), BOND_ORDERS.get(str(order).upper(), 1)))
    return out


@functools.cache
def _atom_names() -> dict[str, np.ndarray]:
    atoms = require_ccd()["chem_comp_atom"]
    comp, names = atoms["comp_id"].as_array(), atoms["atom_id"].as_array()
    starts = np.flatnonzero(np.r_[True, comp[1:] != comp[:-1]])
    return dict(zip(comp[starts].tolist(), np.split(names, starts[1:]), strict=True))


def mol_block(name: str) -> str:
    """A V2000 mol block of one component: ideal coordinates, the CCD's bonds and formal charges (``M  CHG``)."""
    ccd = components()
    i = ccd.index(name)
    a, b = ccd.offsets[i], ccd.offsets[i + 1]
    z, pos, atom_charges = ccd.atomic_numbers[a:b], ccd.positions_angstrom[a:b], ccd.atom_charges[a:b]
    position = {str(n): k + 1 for k, n in enumerate(_atom_names()[name])}
    bonds = [(position[x], position[y], o) for x, y, o in _bonds().get(name, []) if x in position and y in position]
    lines = [name, "  ccd", "", f"{len(z):3d}{len(bonds):3d}  0  0  0  0  0  0  0  0999 V2000"]
    lines += [f"{x:10.4f}{y:10.4f}{w:10.4f} {SYMBOLS[int(e)]:<3} 0  0  0  0  0  0  0  0  0  0  0  0"
              for e, (x, y, w) in zip(z, pos, strict=True)]  # fmt: skip
    lines += [f"{p:3d}{q:3d}{o:3d}  0" for p, q, o in bonds]
    charged = [(k + 1, int(c)) for k, c in enumerate(atom_charges) if c]
    for lo in range(0, len(charged), 8):
        part = charged[lo : lo + 8]
        lines.append(f"M  CHG{len(part):3d}" + "".join(f"{k:4d}{c:4d}" for k, c in part))
    lines.append("M  END")
    return "\n".join(lines) + "\n"


def write_sdf(path: Path, names) -> Path:
    """SDF of ``names``: one record per component (:func:`mol_block`), its id as the title."""
    Path(path).write_text("".join(mol_block(str(n)) + "$$$$\n" for n in names))
    return Path(path)
