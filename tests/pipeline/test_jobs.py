import json
import os
import subprocess
import threading

import numpy as np
import pytest

from orientscope.core.errors import OrientScopeError
from orientscope.loaders.extxyz import write_extxyz
from orientscope.pipeline.export import ExportRequest
from orientscope.pipeline.export_jobs import EXPORT_KIND, submit_export
from orientscope.pipeline.jobs import DONE, FAILED, JobManager, jobs_dir, list_jobs, read_job_record
from orientscope.pipeline.smarts_jobs import SEARCH_KIND
from orientscope.pipeline.upload_jobs import AUDIT_KIND, INGEST_KIND, submit_ingest
from orientscope.store import datasets as ds
from orientscope.store.shards import save_sharded


def new_manager(data_dir):
    return JobManager(data_dir, [INGEST_KIND, AUDIT_KIND])


@pytest.fixture()
def manager(tmp_path):
    m = new_manager(tmp_path / "data")
    yield m
    m.shutdown()


def _upload(tmp_path, qm9_small, name="up.extxyz", n=40):
    path = tmp_path / name
    write_extxyz(path, qm9_small.subset(np.arange(n)))
    return path


def test_job_runs_to_done_with_progress_persisted(tmp_path, qm9_small, manager):
    job = submit_ingest(manager, _upload(tmp_path, qm9_small), "Job set")
    assert job["state"] in ("queued", "running") and job["dataset_id"] == "job-set"
    on_disk = json.loads((jobs_dir(manager.data_dir) / f"{job['id']}.json").read_text())
    assert on_disk["id"] == job["id"]
    done = manager.wait(job["id"])
    assert done["state"] == DONE and done["progress"] == 1.0 and done["stage"] == "done"
    assert "40 molecules" in done["message"] and done["result"]["n_molecules"] == 40
    assert ds.read_meta(manager.data_dir, "job-set")["n_molecules"] == 40
    assert not (jobs_dir(manager.data_dir) / job["id"]).exists()  # upload removed once stored


def test_names_reserved_by_queued_jobs_are_not_reused(tmp_path, qm9_small, manager):
    a = submit_ingest(manager, _upload(tmp_path, qm9_small, "a.extxyz"), "Same")
    b = submit_ingest(manager, _upload(tmp_path, qm9_small, "b.extxyz"), "Same")
    assert a["dataset_id"] == "same" and b["dataset_id"] == "same-2"
    assert manager.wait(a["id"])["state"] == DONE and manager.wait(b["id"])["state"] == DONE
    assert ds.list_dataset_ids(manager.data_dir) == ["same", "same-2"]


def test_failed_job_names_the_record_and_harms_nothing(tmp_path, qm9_small, manager):
    good = manager.wait(submit_ingest(manager, _upload(tmp_path, qm9_small), "Good")["id"])
    assert good["state"] == DONE
    bad = tmp_path / "bad.xyz"
    bad.write_text("2\nx\nH 0 0 0\nH 0 0 0.7\n2\ny\nH 0 0 0\n")
    job = manager.wait(submit_ingest(manager, bad, "Bad")["id"])
    assert job["state"] == FAILED and "bad.xyz: record 2 (line 5)" in job["message"]
    assert ds.list_dataset_ids(manager.data_dir) == ["good"]


def test_interrupted_jobs_are_marked_failed_on_startup_and_can_be_retried(tmp_path, qm9_small):
    data_dir = tmp_path / "data"
    first = new_manager(data_dir)
    first.shutdown()
    dead = subprocess.Popen(["true"])
    dead.wait()
    job_id = "jcrashed0000000001"
    (jobs_dir(data_dir) / job_id).mkdir(parents=True)
    _upload(tmp_path, qm9_small).rename(jobs_dir(data_dir) / job_id / "up.extxyz")
    crashed = {
        "id": job_id, "kind": "ingest", "state": "running", "progress": 0.4, "stage": "frames", "message": "",
        "dataset_id": "crashed", "name": "Crashed", "input": {"file": "up.extxyz", "format": "auto", "strict": False},
        "created": 0.0, "started": 1.0, "finished": None, "attempts": 1, "pid": dead.pid, "result": None,
    }  # fmt: skip
    (jobs_dir(data_dir) / f"{job_id}.json").write_text(json.dumps(crashed))
    manager = new_manager(data_dir)
    try:
        assert manager.recover() == [job_id]
        job = manager.get(job_id)
        assert job["state"] == FAILED and "interrupted while running" in job["message"]
        assert not ds.has_dataset(data_dir, "crashed")
        manager.retry(job_id)
        job = manager.wait(job_id)
        assert job["state"] == DONE and job["attempts"] == 2
        assert ds.read_meta(data_dir, "crashed")["n_molecules"] == 40
    finally:
        manager.shutdown()


