"""GET /api/datasets/{id}/groups?by=scaffold|formula|cluster."""

from collections import Counter

import pytest

from orientscope.core.elements import hill_formula
from orientscope.store.datasets import load_dataset


def test_formula_groups(client, api_data):
    r = client.get("/api/datasets/qm9/groups", params={"by": "formula"})
    assert r.status_code == 200
    body = r.json()
    mols = load_dataset(api_data, "qm9")
    expected = Counter(hill_formula(mols.atoms_of(i)[0]) for i in range(mols.n_molecules))
    assert body["by"] == "formula" and body["total"] == len(expected)
    # Groups have a code (the chemistry stage numbers them) and their formula as label.
    names = [g["label"] for g in body["groups"]]
    assert dict(zip(names, (g["size"] for g in body["groups"]), strict=True)) == dict(expected)
    sizes = [g["size"] for g in body["groups"]]
    assert sizes == sorted(sizes, reverse=True)
    ch4 = body["groups"][names.index("CH4")]
    assert ch4["n_degenerate"] == 1


def test_scaffold_groups_with_chemistry_statistics(client):
    body = client.get("/api/datasets/toy/groups", params={"by": "scaffold"}).json()
    groups = {g["group"]: g for g in body["groups"]}
    assert groups["s1"]["size"] == 3
    assert groups["s1"]["mean_classifier_score"] == pytest.approx((0.2 + 0.3 + 0.6) / 3)
    assert groups["s1"]["statistics"] == {"kl": 0.5}
    assert [g["group"] for g in body["groups"]] == ["", "s1", "c1ccccc1", "s2"]  # largest first, ties by name


def test_scaffold_groups_need_chemistry(client):
    r = client.get("/api/datasets/nochem/groups", params={"by": "cluster"})
    assert r.status_code == 409
    assert "chemistry" in r.json()["detail"] and "'nochem'" in r.json()["detail"]


def test_errors(client):
    r = client.get("/api/datasets/qm9/groups", params={"by": "colour"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "by"]
    assert client.get("/api/datasets/nosuch/groups").status_code == 404


def test_cluster_groups_have_smiles_labels_and_an_ungrouped_count(client):
    body = client.get("/api/datasets/qm9/groups", params={"by": "cluster"}).json()
    assert body["ungrouped"]["label"] == "unclustered"
    assert sum(g["size"] for g in body["groups"]) + body["ungrouped"]["size"] == 400
    from rdkit import Chem

    assert all(g["group"].isdigit() and Chem.MolFromSmiles(g["label"]) is not None for g in body["groups"])
