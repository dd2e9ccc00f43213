"""Bonds from 3D per molecule under a budget: charges from the file, metals, a costly search, Ctrl-C."""

from __future__ import annotations

import math
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from rdkit import Chem

from orientscope.science import perception
from orientscope.science.perception import NO_GRAPH_REASONS, bond_order_iterations, perceive_bonds
from tests.molecules import ACETATE, AMMONIUM, COSTLY_SMILES, embedded


def smiles_of(found) -> str:
    return Chem.MolToSmiles(Chem.RemoveHs(found.mol))


def tetraaqua_zinc() -> tuple[list[int], np.ndarray]:
    """[Zn(H2O)4]2+: Zn at the centre of a tetrahedron of waters 2.0 Å away, each H pointing outwards."""
    z, pos = [30], [np.zeros(3)]
    for d in np.array([[1, 1, 1], [-1, -1, 1], [-1, 1, -1], [1, -1, -1]]) / math.sqrt(3):
        o = 2.0 * d
        side = np.cross(d, [0, 0, 1] if abs(d[2]) < 0.9 else [1, 0, 0])
        side /= np.linalg.norm(side)
        z += [8, 1, 1]
        pos += [o, o + 0.6 * d + 0.75 * side, o + 0.6 * d - 0.75 * side]
    return z, np.array(pos)


def test_the_charge_from_the_file_gives_the_charged_graph():
    assert smiles_of(perceive_bonds(*ACETATE, charge=-1)) == "CC(=O)[O-]"
    assert smiles_of(perceive_bonds(*AMMONIUM, charge=1)) == "[NH4+]"
    # A zwitterion is neutral overall: charge 0 from the file gives both charged ends.
    glycine = perceive_bonds(*embedded("[NH3+]CC(=O)[O-]"), charge=0)
    assert smiles_of(glycine) == "[NH3+]CC(=O)[O-]"
    assert sum(a.GetFormalCharge() for a in glycine.mol.GetAtoms()) == 0
    assert smiles_of(perceive_bonds(*embedded("CC(=O)O"), charge=0)) == "CC(=O)O"


def test_an_unknown_charge_assumes_zero_and_says_so_where_that_fails():
    found = perceive_bonds(*ACETATE)  # NaN: the file gives no charge
    assert found.mol is None and found.reason == "charge_unknown"
    assert "0 was assumed" in NO_GRAPH_REASONS[found.reason] and "charge" in found.message
    known = perceive_bonds(*ACETATE, charge=1)  # a charge the atoms cannot carry
    assert known.mol is None and known.reason == "charge"


def test_single_atoms_take_the_charge_as_written():
    assert smiles_of(perceive_bonds([11], [[0, 0, 0]], charge=1)) == "[Na+]"
    assert smiles_of(perceive_bonds([17], [[0, 0, 0]], charge=-1)) == "[Cl-]"
    assert smiles_of(perceive_bonds([26], [[0, 0, 0]])) == "[Fe]"


def test_a_metal_is_bound_by_dative_bonds_and_takes_the_rest_of_the_charge():
    found = perceive_bonds(*tetraaqua_zinc(), charge=2)
    assert found.reason == "" and found.mol is not None
    zinc = found.mol.GetAtomWithIdx(0)
    assert zinc.GetFormalCharge() == 2
    dative = [b for b in found.mol.GetBonds() if b.GetBondType() == Chem.BondType.DATIVE]
    assert len(dative) == 4 and all(b.GetEndAtomIdx() == 0 for b in dative)  # water -> zinc
    assert smiles_of(found).count("->") + smiles_of(found).count("<-") == 4
    # The input's atom order is kept (the SDF writer relies on it).
    assert [a.GetAtomicNum() for a in found.mol.GetAtoms()] == tetraaqua_zinc()[0]


def test_a_costly_search_stops_at_its_iteration_cap(monkeypatch):
    from rdkit.Chem import rdDetermineBonds

    z, pos = embedded(COSTLY_SMILES)
    caps = []
    search = rdDetermineBonds.DetermineBondOrders

    def spy(mol, **kwargs):
        caps.append(kwargs["maxIterations"])
        return search(mol, **kwargs)

    monkeypatch.setattr(rdDetermineBonds, "DetermineBondOrders", spy)
    found = perceive_bonds(z, pos, charge=0)
    assert found.mol is None and found.reason == "budget" and "Max Iterations" in found.message
    assert caps == [bond_order_iterations(len(z))] and 0 < caps[0] < 10**6
    # The cap shrinks as the square of the size: about the same CPU per molecule at any size.
    assert bond_order_iterations(400) < bond_order_iterations(100) / 8 and bond_order_iterations(2000) >= 1


def test_an_atom_with_too_many_neighbours_loses_its_longest_contact():
    # A proton 1.25 Å from methane's carbon: within bonding range, but carbon has room for four.
    z, pos = [6, 1, 1, 1, 1, 1], np.array([[0, 0, 0], [0.63, 0.63, 0.63], [-0.63, -0.63, 0.63], [-0.63, 0.63, -0.63],
                                           [0.63, -0.63, -0.63], [0, 0, -1.25]])  # fmt: skip
    found = perceive_bonds(z, pos, charge=1)
    assert found.reason == "" and sorted(smiles_of(found).split(".")) == ["C", "[H+]"]


def test_a_search_that_caught_ctrl_c_raises_keyboard_interrupt(monkeypatch):
    from rdkit.Chem import rdDetermineBonds

    def interrupted(mol, **kwargs):  # what RDKit does after catching SIGINT: stop and return, stereo not perceived
        return None

    monkeypatch.setattr(rdDetermineBonds, "DetermineBondOrders", interrupted)
    with pytest.raises(KeyboardInterrupt):
        perceive_bonds(*ACETATE, charge=-1)


def test_ctrl_c_during_a_costly_search_stops_the_process(tmp_path):
    """SIGINT, as Ctrl-C sends it, in the middle of RDKit's bond-order search (which catches it itself)."""
    script = textwrap.dedent("""
        from orientscope.science.perception import perceive_bonds
        from tests.molecules import COSTLY_SMILES, embedded
        z, pos = embedded(COSTLY_SMILES)
        print("searching", flush=True)
        perceive_bonds(z, pos, charge=0, budget_s=600.0)  # a cap far beyond the test's patience
        print("finished", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=str(Path(__file__).resolve().parents[2]))  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == "searching"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0 and "KeyboardInterrupt" in err and "finished" not in out


def test_every_failure_has_a_reason_with_a_meaning():
    assert set(NO_GRAPH_REASONS) >= {"metal", "charge", "charge_unknown", "budget", "valence", "rdkit"}
    assert perception.failure_reason("Max Iterations Exceeded", False, True) == "budget"
    assert perception.failure_reason("anything", True, True) == "metal"
