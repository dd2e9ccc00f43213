"""Tiny constructed molecules with known geometry (ångström)."""

from __future__ import annotations

import numpy as np

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
