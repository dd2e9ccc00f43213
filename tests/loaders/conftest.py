"""Small molecules with known geometry, as ASE Atoms, for the format round trips."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture()
def small_atoms():
    """Water, methane, CO2 and benzene-like ring; seeded positions, per-structure properties."""
    from ase import Atoms

    rng = np.random.default_rng(7)
    specs = [("H2O", 3), ("CH4", 5), ("CO2", 3), ("C6H6", 12)]
    out = []
    for k, (formula, n) in enumerate(specs):
        atoms = Atoms(formula, positions=rng.normal(scale=1.5, size=(n, 3)))
        atoms.info.update({"name": f"mol{k}", "gap": 0.25 * k, "mu": 1.5 + k})
        out.append(atoms)
    return out
