"""One job manager over real HTTP: one queue bound for every kind of job, and cancelling a job."""

from __future__ import annotations

import json
import os
import shutil
import time

import httpx
import pytest

from orientscope.loaders.extxyz import write_extxyz
from orientscope.loaders.qm9 import load_qm9
from tests.api_server import AUTH, TOKEN, UPLOAD_LIMIT_MB, start_ingest_server
from tests.harness import wait_job


@pytest.fixture()
def server(qm9_store, tmp_path, monkeypatch):
    """A writable server (token required) on a copy of the QM9 store, taking at most 1 queued job."""
    data_dir = tmp_path / "data"
    shutil.copytree(qm9_store, data_dir)
    monkeypatch.setenv("ORIENTSCOPE_MAX_QUEUED_JOBS", "1")
    proc, url = start_ingest_server(data_dir, read_only=False, token=TOKEN)
    yield url, data_dir
    proc.terminate()
    proc.wait(timeout=20)


def _another_process_job(data_dir, job_id="jother0000000001"):
    """A job that a live process other than the server runs (this test's process): it counts, untouched."""
    record = {
        "id": job_id, "kind": "ingest", "state": "running", "progress": 0.5, "stage": "frames", "message": "",
        "dataset_id": "other", "name": "Other", "input": {"file": "x.xyz", "format": "auto", "strict": False},
        "created": time.time(), "started": time.time(), "finished": None, "attempts": 1, "pid": os.getpid(),
        "result": None,
    }  # fmt: skip
    path = data_dir / "jobs" / f"{job_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    return path


def test_a_full_queue_answers_429_with_retry_after_for_every_kind_before_reading_an_upload(server):
    url, data_dir = server
    blocker = _another_process_job(data_dir)
    before = blocker.read_bytes()
    # Larger than the upload limit: read, it would be 413; the queue is checked first.
    big = b"x" * ((UPLOAD_LIMIT_MB + 1) << 20)
    upload = httpx.post(f"{url}/api/datasets", files={"file": ("a.xyz", big)}, data={"name": "A"}, headers=AUTH)
    assert upload.status_code == 429, upload.text
    assert int(upload.headers["retry-after"]) > 0 and "ORIENTSCOPE_MAX_QUEUED_JOBS" in upload.json()["detail"]
    export = httpx.post(f"{url}/api/datasets/qm9/exports", json={"mode": "random"})
    assert export.status_code == 429 and int(export.headers["retry-after"]) > 0
    audit = httpx.post(
        f"{url}/api/datasets/qm9/model-audits", files={"file": ("p.csv", b"id,y\n")}, data={"name": "p"}, headers=AUTH
    )
    assert audit.status_code == 429
    # Nothing was spooled or queued, and the earlier job is as it was.
    assert not any((data_dir / "jobs" / ".incoming").glob("*"))
    assert [j["id"] for j in httpx.get(f"{url}/api/jobs").json()] == ["jother0000000001"]
    assert blocker.read_bytes() == before
    blocker.unlink()  # room again
    export = httpx.post(f"{url}/api/datasets/qm9/exports", json={"mode": "random"})
    assert export.status_code == 202


def test_a_cancelled_upload_leaves_no_dataset_upload_or_staging_folder(server, tmp_path):
    url, data_dir = server
    path = tmp_path / "big.extxyz"
    write_extxyz(path, load_qm9(limit=1000))  # under the 2 MB limit; seconds of work, so the cancel comes first
    r = httpx.post(
        f"{url}/api/datasets", files={"file": ("big.extxyz", path.read_bytes())}, data={"name": "Big"}, headers=AUTH
    )
    assert r.status_code == 202
    job_id = r.json()["job_id"]
    assert httpx.delete(f"{url}/api/jobs/{job_id}").status_code == 401  # stopping a store write needs the token
    cancelled = httpx.delete(f"{url}/api/jobs/{job_id}", headers=AUTH)
    assert cancelled.status_code == 200, cancelled.text
    job = wait_job(url, f"/api/jobs/{job_id}", timeout_s=60, poll_s=0.1)
    assert job["state"] == "failed" and "cancelled" in job["message"]
    assert "big" not in [d["id"] for d in httpx.get(f"{url}/api/datasets").json()]
    assert not (data_dir / "jobs" / job_id).exists()
    assert not any((data_dir / "jobs" / ".staging").glob("*"))
    again = httpx.delete(f"{url}/api/jobs/{job_id}", headers=AUTH)
    assert again.status_code == 409 and "only queued or running" in again.json()["detail"]
    assert httpx.delete(f"{url}/api/jobs/jnosuchjob0000001", headers=AUTH).status_code == 404
