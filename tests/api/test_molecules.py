"""GET /api/datasets/{id}/molecules (pages, filters, sort) and /molecules/{mol_id} (record and downloads)."""

import io

import ase.io
import numpy as np
import pytest
from rdkit import Chem

from orientscope.core.elements import hill_formula
from orientscope.science.frames import frame_of_molecule
from orientscope.store.datasets import load_dataset


@pytest.fixture(scope="module")
def qm9(api_data):
    return load_dataset(api_data, "qm9")


def test_first_page_in_stored_order(client, qm9):
    r = client.get("/api/datasets/qm9/molecules", params={"limit": 5})
    assert r.status_code == 200
    body = r.json()
    assert body["total"] == 400 and body["offset"] == 0 and body["limit"] == 5
    assert [m["id"] for m in body["items"]] == list(qm9.ids[:5])
    first = body["items"][0]
    assert first["id"] == "1" and first["smiles"] == "C" and first["formula"] == "CH4" and first["n_atoms"] == 5
    assert first["degenerate"] is True  # methane is symmetric
    # The group id is the formula itself, or the chemistry stage's formula-group number when it ran.
    assert "formula" in first["groups"]


def test_pages_cover_everything_once(client, qm9):
    seen = []
    for offset in range(0, 400, 150):
        seen += [
            m["id"]
            for m in client.get("/api/datasets/qm9/molecules", params={"offset": offset, "limit": 150}).json()["items"]
        ]
    assert seen == list(qm9.ids)
    r = client.get("/api/datasets/qm9/molecules", params={"offset": 1000})
    assert r.json()["items"] == [] and r.json()["total"] == 400


def test_formulas_match_hill_formula(client, qm9):
    items = client.get("/api/datasets/qm9/molecules", params={"limit": 1000}).json()["items"]
    for i in range(0, 400, 37):
        assert items[i]["formula"] == hill_formula(qm9.atoms_of(i)[0])


def test_sort_by_atoms_descending_and_by_property(client, qm9):
    items = client.get("/api/datasets/qm9/molecules", params={"limit": 1000, "sort": "-n_atoms"}).json()["items"]
    counts = [m["n_atoms"] for m in items]
    assert counts == sorted(counts, reverse=True) and counts[0] == int(qm9.n_atoms.max())
    items = client.get("/api/datasets/qm9/molecules", params={"limit": 3, "sort": "gap"}).json()["items"]
    gaps = qm9.properties["gap"].to_numpy()
    assert items[0]["id"] == qm9.ids[int(np.argmin(gaps))]


def test_sort_by_classifier_score(client):
    items = client.get("/api/datasets/toy/molecules", params={"sort": "-classifier_score"}).json()["items"]
    assert [m["id"] for m in items[:3]] == ["water", "a3", "benzene"]
    assert items[0]["classifier_score"] == pytest.approx(0.9)


def test_group_filter(client, qm9):
    formula = hill_formula(qm9.atoms_of(10)[0])
    group = client.get("/api/datasets/qm9/molecules", params={"offset": 10, "limit": 1}).json()["items"][0]["groups"][
        "formula"
    ]
    r = client.get("/api/datasets/qm9/molecules", params={"group_by": "formula", "group": group, "limit": 1000})
    expected = [qm9.ids[i] for i in range(400) if hill_formula(qm9.atoms_of(i)[0]) == formula]
    assert [m["id"] for m in r.json()["items"]] == expected
    assert r.json()["total"] == len(expected)
    r = client.get("/api/datasets/toy/molecules", params={"group_by": "scaffold", "group": "s1"})
    assert [m["id"] for m in r.json()["items"]] == ["a1", "a2", "a4"]
    assert r.json()["items"][0]["groups"] == {"scaffold": "s1", "formula": "X"}


def test_group_filter_accepts_the_label_and_items_carry_it(client, qm9):
    formula = hill_formula(qm9.atoms_of(10)[0])
    item = client.get("/api/datasets/qm9/molecules", params={"offset": 10, "limit": 1}).json()["items"][0]
    assert item["group_labels"]["formula"] == formula and item["groups"]["formula"] != formula  # code and label
    by_label = client.get("/api/datasets/qm9/molecules", params={"group_by": "formula", "group": formula})
    by_code = client.get(
        "/api/datasets/qm9/molecules", params={"group_by": "formula", "group": item["groups"]["formula"]}
    )
    assert by_label.status_code == 200 and by_label.json()["total"] > 0
    assert by_label.json() == by_code.json()
    r = client.get("/api/datasets/qm9/molecules", params={"group_by": "formula", "group": "C99"})
    assert r.status_code == 422 and "give a group code or its label" in r.json()["detail"][0]["msg"]


def test_scaffold_filter_without_chemistry_is_409(client):
    r = client.get("/api/datasets/nochem/molecules", params={"group_by": "scaffold", "group": "x"})
    assert r.status_code == 409
    assert "chemistry" in r.json()["detail"]


def test_smarts_filter_matches_rdkit(client, qm9):
    pattern = Chem.MolFromSmarts("[OX2H]")
    expected = [qm9.ids[i] for i, s in enumerate(qm9.smiles) if Chem.MolFromSmiles(s).HasSubstructMatch(pattern)]
    r = client.get("/api/datasets/qm9/molecules", params={"smarts": "[OX2H]", "limit": 1000})
    assert r.status_code == 200
    assert 0 < r.json()["total"] < 400
    assert [m["id"] for m in r.json()["items"]] == expected
    assert r.json()["complete"] is True and r.json()["n_scanned"] == 400


