"""GET /api/datasets/{id}/neighbors/{mol_id}?by=pose|chemistry&k=."""

import numpy as np
import pytest

from orientscope.core.orientations_schema import R_COLUMNS
from orientscope.science.rotations import geodesic_angle
from orientscope.services.results import open_result


def test_pose_neighbours_are_the_brute_force_nearest(client, api_data):
    frames = open_result(api_data, "qm9").table("frames", "original").to_pandas()
    R = frames[R_COLUMNS].to_numpy(float).reshape(-1, 3, 3)
    i = 57
    angles = np.degrees(geodesic_angle(R[i][None], R))
    angles[i] = np.inf
    order = np.argsort(angles)[:7]
    r = client.get(f"/api/datasets/qm9/neighbors/{frames['id'][i]}", params={"by": "pose", "k": 7})
    assert r.status_code == 200
    body = r.json()
    assert body["id"] == frames["id"][i] and body["metric"] == "angle_deg" and body["k"] == 7
    assert [n["id"] for n in body["items"]] == list(frames["id"][order])
    np.testing.assert_allclose([n["angle_deg"] for n in body["items"]], angles[order], atol=1e-6)
    assert all(n["tanimoto"] is None for n in body["items"])


def test_chemistry_neighbours_by_tanimoto(client):
    body = client.get("/api/datasets/toy/neighbors/water", params={"by": "chemistry", "k": 4}).json()
    assert [n["id"] for n in body["items"]] == ["a4", "a2", "co2", "methane"]
    assert [n["tanimoto"] for n in body["items"]] == pytest.approx([1.0, 0.8, 0.75, 0.5])
    assert body["metric"] == "tanimoto"


def test_chemistry_neighbours_need_fingerprints(client):
    r = client.get("/api/datasets/nochem/neighbors/1", params={"by": "chemistry"})
    assert r.status_code == 409 and "chemistry" in r.json()["detail"]


@pytest.mark.parametrize(("params", "field"), [({"k": 0}, "k"), ({"k": 101}, "k"), ({"by": "shape"}, "by")])
def test_bad_parameters_are_422(client, params, field):
    r = client.get("/api/datasets/qm9/neighbors/1", params=params)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", field]


def test_unknown_ids_are_404(client):
    r = client.get("/api/datasets/qm9/neighbors/nope")
    assert r.status_code == 404 and "'nope'" in r.json()["detail"]
    assert client.get("/api/datasets/nosuch/neighbors/1").status_code == 404
