"""QM9 (130,831 molecules) from the PyPI package ``qm9pack``.

The package is located with ``importlib.util.find_spec`` and its CSV files are
read directly: importing ``qm9pack`` fails under current setuptools because it
imports ``pkg_resources``. Coordinates are kept exactly as in the original QM9
XYZ files (B3LYP/6-31G(2df,p) geometries, ångström); the molecule id is QM9's
own integer index (1 = methane).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd

from orientscope.core.dataset import MoleculeSet, select_rows
from orientscope.core.elements import symbol_to_z

PART_FILES = ("qm9_part1.csv", "qm9_part2.csv", "qm9_part3.csv")
POLARIZABILITY_FILE = "qm9_polarizability.csv"

# source column -> (our name, unit, description)
PROPERTIES: dict[str, tuple[str, str, str]] = {
    "RotA_GHz": ("rot_a", "GHz", "rotational constant A"),
    "RotB_GHz": ("rot_b", "GHz", "rotational constant B"),
    "RotC_GHz": ("rot_c", "GHz", "rotational constant C"),
    "Dipole_debye": ("mu", "D", "dipole moment"),
    "Polarizability_bohr3": ("alpha", "bohr^3", "isotropic polarizability"),
    "HOMO_au": ("homo", "Ha", "HOMO energy"),
    "LUMO_au": ("lumo", "Ha", "LUMO energy"),
    "HOMO_LUMO_gap_au": ("gap", "Ha", "HOMO-LUMO gap"),
    "R2_bohr2": ("r2", "bohr^2", "electronic spatial extent <R^2>"),
    "ZPVE_au": ("zpve", "Ha", "zero-point vibrational energy"),
    "InternalEnergy_0K_au": ("u0", "Ha", "internal energy at 0 K"),
    "InternalEnergy_298K_au": ("u298", "Ha", "internal energy at 298.15 K"),
    "Enthalphy_298K_au": ("h298", "Ha", "enthalpy at 298.15 K"),
    "GibbsFreeEnergy_298K_au": ("g298", "Ha", "Gibbs free energy at 298.15 K"),
    "Heatcapacity_Cv_cal_mol_K": ("cv", "cal/(mol K)", "heat capacity at constant volume"),
    # Lab-frame tensor components: orientation-dependent by definition.
    "A_xx": ("alpha_xx", "bohr^3", "polarizability tensor xx (lab frame)"),
    "A_xy": ("alpha_xy", "bohr^3", "polarizability tensor xy (lab frame)"),
    "A_yy": ("alpha_yy", "bohr^3", "polarizability tensor yy (lab frame)"),
    "A_xz": ("alpha_xz", "bohr^3", "polarizability tensor xz (lab frame)"),
    "A_yz": ("alpha_yz", "bohr^3", "polarizability tensor yz (lab frame)"),
    "A_zz": ("alpha_zz", "bohr^3", "polarizability tensor zz (lab frame)"),
}
PROPERTY_UNITS = {name: unit for name, unit, _ in PROPERTIES.values()}
# Properties whose value depends on the lab frame itself, not only on the molecule.
FRAME_DEPENDENT = frozenset(n for n in PROPERTY_UNITS if n.startswith("alpha_"))


def qm9pack_data_dir() -> Path:
    """Folder holding qm9pack's CSV files, found without importing the package."""
    spec = importlib.util.find_spec("qm9pack")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the PyPI package 'qm9pack' is not installed (pip install qm9pack)")
    folder = Path(next(iter(spec.submodule_search_locations))) / "data"
    missing = [f for f in (*PART_FILES, POLARIZABILITY_FILE) if not (folder / f).is_file()]
    if missing:
        raise FileNotFoundError(f"qm9pack data files missing in {folder}: {missing}")
    return folder


def _read_csv(path: Path, columns: list[str]) -> pd.DataFrame:
    return pd.read_csv(path, usecols=columns, engine="pyarrow")


def parse_float_lists(strings) -> np.ndarray:
    """Concatenate strings like "[[1.0,2.0],[3.0,4.0]]" into one flat float64 array."""
    text = ",".join(strings).replace("[", "").replace("]", "")
    # fromstring stops silently at a bad token, so callers check the count.
    return np.fromstring(text, dtype=np.float64, sep=",")


def parse_symbol_lists(strings) -> np.ndarray:
    """Concatenate strings like "['C','H']" into one flat int16 atomic-number array."""
    text = ",".join(strings)
    for ch in "[]' ":
        text = text.replace(ch, "")
    tokens = np.array(text.split(","))
    uniq, inverse = np.unique(tokens, return_inverse=True)
    lut = np.array([symbol_to_z(s) for s in uniq], dtype=np.int16)
    return lut[inverse]


def load_qm9(limit: int | None = None) -> MoleculeSet:
    """Load QM9 from qm9pack.

    Parameters
    ----------
    limit : keep an evenly spread, deterministic subset of this many molecules
        (ordered by QM9 index; the first molecule, methane, is always kept).
    """
    folder = qm9pack_data_dir()
    src_props = [c for c in PROPERTIES if not c.startswith("A_")]
    cols = ["XYZ_file", "Index", "SMILES", "N_atoms", "Elements", "XYZ_Ang", *src_props]
    parts = pd.concat([_read_csv(folder / f, cols) for f in PART_FILES], ignore_index=True)
    pol = _read_csv(folder / POLARIZABILITY_FILE, ["XYZ_file", *[c for c in PROPERTIES if c.startswith("A_")]])
    df = parts.merge(pol, on="XYZ_file", how="left", validate="one_to_one")
    df = df.sort_values("Index", kind="stable").reset_index(drop=True)
    df = df.iloc[select_rows(len(df), limit)].reset_index(drop=True)

    n_atoms = df["N_atoms"].to_numpy(np.int64)
    offsets = np.concatenate([[0], np.cumsum(n_atoms)])
    z = parse_symbol_lists(df["Elements"].tolist())
    xyz = parse_float_lists(df["XYZ_Ang"].tolist())
    if z.size != offsets[-1] or xyz.size != 3 * offsets[-1]:
        raise ValueError(
            f"qm9pack CSVs are inconsistent: {offsets[-1]} atoms by N_atoms, "
            f"{z.size} element symbols, {xyz.size} coordinates"
        )
    props = pd.DataFrame({PROPERTIES[c][0]: df[c].to_numpy(np.float64) for c in PROPERTIES})
    return MoleculeSet(
        atomic_numbers=z,
        positions_angstrom=xyz.reshape(-1, 3),
        offsets=offsets,
        ids=df["Index"].astype(str).to_numpy(),
        smiles=df["SMILES"].fillna("").astype(str).to_numpy(),
        properties=props,
        property_units=dict(PROPERTY_UNITS),
        frame_dependent=FRAME_DEPENDENT,
    )