def test_invalid_smarts_is_422_naming_the_problem(client):
    r = client.get("/api/datasets/qm9/molecules", params={"smarts": "C(("})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["query", "smarts"]
    assert "invalid SMARTS 'C(('" in r.json()["detail"][0]["msg"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": 1001}, "limit"),
        ({"limit": 0}, "limit"),
        ({"offset": -1}, "offset"),
        ({"offset": 10**20}, "offset"),  # once a 500: the echoed offset did not fit a JSON integer
        ({"limit": "many"}, "limit"),
        ({"sort": "colour"}, "sort"),
        ({"group": "CH4"}, "group_by"),
        ({"group_by": "colour"}, "group_by"),
        ({"smarts": "[C"}, "smarts"),
        ({"smarts": "C" * 501}, "smarts"),
    ],
)
def test_bad_list_parameters_are_422_naming_the_field(client, params, field):
    r = client.get("/api/datasets/qm9/molecules", params=params)
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["query", field]


def test_molecule_record(client, qm9):
    i = 123
    mol_id = qm9.ids[i]
    r = client.get(f"/api/datasets/qm9/molecules/{mol_id}")
    assert r.status_code == 200
    m = r.json()
    z, pos = qm9.atoms_of(i)
    assert m["id"] == mol_id and m["smiles"] == qm9.smiles[i] and m["n_atoms"] == len(z)
    assert len(m["elements"]) == len(z)
    np.testing.assert_allclose(m["positions"], pos, atol=1e-12)
    frames, canonical = frame_of_molecule(z, pos)  # the same code as the pipeline
    np.testing.assert_allclose(m["rotation"], frames.rotations[0], atol=1e-9)
    np.testing.assert_allclose(m["canonical_positions"], canonical, atol=1e-9)
    np.testing.assert_allclose(m["quaternion"], frames.quaternions[0], atol=1e-9)
    np.testing.assert_allclose(m["eigenvalues"], frames.eigenvalues[0], atol=1e-9)
    R = np.array(m["rotation"])
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-9)
    assert [a["axis"] for a in m["axes_lonlat"]] == [1, 2, 3]
    lat0 = np.degrees(np.arcsin(R[0, 2]))
    assert m["axes_lonlat"][0]["lat_deg"] == pytest.approx(lat0)
    props = {p["name"]: p for p in m["properties"]}
    assert props["gap"]["unit"] == "Ha"
    assert props["gap"]["value"] == pytest.approx(qm9.properties["gap"][i])
    assert m["degenerate"] is False and m["degenerate_reason"] is None


def test_degenerate_molecule_has_a_reason(client):
    m = client.get("/api/datasets/toy/molecules/co2").json()
    assert m["degenerate"] is True and "linear" in m["degenerate_reason"]
    assert m["classifier_score"] == pytest.approx(0.1)
    assert m["properties"] == [{"name": "energy", "value": -2.0, "unit": "eV"}]


def test_unknown_molecule_is_404_naming_it(client):
    for path in ["/api/datasets/qm9/molecules/999999999", "/api/datasets/qm9/molecules/999999999?format=sdf"]:
        r = client.get(path)
        assert r.status_code == 404
        assert "'999999999'" in r.json()["detail"] and "'qm9'" in r.json()["detail"]


@pytest.mark.parametrize("pose", ["stored", "canonical"])
def test_xyz_download_round_trips_through_ase(client, qm9, pose):
    i = 200
    r = client.get(f"/api/datasets/qm9/molecules/{qm9.ids[i]}", params={"format": "xyz", "pose": pose})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("chemical/x-xyz")
    assert "attachment" in r.headers["content-disposition"]
    atoms = ase.io.read(io.StringIO(r.text), format="xyz")
    z, pos = qm9.atoms_of(i)
    assert list(atoms.numbers) == list(z)
    expected = pos if pose == "stored" else frame_of_molecule(z, pos)[1]
    np.testing.assert_allclose(atoms.positions, expected, atol=1e-7)


@pytest.mark.parametrize("pose", ["stored", "canonical"])
def test_sdf_download_round_trips_through_rdkit(client, qm9, pose):
    i = 321
    r = client.get(f"/api/datasets/qm9/molecules/{qm9.ids[i]}", params={"format": "sdf", "pose": pose})
    assert r.status_code == 200
    mol = next(Chem.ForwardSDMolSupplier(io.BytesIO(r.content), removeHs=False))
    assert mol is not None
    z, pos = qm9.atoms_of(i)
    assert [a.GetAtomicNum() for a in mol.GetAtoms()] == list(z)
    expected = pos if pose == "stored" else frame_of_molecule(z, pos)[1]
    np.testing.assert_allclose(mol.GetConformer().GetPositions(), expected, atol=1e-4)  # molfile precision
    # Bond orders come from the stored SMILES: the same molecule comes back (3D adds stereo tags).
    back = Chem.MolToSmiles(Chem.RemoveHs(mol), isomericSmiles=False)
    assert back == Chem.MolToSmiles(Chem.MolFromSmiles(qm9.smiles[i]), isomericSmiles=False)
    assert mol.GetProp("SMILES") == qm9.smiles[i]
    assert float(mol.GetProp("gap")) == pytest.approx(qm9.properties["gap"][i])


def test_sdf_without_smiles_perceives_bonds(client):
    r = client.get("/api/datasets/toy/molecules/water", params={"format": "sdf"})
    mol = next(Chem.ForwardSDMolSupplier(io.BytesIO(r.content), removeHs=False))
    assert mol.GetNumBonds() == 2


@pytest.mark.parametrize(
    ("params", "field"), [({"format": "pdb"}, "format"), ({"format": "xyz", "pose": "lab"}, "pose")]
)
def test_bad_download_parameters_are_422(client, params, field):
    r = client.get("/api/datasets/qm9/molecules/1", params=params)
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["query", field]
