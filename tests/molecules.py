"""Tiny constructed molecules with known geometry (ångström)."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from orientscope.core.dataset import MoleculeSet

# Tetrahedral methane: all three covariance eigenvalues equal.
METHANE = (
    [6, 1, 1, 1, 1],
    np.array(
        [[0, 0, 0], [0.629, 0.629, 0.629], [-0.629, -0.629, 0.629], [-0.629, 0.629, -0.629], [0.629, -0.629, -0.629]],
        float,
    ),
)
CO2 = ([6, 8, 8], np.array([[0, 0, 0], [1.16, 0, 0], [-1.16, 0, 0]], float))
ACETYLENE = ([6, 6, 1, 1], np.array([[0.6, 0, 0], [-0.6, 0, 0], [1.66, 0, 0], [-1.66, 0, 0]], float))
WATER = ([8, 1, 1], np.array([[0, 0, 0.117], [0, 0.757, -0.469], [0, -0.757, -0.469]], float))
HCN = ([1, 6, 7], np.array([[0, 0, -1.63], [0, 0, -0.566], [0, 0, 0.586]], float))
SODIUM_ION = ([11], np.array([[0.3, -1.2, 2.0]], float))
# Octahedral SF6: a spherical top.
SF6 = ([16] + [9] * 6, np.vstack([np.zeros(3), 1.56 * np.vstack([np.eye(3), -np.eye(3)])]))


def _c3v(apex_z: int, apex: float, base_z: int, base_r: float, base_h: float, extra=()):
    """An apex atom on the z axis over three equal atoms at 120 degrees: a symmetric top (C3v)."""
    ang = np.arange(3) * 2 * np.pi / 3
    base = np.column_stack([base_r * np.cos(ang), base_r * np.sin(ang), np.full(3, base_h)])
    z = [apex_z, *[base_z] * 3, *[e[0] for e in extra]]
    pos = np.vstack([[0, 0, apex], base, *[e[1] for e in extra]]) if extra else np.vstack([[0, 0, apex], base])
    return z, pos


# Ammonia (oblate: the three H spread wider than the C3 axis is long) and chloromethane (prolate).
NH3 = _c3v(7, 0.0, 1, 0.94, -0.38)
CH3CL = _c3v(6, 0.0, 1, 1.03, -0.36, extra=[(17, [0, 0, 1.78])])


def benzene():
    ang = np.arange(6) * np.pi / 3
    c = np.column_stack([1.39 * np.cos(ang), 1.39 * np.sin(ang), np.zeros(6)])
    h = np.column_stack([2.47 * np.cos(ang), 2.47 * np.sin(ang), np.zeros(6)])
    return [6] * 6 + [1] * 6, np.vstack([c, h])


def asymmetric(seed: int = 0, n_atoms: int = 9):
    """A random, chemically meaningless but well-conditioned asymmetric cloud."""
    rng = np.random.default_rng(seed)
    pos = rng.normal(size=(n_atoms, 3)) * np.array([2.0, 1.2, 0.6])
    z = rng.choice([1, 6, 7, 8], size=n_atoms)
    return list(z), pos


# Three small symmetric molecules as one xyz file (no SMILES, no properties): every
# frame is degenerate, and the set is far too small for the statistics and models.
WATER_METHANE_FORMALDEHYDE_XYZ = """3
water
O 0.000 0.000 0.117
H 0.000 0.757 -0.469
H 0.000 -0.757 -0.469
5
methane
C 0.000 0.000 0.000
H 0.629 0.629 0.629
H -0.629 -0.629 0.629
H -0.629 0.629 -0.629
H 0.629 -0.629 -0.629
4
formaldehyde
C 0.000 0.000 -0.528
O 0.000 0.000 0.677
H 0.000 0.935 -1.116
H 0.000 -0.935 -1.116
"""


# Six-membered rings, aromatic and aliphatic, as "SMILES name" lines (orientscope generate): the scaffold
# groups are c1ccccc1 (benzene, 4 molecules) and C1CCCCC1 (cyclohexane, 6, so it comes first by size).
# SMILES are case-sensitive: aromatic c is not aliphatic C.
RINGS_SMILES = """Cc1ccccc1 toluene
Oc1ccccc1 phenol
Nc1ccccc1 aniline
CCc1ccccc1 ethylbenzene
CC1CCCCC1 methylcyclohexane
OC1CCCCC1 cyclohexanol
NC1CCCCC1 cyclohexylamine
CCC1CCCCC1 ethylcyclohexane
CCCC1CCCCC1 propylcyclohexane
SC1CCCCC1 cyclohexanethiol
"""


def waters(n_stacked: int, n_other: int, seed: int = 0) -> MoleculeSet:
    """``n_stacked`` identical waters (one pose: their axis points coincide) and ``n_other`` randomly
    distorted and rotated ones."""
    rng = np.random.default_rng(seed)
    water = np.array([[0.0, 0.0, 0.0], [0.757, 0.586, 0.0], [-0.757, 0.586, 0.0]])
    poses = [water] * n_stacked
    for _ in range(n_other):
        r1, r2 = rng.uniform(0.9, 1.1, 2)
        angle = np.radians(rng.uniform(95, 120))
        pose = np.array([[0, 0, 0], [r1, 0, 0], [r2 * np.cos(angle), r2 * np.sin(angle), 0]])
        poses.append(Rotation.random(random_state=rng).apply(pose))
    n = len(poses)
    return MoleculeSet(
        atomic_numbers=np.tile([8, 1, 1], n),
        positions_angstrom=np.concatenate(poses),
        offsets=np.arange(n + 1) * 3,
        ids=[f"stack-{i}" for i in range(n_stacked)] + [f"w-{i}" for i in range(n_other)],
    )


# Charged organics and a costly ligand for bond perception (science/perception.py).
ACETATE = ([6, 8, 8, 6, 1, 1, 1], [[-0.07, 0, 0], [-0.68, 1.06, 0], [-0.68, -1.06, 0], [1.44, 0, 0], [1.8, 0, 1.03],
                                   [1.8, -0.89, -0.51], [1.8, 0.89, -0.51]])  # fmt: skip
AMMONIUM = ([7, 1, 1, 1, 1], [[0, 0, 0], [0.6, 0.6, 0.6], [-0.6, -0.6, 0.6], [-0.6, 0.6, -0.6], [0.6, -0.6, -0.6]])
# Methylthioacryloyl-CoA (the PDB's 1GZ), whose bond-order search runs for minutes without a cap.
COSTLY_SMILES = (
    "CS/C=C/C(=O)SCCNC(=O)CCNC(=O)[C@H](O)C(C)(C)CO[P@@](=O)(O)O[P@](=O)(O)OC[C@H]1O[C@@H](n2cnc3c(N)ncnc32)"
    "[C@H](O)[C@@H]1OP(=O)(O)O"
)


def embedded(smiles: str, seed: int = 7) -> tuple[list[int], np.ndarray]:
    """Atoms and ETKDG coordinates (seeded) of a SMILES, hydrogens included; its graph is then forgotten."""
    from rdkit import Chem
    from rdkit.Chem import AllChem

    mol = Chem.AddHs(Chem.MolFromSmiles(smiles))
    assert AllChem.EmbedMolecule(mol, randomSeed=seed) == 0
    return [a.GetAtomicNum() for a in mol.GetAtoms()], mol.GetConformer().GetPositions()


# Small asymmetric molecules, embedded by RDKit and stored without their SMILES:
# the chemistry stage has to perceive the bonds from 3D.
NO_SMILES = ["CCO", "CCCO", "CC(=O)OC", "CC(N)C(=O)O", "CCC(C)=O", "OCC(O)CO", "CC(C)CO", "NCCO"]

# Small organics, charge 0, whose graphs perception finds.
ORGANICS = ["CCO", "CCCO", "CC(=O)OC", "CCC(C)=O", "OCC(O)CO", "CC(C)CO", "NCCO", "c1ccccc1O", "Cc1ccccc1",
            "C1CCCCC1", "CC1CCCC1", "c1ccncc1"]  # fmt: skip

# An extxyz file that the readers read differently from how it was written (a repeated id, D, a property
# named like a column).
READ_DIFFERENTLY = (
    "3\nid=A n_atoms=0\nO 0 0 0.117\nD 0 0.757 -0.469\nH 0 -0.757 -0.469\n"
    "5\nid=A n_atoms=1\nC 0 0 0\nH 0.629 0.629 0.629\nH -0.629 -0.629 0.629\nH -0.629 0.629 -0.629\n"
    "H 0.629 -0.629 -0.629\n"
    "3\nid=B n_atoms=2\nO 0 0 0.117\nH 0 0.757 -0.469\nH 0 -0.757 -0.469\n"
)
