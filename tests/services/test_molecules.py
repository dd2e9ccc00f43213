"""Molecule pages, records and exports on constructed molecules."""

import io

import numpy as np
import pytest
from rdkit import Chem

from backend.core.elements import hill_formula
from backend.services.cache import get_view
from backend.services.errors import InvalidInput, NotComputed
from backend.services.molecules import (
    MAX_PAGE,
    export_molecule,
    formulas,
    list_molecules,
    molecule_detail,
    xyz_block,
)
from tests.services.conftest import toy_set


def test_formulas_without_chemistry_are_hill_formulas(toy_dir):
    mols = toy_set()
    expected = [hill_formula(mols.atoms_of(i)[0]) for i in range(mols.n_molecules)]
    assert list(formulas(get_view(toy_dir, "plain"))) == expected
    assert expected[:4] == ["H2O", "CO2", "CH4", "C6H6"]


def test_groups_come_from_chemistry_when_present(toy_dir):
    item = list_molecules(toy_dir, "toy", limit=8).items[4]
    assert item["groups"] == {"scaffold": "s1", "formula": "X"}
    item = list_molecules(toy_dir, "plain", limit=8).items[0]
    assert item["groups"] == {"formula": "H2O"}
    with pytest.raises(NotComputed, match="chemistry"):
        list_molecules(toy_dir, "plain", group_by="scaffold")


def test_sort_and_page(toy_dir):
    page = list_molecules(toy_dir, "plain", sort="-n_atoms", offset=1, limit=2)
    assert page.total == 8 and [m["id"] for m in page.items] == ["a1", "a2"]  # benzene (12) first, then 9-atom clouds
    page = list_molecules(toy_dir, "plain", sort="energy", limit=1)
    assert page.items[0]["id"] == "water"  # energy = index - 3


def test_smarts_filter(toy_dir):
    page = list_molecules(toy_dir, "plain", smarts="[#6]=[#8]")
    assert [m["id"] for m in page.items] == ["co2"]


@pytest.mark.parametrize(
    ("kwargs", "loc"),
    [
        ({"limit": MAX_PAGE + 1}, "limit"),
        ({"offset": -1}, "offset"),
        ({"sort": "x"}, "sort"),
        ({"smarts": "(("}, "smarts"),
    ],
)
def test_bad_arguments_name_the_parameter(toy_dir, kwargs, loc):
    with pytest.raises(InvalidInput) as err:
        list_molecules(toy_dir, "plain", **kwargs)
    assert err.value.loc == ("query", loc)


def test_detail_of_a_degenerate_molecule(toy_dir):
    m = molecule_detail(toy_dir, "plain", "methane")
    assert m["degenerate"] is True and "eigen_gap" in m["degenerate_reason"]
    assert m["elements"] == ["C", "H", "H", "H", "H"]
    assert m["properties"] == [{"name": "energy", "value": -1.0, "unit": "eV"}]
    assert m["classifier_score"] is None


def test_xyz_block_format():
    text = xyz_block(["O", "H"], np.array([[0.0, 0.0, 0.0], [0.96, 0.0, 0.0]]), "water")
    assert text.splitlines()[:2] == ["2", "water"]
    assert text.splitlines()[3].split() == ["H", "0.96000000", "0.00000000", "0.00000000"]


def test_sdf_export_of_benzene_has_aromatic_bonds_from_smiles(toy_dir):
    text, name = export_molecule(toy_dir, "plain", "benzene", "sdf", "canonical")
    assert name == "plain_benzene_canonical.sdf"
    mol = next(Chem.ForwardSDMolSupplier(io.BytesIO(text.encode()), removeHs=False))
    assert Chem.MolToSmiles(Chem.RemoveHs(mol)) == "c1ccccc1"
    # Canonical pose of a planar ring: the third coordinate vanishes.
    np.testing.assert_allclose(mol.GetConformer().GetPositions()[:, 2], 0, atol=1e-4)
