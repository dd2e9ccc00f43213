"""Exports over real HTTP: the direct GET, the background job (202, progress, download, rotations), 413 above
the direct limit, 4xx on bad input, and exports on read-only and token-protected servers."""

from __future__ import annotations

import io
import json
import shutil

import httpx
import numpy as np
import pytest

from orientscope.server import create_app
from tests.api.conftest import ServerThread
from tests.harness import wait_job

TOKEN = "export-token"
BODY = {"mode": "random", "format": "xyz", "seed": 9}


def _snapshot(folder) -> dict:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


@pytest.fixture(scope="module")
def store(qm9_store, tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("exports") / "data"
    shutil.copytree(qm9_store / "datasets", data_dir / "datasets")
    return data_dir


@pytest.fixture(scope="module")
def read_only(store):
    with ServerThread(create_app(store, read_only=True, dashboard=False)) as server:
        yield server.url


@pytest.fixture(scope="module")
def with_token(store):
    with ServerThread(create_app(store, token=TOKEN, dashboard=False)) as server:
        yield server.url


def _finished(url: str, job_id: str) -> dict:
    def progress_in_range(job: dict) -> None:
        assert 0.0 <= job["progress"] <= 1.0

    return wait_job(url, f"/api/jobs/{job_id}", each=progress_in_range)


def test_an_export_job_on_a_read_only_server_downloads_what_the_direct_export_gives(read_only, store):
    before = _snapshot(store / "datasets")
    r = httpx.post(f"{read_only}/api/datasets/qm9/exports", json=BODY)
    assert r.status_code == 202, r.text
    accepted = r.json()
    assert set(accepted) == {"job_id", "export_id"}
    job = _finished(read_only, accepted["job_id"])
    assert job["state"] == "done", job["message"]
    assert (job["kind"], job["export_id"], job["dataset_id"], job["stage"]) == (
        "export",
        accepted["export_id"],
        "qm9",
        "done",
    )
    assert job["progress"] == 1.0 and job["result"]["n_molecules"] == 400
    url = f"{read_only}/api/datasets/qm9/exports/{accepted['export_id']}"
    data = httpx.get(url, timeout=60)
    assert data.status_code == 200 and 'filename="qm9-random.xyz"' in data.headers["content-disposition"]
    direct = httpx.get(f"{read_only}/api/datasets/qm9/export", params=BODY, timeout=60)
    assert direct.status_code == 200 and direct.content == data.content  # same seed, same rotations
    rotations = httpx.get(url, params={"part": "rotations"})
    assert rotations.status_code == 200 and rotations.headers["content-type"].startswith("text/csv")
    lines = rotations.text.splitlines()
    assert lines[0].startswith("id,mode,purpose,seed,r00") and len(lines) == 401
    assert lines[1].split(",")[1:4] == ["random", "augment", "9"]  # a de-biased export: training data (augment)
    # Nothing was written to the dataset store; the files live in the exports area.
    assert _snapshot(store / "datasets") == before
    assert (store / "exports" / accepted["export_id"] / "qm9-random.xyz").is_file()
    assert accepted["job_id"] in [j["id"] for j in httpx.get(f"{read_only}/api/jobs").json()]
    assert httpx.get(f"{read_only}/api/health").json()["jobs"]["done"] >= 1


def test_exports_need_no_token_because_they_only_read(with_token):
    r = httpx.post(f"{with_token}/api/datasets/qm9/exports", json={"mode": "canonical"})
    assert r.status_code == 202, r.text
    job = _finished(with_token, r.json()["job_id"])
    assert job["state"] == "done" and job["result"]["n_molecules"] == 400
    # No format given: the dataset's own format where it can be written, else extended XYZ.
    download = httpx.get(f"{with_token}/api/datasets/qm9/exports/{r.json()['export_id']}")
    assert download.status_code == 200 and "qm9-canonical." in download.headers["content-disposition"]


def test_a_direct_export_above_the_limit_is_413_naming_the_job_route(read_only, monkeypatch):
    monkeypatch.setenv("ORIENTSCOPE_DIRECT_EXPORT_MAX", "399")  # read per request
    r = httpx.get(f"{read_only}/api/datasets/qm9/export", params=BODY)
    assert r.status_code == 413
    assert "400 molecules" in r.json()["detail"] and "POST /api/datasets/qm9/exports" in r.json()["detail"]
    assert httpx.post(f"{read_only}/api/datasets/qm9/exports", json=BODY).status_code == 202
    monkeypatch.setenv("ORIENTSCOPE_DIRECT_EXPORT_MAX", "400")
    assert httpx.get(f"{read_only}/api/datasets/qm9/export", params=BODY, timeout=60).status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"mode": "sideways"}, "mode"),
        ({"mode": "random", "format": "pdb"}, "format"),
        ({"mode": "random", "seed": -1}, "seed"),
        ({"mode": "random", "seed": "nine"}, "seed"),
        ({"format": "xyz"}, "mode"),
        ({"mode": "canonical", "copies": 2}, "copies"),
        ({"mode": "random", "copies": 0}, "copies"),
        ({"mode": "random", "extra": 1}, "extra"),
    ],
)
def test_bad_export_bodies_are_422_naming_the_field(read_only, body, field):
    r = httpx.post(f"{read_only}/api/datasets/qm9/exports", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["loc"][-1] == field


def test_an_audit_purpose_with_canonical_poses_is_refused_by_both_routes(read_only):
    body = {"mode": "canonical", "purpose": "audit"}
    for r in (
        httpx.post(f"{read_only}/api/datasets/qm9/exports", json=body),
        httpx.get(f"{read_only}/api/datasets/qm9/export", params=body, timeout=60),
    ):
        assert r.status_code == 422 and "purpose 'audit'" in r.json()["detail"][0]["msg"], r.text
    # The default purpose (augment) with canonical poses is what every canonical export has always sent.
    assert httpx.post(f"{read_only}/api/datasets/qm9/exports", json={"mode": "canonical"}).status_code == 202


def test_an_export_with_copies_downloads_each_copy_and_one_rotations_file(read_only):
    r = httpx.post(f"{read_only}/api/datasets/qm9/exports", json={**BODY, "copies": 3})
    assert r.status_code == 202, r.text
    job = _finished(read_only, r.json()["job_id"])
    assert job["state"] == "done" and job["result"]["copies"] == 3, job["message"]
    url = f"{read_only}/api/datasets/qm9/exports/{r.json()['export_id']}"
    files = [httpx.get(url, params={"copy": k}, timeout=60) for k in range(3)]
    assert [f.status_code for f in files] == [200, 200, 200]
    assert 'filename="qm9-random.copy2.xyz"' in files[2].headers["content-disposition"]
    assert len({f.content for f in files}) == 3  # three different rotations of the same molecules
    single = httpx.get(f"{read_only}/api/datasets/qm9/export", params=BODY, timeout=60)
    assert files[0].content == single.content  # copy 0 is the single export
    rotations = httpx.get(url, params={"part": "rotations"}).text.splitlines()
    assert rotations[0].startswith("copy,id,mode,purpose,seed,r00") and len(rotations) == 1 + 3 * 400
    assert httpx.get(url, params={"copy": 3}).status_code == 422


def test_an_audit_export_of_some_ids_gives_the_copies_a_python_audit_scores(read_only, store):
    """The REST API's copies follow the rule of rotated_copies and audit_model: purpose, seed, copy, molecule id."""
    import pandas as pd

    from orientscope.pipeline.export import copy_rotations
    from orientscope.science.counter_rng import id_counters
    from orientscope.store.datasets import load_dataset

    ids = list(load_dataset(store, "qm9").ids[[5, 50, 300]])
    body = {"mode": "random", "format": "npz", "seed": 4, "copies": 2, "purpose": "audit", "ids": ids}
    r = httpx.post(f"{read_only}/api/datasets/qm9/exports", json=body)
    assert r.status_code == 202, r.text
    job = _finished(read_only, r.json()["job_id"])
    assert job["state"] == "done" and job["result"]["n_molecules"] == 3, job["message"]
    assert job["result"]["purpose"] == "audit" and job["result"]["rotation_rule_version"] == 2
    url = f"{read_only}/api/datasets/qm9/exports/{r.json()['export_id']}"
    table = pd.read_csv(io.StringIO(httpx.get(url, params={"part": "rotations"}).text), dtype={"id": str})
    for k in range(2):
        rows = table[table["copy"] == k].set_index("id").loc[ids]
        got = rows[[f"r{i}{j}" for i in range(3) for j in range(3)]].to_numpy().reshape(-1, 3, 3)
        np.testing.assert_allclose(got, copy_rotations(id_counters(ids), 4, k, "audit"), atol=1e-11)
    assert (table["purpose"] == "audit").all()
    for bad, field in (({"purpose": "train"}, "purpose"), ({"ids": []}, "ids"), ({"limit": 0}, "limit")):
        r = httpx.post(f"{read_only}/api/datasets/qm9/exports", json={**body, **bad})
        assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == field, r.text
    r = httpx.post(f"{read_only}/api/datasets/qm9/exports", json={**body, "ids": [*ids, "nosuch"]})
    assert r.status_code == 422 and "nosuch" in r.text


def test_unknown_datasets_exports_and_jobs_are_404(read_only):
    r = httpx.post(f"{read_only}/api/datasets/nope/exports", json=BODY)
    assert r.status_code == 404 and "nope" in r.json()["detail"]
    assert (
        httpx.post(
            f"{read_only}/api/datasets/qm9/exports", content=b"{", headers={"content-type": "application/json"}
        ).status_code
        == 422
    )
    for export_id in ("e0123456789abcdef", "x0123456789abcdef", "nonsense"):
        r = httpx.get(f"{read_only}/api/datasets/qm9/exports/{export_id}")
        assert r.status_code == 404 and export_id in r.json()["detail"]
    accepted = httpx.post(f"{read_only}/api/datasets/qm9/exports", json=BODY).json()
    _finished(read_only, accepted["job_id"])
    other = httpx.get(f"{read_only}/api/datasets/toy/exports/{accepted['export_id']}")  # another dataset's id
    assert other.status_code == 404
    assert httpx.get(f"{read_only}/api/jobs/xdoesnotexist").status_code == 404


def test_the_download_of_a_failed_export_is_409_with_the_reason(read_only, store):
    broken = store / "datasets" / "broken"
    shutil.copytree(store / "datasets" / "qm9", broken)
    meta = json.loads((broken / "dataset.json").read_text())
    (broken / "dataset.json").write_text(json.dumps({**meta, "id": "broken", "name": "Broken"}))
    for atoms in broken.rglob("atoms.parquet"):
        atoms.unlink()  # the export job cannot read the molecules
    try:
        accepted = httpx.post(f"{read_only}/api/datasets/broken/exports", json=BODY).json()
        job = _finished(read_only, accepted["job_id"])
        assert job["state"] == "failed" and job["message"]
        r = httpx.get(f"{read_only}/api/datasets/broken/exports/{accepted['export_id']}")
        assert r.status_code == 409
        assert "is not ready" in r.json()["detail"] and accepted["job_id"] in r.json()["detail"]
    finally:
        shutil.rmtree(broken)
