"""Export jobs: files in the exports area only, progress recorded, failures and expiry reported clearly."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

from orientscope.core.errors import Busy, NotFoundError, NotReady, Unavailable
from orientscope.pipeline import export_jobs
from orientscope.pipeline.export import ExportRequest
from orientscope.pipeline.export_jobs import EXPORT_KIND, export_files, submit_export
from orientscope.pipeline.jobs import DONE, FAILED, MAX_QUEUED_ENV, QUEUED, JobManager
from orientscope.store.shards import save_sharded


@pytest.fixture()
def exports(tmp_path, qm9_small):
    data_dir = tmp_path / "data"
    save_sharded(data_dir, "small", qm9_small.subset(np.arange(30)), name="Small", source="test")
    manager = JobManager(data_dir, [EXPORT_KIND], export_dir=tmp_path / "exports")
    yield manager
    manager.shutdown()


def test_an_export_job_writes_its_files_and_a_record_and_nothing_in_the_store(exports):
    store_before = sorted(p.name for p in (exports.data_dir / "datasets" / "small").rglob("*"))
    job = submit_export(exports, "small", ExportRequest("random", "extxyz", seed=3))
    assert job["state"] == QUEUED and job["id"][1:] == job["export_id"][1:]
    done = exports.wait(job["id"])
    assert done["state"] == DONE and done["progress"] == 1.0 and done["result"]["n_molecules"] == 30
    assert done["input"] == {"mode": "random", "format": "extxyz", "seed": 3, "copies": None, "purpose": "augment",
                             "ids": None, "limit": None}  # fmt: skip
    assert done["result"]["purpose"] == "augment" and done["result"]["rotation_rule_version"] == 2
    data, rotations = export_files(exports.export_dir, "small", job["export_id"])
    assert data.name == "small-random.extxyz" and data.parent == exports.export_dir / job["export_id"]
    assert len(rotations.read_text().splitlines()) == 31
    assert sorted(p.name for p in (exports.data_dir / "datasets" / "small").rglob("*")) == store_before
    assert not list(data.parent.glob(".*.tmp"))  # atomic writes leave no temporary files


def test_a_failed_export_says_why_when_its_files_are_asked_for(exports):
    for atoms in (exports.data_dir / "datasets" / "small").rglob("atoms.parquet"):
        atoms.unlink()  # the store is damaged
    job = exports.wait(submit_export(exports, "small", ExportRequest("canonical"))["id"])
    assert job["state"] == FAILED and job["message"]
    with pytest.raises(NotReady, match=f"follow GET /api/jobs/{job['id']}"):
        export_files(exports.export_dir, "small", job["export_id"])


def test_unknown_dataset_and_export_ids_are_not_found(exports):
    with pytest.raises(NotFoundError, match="nope"):
        submit_export(exports, "nope", ExportRequest("random"))
    for export_id in ("e123", "x123", "../jobs"):
        with pytest.raises(NotFoundError, match="unknown export"):
            export_files(exports.export_dir, "small", export_id)


def test_bad_requests_name_the_allowed_values():
    with pytest.raises(ValueError, match="unknown export mode 'up'"):
        ExportRequest("up")
    with pytest.raises(ValueError, match="unknown export format 'pdb'"):
        ExportRequest("random", "pdb")
    with pytest.raises(ValueError, match="seed -1"):
        ExportRequest("random", seed=-1)


def test_finished_exports_expire_when_a_later_one_is_submitted(exports):
    old = exports.wait(submit_export(exports, "small", ExportRequest("random"))["id"])
    record = exports.kind_dir(EXPORT_KIND) / f"{old['id']}.json"
    record.write_text(json.dumps({**old, "finished": time.time() - export_jobs.EXPORT_TTL_S - 1}))
    new = exports.wait(submit_export(exports, "small", ExportRequest("random"))["id"])
    assert new["state"] == DONE
    assert not record.exists() and not (exports.export_dir / old["export_id"]).exists()
    with pytest.raises(NotFoundError):
        exports.get(old["id"])


def test_exports_past_the_queue_bound_are_refused(exports, monkeypatch):
    monkeypatch.setenv(MAX_QUEUED_ENV, "1")
    exports.lock.acquire()  # hold the worker at its start, so the first export stays queued
    try:
        first = submit_export(exports, "small", ExportRequest("random"))
        with pytest.raises(Busy, match="already queued or running") as refused:
            submit_export(exports, "small", ExportRequest("random"))
        assert refused.value.retry_after > 0
        assert "queued or running: 1, the limit" in str(refused.value) and "1 jobs" not in str(refused.value)
    finally:
        exports.lock.release()
    assert exports.wait(first["id"])["state"] == DONE  # the earlier export is not lost


def test_two_workers_submitting_at_once_keep_the_bound(exports, monkeypatch):
    """`serve --workers 2` runs one manager per process on one folder. Worker A has counted a free place and
    not yet written its job; worker B then counted the same place (both queued past a bound of 1)."""
    monkeypatch.setenv(MAX_QUEUED_ENV, "1")
    a, b = (JobManager(exports.data_dir, [EXPORT_KIND], export_dir=exports.export_dir, max_workers=1) for _ in "ab")
    gate, a_counted, a_go, b_counted_under_a = (threading.Event() for _ in range(4))
    for manager in (a, b):
        manager._pool.submit(gate.wait, 60)  # their one worker is busy: submitted exports stay queued
    write = a.write

    def a_write(job):  # A pauses between its count and its record: the window two processes raced in
        a_counted.set()
        assert a_go.wait(60)
        write(job)

    count, b_counts = b.check_room, []

    def b_count():  # submit_export counts once early, then submit counts again with the record: that one races
        count()
        b_counts.append(1)
        if len(b_counts) == 2 and not a_go.is_set():
            b_counted_under_a.set()

    a.write, b.check_room = a_write, b_count
    outcome = {}

    def run(name, manager):
        try:
            outcome[name] = submit_export(manager, "small", ExportRequest("random"))["state"]
        except Busy:
            outcome[name] = "busy"

    threads = [threading.Thread(target=run, args=("a", a))]
    threads[0].start()
    assert a_counted.wait(60)
    threads.append(threading.Thread(target=run, args=("b", b)))
    threads[1].start()
    b_counted_under_a.wait(3)  # B's count inside submit cannot happen while A holds the bound: it waits for A
    a_go.set()
    for thread in threads:
        thread.join(60)
    gate.set()
    a.shutdown(), b.shutdown()
    assert sorted(outcome.values()) == ["busy", QUEUED], outcome


def test_an_unwritable_export_folder_names_the_setting(tmp_path, exports):
    (tmp_path / "a-file").write_text("")
    blocked = JobManager(
        exports.data_dir, [EXPORT_KIND], export_dir=tmp_path / "a-file" / "exports"
    )  # no folder can be made there
    with pytest.raises(Unavailable, match="ORIENTSCOPE_EXPORT_DIR"):
        submit_export(blocked, "small", ExportRequest("random"))
    blocked.shutdown()