def test_orphans_read_as_failed_without_any_write(tmp_path):
    """What a read-only server shows: the stored record stays untouched, readers see the job failed."""
    data_dir = tmp_path / "data"
    jobs_dir(data_dir).mkdir(parents=True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    records = {
        "jdead000000000001": {"state": "running", "pid": dead.pid},
        "jlive000000000001": {"state": "running", "pid": os.getppid()},  # another live process owns it
        "jmine000000000001": {"state": "queued", "pid": os.getpid()},  # ours, but no worker holds it
        "jdone000000000001": {"state": "done", "pid": dead.pid},
    }
    for job_id, rec in records.items():
        path = jobs_dir(data_dir) / f"{job_id}.json"
        path.write_text(json.dumps({"id": job_id, "created": 0.0, "finished": None, "message": "", **rec}))
    before = {p.name: p.read_bytes() for p in jobs_dir(data_dir).iterdir()}
    seen = {j["id"]: j["state"] for j in list_jobs(data_dir)}
    assert seen == {
        "jdead000000000001": FAILED,
        "jlive000000000001": "running",
        "jmine000000000001": FAILED,
        "jdone000000000001": DONE,
    }
    assert "interrupted while running" in read_job_record(jobs_dir(data_dir), "jdead000000000001")["message"]
    assert {p.name: p.read_bytes() for p in jobs_dir(data_dir).iterdir()} == before


def test_a_queued_job_that_is_cancelled_never_runs_and_leaves_no_output(tmp_path, qm9_small):
    data_dir = tmp_path / "data"
    save_sharded(data_dir, "small", qm9_small.subset(np.arange(30)), name="Small", source="test")
    manager = JobManager(data_dir, [EXPORT_KIND], export_dir=tmp_path / "exports", max_workers=1)
    gate = threading.Event()
    manager._pool.submit(gate.wait, 60)  # the one worker is busy: the export stays queued
    try:
        job = submit_export(manager, "small", ExportRequest("random"))
        assert (manager.export_dir / job["export_id"]).is_dir()
        cancelled = manager.cancel(job["id"])
        assert cancelled["state"] == FAILED and "cancelled" in cancelled["message"]
        assert not (manager.export_dir / job["export_id"]).exists()
        with pytest.raises(OrientScopeError, match="only queued or running"):
            manager.cancel(job["id"])
    finally:
        gate.set()
        manager.shutdown()
    assert manager.get(job["id"])["attempts"] == 0  # the worker skipped it


def test_one_crash_rule_for_every_kind(tmp_path):
    """Orphans of every kind, wherever their records live, are recorded failed by one recovery."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    manager = JobManager(tmp_path / "data", [INGEST_KIND, EXPORT_KIND, SEARCH_KIND], export_dir=tmp_path / "exports")
    folders = {
        "jorphan000000001": jobs_dir(manager.data_dir),
        "xorphan000000001": manager.export_dir / "jobs",
        "qorphan000000001": manager.export_dir / "smarts" / "jobs",
    }
    for job_id, folder in folders.items():
        folder.mkdir(parents=True, exist_ok=True)
        record = {"id": job_id, "state": "running", "pid": dead.pid, "created": 0.0, "finished": None, "message": ""}
        (folder / f"{job_id}.json").write_text(json.dumps(record))
    try:
        assert sorted(manager.recover()) == sorted(folders)
        for job_id, folder in folders.items():
            stored = json.loads((folder / f"{job_id}.json").read_text())
            assert stored["state"] == FAILED and "interrupted while running" in stored["message"]
        assert [j["state"] for j in manager.list()] == [FAILED] * 3
    finally:
        manager.shutdown()
