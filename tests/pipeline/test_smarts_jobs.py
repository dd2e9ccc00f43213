"""SMARTS search jobs: shard-parallel scans kept apart from the store, found again by their inputs."""

from __future__ import annotations

import shutil
from dataclasses import replace

import numpy as np
import pytest

from orientscope.pipeline.engine import Engine, parse_cluster
from orientscope.pipeline.jobs import DONE, FAILED, JobManager
from orientscope.pipeline.precompute import make_params
from orientscope.pipeline.shard_smarts import search_dataset, search_shards, sharded_result
from orientscope.pipeline.sharded_ingest import ingest_files
from orientscope.pipeline.smarts_jobs import (
    SEARCH_KIND,
    SMARTS_JOB_ABOVE_ENV,
    SearchTarget,
    lookup,
    record_search,
    result,
    search_dir,
    smarts_job_above,
    submit_search,
)
from orientscope.pipeline.synth import SynthSpec, write_synth
from orientscope.store.results import MANIFEST, ResultStore
from orientscope.store.shards import shard_table_paths

N = 1200


@pytest.fixture(scope="module")
def sharded(tmp_path_factory, qm9_small):
    """(data dir, dataset id, result dir) of a set of N molecules in shards of 500."""
    root = tmp_path_factory.mktemp("smarts")
    write_synth(root / "npz", SynthSpec(n=N, bias="qm9", seed=3, shard_size=500), source=qm9_small)
    meta = ingest_files(root / "data", [root / "npz"], "set", cluster="in-process", shard_size=500)
    return root / "data", meta["id"], ResultStore(root / "data", meta["id"], make_params()).dir


def searcher(tmp_path) -> JobManager:
    return JobManager(tmp_path / "data", [SEARCH_KIND], export_dir=tmp_path / "exports")


def target_of(data_dir, dataset_id, result_dir) -> SearchTarget:
    stamp = (result_dir / MANIFEST).stat().st_mtime_ns
    return SearchTarget(data_dir, dataset_id, "Set", result_dir.name, result_dir, stamp, N)


@pytest.mark.parametrize("smarts", ["C=O", "[#7]~[#6]"])
def test_a_set_without_per_shard_chemistry_is_searched_in_its_ingested_shards(tmp_path, sharded, smarts):
    data_dir, dataset_id, result_dir = sharded
    copy = tmp_path / "data"
    shutil.copytree(data_dir, copy)
    copied = copy / result_dir.relative_to(data_dir)
    for path in shard_table_paths(copied, "chemistry", "molecules"):
        path.unlink()
    assert sharded_result(result_dir) and not sharded_result(copied)
    seen = []
    with Engine(parse_cluster("in-process")) as engine:
        expected = search_shards(engine, result_dir, smarts)
        found = search_dataset(engine, copy, dataset_id, copied, smarts, progress=lambda d, t: seen.append((d, t)))
    np.testing.assert_array_equal(found.indices, expected.indices)
    assert found.complete and found.n_scanned == N and len(found.indices) > 50
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]


def test_a_job_keeps_its_mask_outside_the_store_and_is_found_again_until_the_result_changes(tmp_path, sharded):
    data_dir, dataset_id, result_dir = sharded
    searches = searcher(tmp_path)
    target = target_of(data_dir, dataset_id, result_dir)
    try:
        job = submit_search(searches, target, "C=O")
        assert job["id"][1:] == job["search_id"][1:]
        done = searches.wait(job["id"])
        assert done["state"] == DONE and done["shards"] == [3, 3] and done["progress"] == 1.0
        with Engine(parse_cluster("in-process")) as engine:
            expected = search_shards(engine, result_dir, "C=O").indices
        kept = result(searches, done)
        assert kept.complete and kept.n_scanned == N
        np.testing.assert_array_equal(np.flatnonzero(kept.mask), expected)
        assert sorted(p.name for p in search_dir(searches.export_dir).iterdir()) == ["jobs", f"{job['search_id']}.npz"]
        assert submit_search(searches, target, "C=O")["state"] == DONE  # the same search is not run again
        assert lookup(searches, replace(target, stamp=target.stamp + 1), "C=O") is None  # a recomputed result
        assert lookup(searches, target, "C=N") is None
    finally:
        searches.shutdown()


def test_a_failed_search_says_why_and_runs_again_when_submitted(tmp_path, sharded):
    data_dir, dataset_id, result_dir = sharded
    searches = searcher(tmp_path)
    broken = replace(target_of(data_dir, dataset_id, result_dir), dataset_id="gone", result_dir=tmp_path / "none")
    try:
        job = searches.wait(submit_search(searches, broken, "C=O")["id"])
        assert job["state"] == FAILED and "gone" in job["message"]
        again = submit_search(searches, broken, "C=O")
        assert again["id"] == job["id"] and again["state"] == "queued"
        assert searches.wait(again["id"])["attempts"] == 1
    finally:
        searches.shutdown()


def test_a_search_while_the_request_waited_is_kept_as_a_finished_job(tmp_path):
    searches = searcher(tmp_path)
    target = SearchTarget(tmp_path, "small", "Small", "key", tmp_path, 7, 10)
    mask = np.zeros(10, bool)
    mask[[1, 4, 9]] = True
    job = record_search(searches, target, "C=O", mask, False, 6)
    assert job["state"] == DONE and job["result"]["n_matches"] == 3 and job["result"]["complete"] is False
    assert lookup(searches, target, "C=O")["id"] == job["id"]
    kept = result(searches, job)
    np.testing.assert_array_equal(kept.mask, mask)
    assert (kept.complete, kept.n_scanned) == (False, 6)
    searches.shutdown()


def test_the_job_threshold_is_a_setting(monkeypatch):
    monkeypatch.delenv(SMARTS_JOB_ABOVE_ENV, raising=False)
    assert smarts_job_above() == 250_000
    monkeypatch.setenv(SMARTS_JOB_ABOVE_ENV, "1000")
    assert smarts_job_above() == 1000
    monkeypatch.setenv(SMARTS_JOB_ABOVE_ENV, "lots")
    with pytest.raises(ValueError, match=SMARTS_JOB_ABOVE_ENV):
        smarts_job_above()
