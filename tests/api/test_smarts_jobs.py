"""SMARTS searches of a large sharded set as background jobs, over real HTTP.

A small sharded set (3 shards) stands in for a large one: the job threshold
``ORIENTSCOPE_SMARTS_JOB_ABOVE`` is lowered below its size. The job's result must
equal the in-request scan's mask exactly, and reads answer 409 naming the job
until it is done.
"""

from __future__ import annotations

import threading

import httpx
import numpy as np
import pytest

from orientscope.pipeline import smarts_jobs
from orientscope.pipeline.sharded_ingest import ingest_files
from orientscope.pipeline.smarts_jobs import SMARTS_JOB_ABOVE_ENV
from orientscope.pipeline.synth import SynthSpec, write_synth
from orientscope.services import cache, jobs
from orientscope.services.bytecache import shared_cache
from orientscope.services.molecules import match_smarts
from tests.api.conftest import ServerThread
from tests.harness import wait_job

N = 2400
SHARD = 1000
BASE = "/api/datasets/big"


@pytest.fixture(scope="module")
def store(tmp_path_factory, qm9_small):
    """(data dir, export dir): one sharded dataset ``big`` of N molecules, and the server's export area."""
    root = tmp_path_factory.mktemp("smarts-jobs")
    write_synth(root / "npz", SynthSpec(n=N, bias="qm9", seed=5, shard_size=SHARD), source=qm9_small)
    ingest_files(root / "data", [root / "npz"], "big", cluster="in-process", shard_size=SHARD)
    return root / "data", root / "exports"


@pytest.fixture(scope="module")
def env(store):
    mp = pytest.MonkeyPatch()
    mp.setenv(SMARTS_JOB_ABOVE_ENV, str(SHARD))  # the set (2400) is "large"
    mp.setenv("ORIENTSCOPE_EXPORT_DIR", str(store[1]))
    yield mp
    mp.undo()
    cache.clear_cache()


@pytest.fixture(scope="module")
def client(store, env):
    from orientscope.server import create_app

    with (
        ServerThread(create_app(store[0], dashboard=False, read_only=True)) as server,
        httpx.Client(base_url=server.url, timeout=60) as c,
    ):
        yield c


def in_request_mask(data_dir, smarts: str, env) -> np.ndarray:
    """The in-request shard scan's mask (the threshold raised above the set for this call only)."""
    shared_cache().clear("smarts_mask")  # masks are cached per view and pattern, whichever path made them
    env.setenv(SMARTS_JOB_ABOVE_ENV, str(10 * N))
    try:
        found = match_smarts(cache.get_view(data_dir, "big"), smarts)
    finally:
        env.setenv(SMARTS_JOB_ABOVE_ENV, str(SHARD))
        shared_cache().clear("smarts_mask")
    assert found.complete and found.n_scanned == N
    return found.mask


def wait_done(client, job_id: str) -> dict:
    return wait_job(client, f"/api/jobs/{job_id}")


def store_files(data_dir) -> set:
    return {(p.relative_to(data_dir), p.stat().st_mtime_ns) for p in data_dir.rglob("*") if p.is_file()}


def test_a_read_before_any_search_answers_409_naming_the_post_route(client):
    for path in ("/molecules", "/map"):
        r = client.get(BASE + path, params={"smarts": "[#7]~[#6]"})
        assert r.status_code == 409
        assert "POST /api/datasets/big/smarts" in r.json()["detail"]


def test_a_search_job_shows_shards_and_its_result_equals_the_in_request_scan(client, store, env):
    data_dir, _ = store
    before = store_files(data_dir)
    r = client.post(BASE + "/smarts", json={"smarts": "C=O"})
    assert r.status_code == 202
    accepted = r.json()
    assert accepted["job_id"].startswith("q") and accepted["search_id"].startswith("s")
    job = wait_done(client, accepted["job_id"])
    assert job["state"] == "done", job["message"]
    assert job["kind"] == "smarts" and job["search_id"] == accepted["search_id"]
    assert job["shards"] == [3, 3] and job["progress"] == 1.0
    kept = smarts_jobs.result(jobs.manager(data_dir), job).mask
    assert 100 < kept.sum() < N
    assert job["result"] == {
        "search_id": accepted["search_id"],
        "n_matches": int(kept.sum()),
        "n_scanned": N,
        "complete": True,
    }
    # The reads answer from the kept result: the same molecules, in the same order.
    page = client.get(BASE + "/molecules", params={"smarts": "C=O", "limit": 1000, "offset": 0}).json()
    assert page["total"] == int(kept.sum()) and page["complete"] is True and page["n_scanned"] == N
    ids = client.get(BASE + "/molecules", params={"limit": 1000, "offset": 0}).json()["items"]
    first = [m["id"] for i, m in enumerate(ids) if kept[i]]
    assert [m["id"] for m in page["items"]][: len(first)] == first
    shown = client.get(BASE + "/map", params={"smarts": "C=O", "axes": "1"})
    assert shown.status_code == 200 and shown.json()["n_matches"] == int(kept.sum())
    # ... which is exactly what the in-request scan finds.
    np.testing.assert_array_equal(kept, in_request_mask(data_dir, "C=O", env))
    # Nothing was written to the dataset store (the server is read-only).
    assert store_files(data_dir) == before


def test_the_same_search_spelled_differently_is_the_same_job(client):
    first = client.post(BASE + "/smarts", json={"smarts": "C=O"}).json()
    again = client.post(BASE + "/smarts", json={"smarts": " [C]=[O] "})
    # the same job (its state is wherever the first search has got to by now)
    assert again.status_code == 202 and {**again.json(), "state": None} == {**first, "state": None}


def test_reads_answer_409_with_the_job_while_it_is_queued(client, store):
    data_dir, _ = store
    gate = threading.Event()
    manager = jobs.manager(data_dir)
    for _ in range(manager.max_workers):  # keep every worker busy: the next job stays queued
        manager._pool.submit(gate.wait, 60)
    try:
        accepted = client.post(BASE + "/smarts", json={"smarts": "c1ccccc1"}).json()
        assert accepted["state"] == "queued"
        for path in ("/molecules", "/map"):
            r = client.get(BASE + path, params={"smarts": "c1ccccc1"})
            assert r.status_code == 409
            body = r.json()
            assert body["job_id"] == accepted["job_id"] and body["search_id"] == accepted["search_id"]
            assert body["state"] == "queued" and body["progress"] == 0.0
            assert r.headers["location"] == f"/api/jobs/{accepted['job_id']}"
        assert client.get(f"/api/jobs/{accepted['job_id']}").json()["state"] == "queued"
    finally:
        gate.set()
    assert wait_done(client, accepted["job_id"])["state"] == "done"
    assert client.get(BASE + "/molecules", params={"smarts": "c1ccccc1"}).status_code == 200


@pytest.mark.parametrize(
    ("smarts", "message"), [("C(", "invalid SMARTS"), ("C" * 501, "at most 500"), ("", "at least 1")]
)
def test_a_bad_pattern_is_422(client, smarts, message):
    r = client.post(BASE + "/smarts", json={"smarts": smarts})
    assert r.status_code == 422
    assert message in r.json()["detail"][0]["msg"]
    assert r.json()["detail"][0]["loc"][-1] == "smarts"


def test_a_bad_pattern_in_a_read_is_422(client):
    assert client.get(BASE + "/molecules", params={"smarts": "C("}).status_code == 422


def test_an_unknown_dataset_is_404(client):
    r = client.post("/api/datasets/no-such-set/smarts", json={"smarts": "C=O"})
    assert r.status_code == 404 and "no-such-set" in r.json()["detail"]


def test_an_unknown_body_field_is_422(client):
    assert client.post(BASE + "/smarts", json={"smarts": "C=O", "limit": 3}).status_code == 422
