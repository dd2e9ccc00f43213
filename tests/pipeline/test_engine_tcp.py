"""A real Dask scheduler and two `dask worker` processes on loopback, started from the project's environment.

The CLI's `precompute --cluster tcp://127.0.0.1:PORT` must give the report the
in-process run gives, and so must a run during which a worker is killed. The
workers' environment holds settings no run accepts: tasks carry what they need.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orientscope.pipeline.precompute import make_params, precompute
from orientscope.pipeline.sharded_ingest import ingest_files
from orientscope.pipeline.synth import SynthSpec, write_synth
from orientscope.services.report import build_report
from orientscope.store import datasets as ds
from tests.dask_cluster import DaskOnLoopback

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _comparable(report: dict) -> dict:
    return {k: v for k, v in report.items() if k not in {"engine", "stages", "result_key"}}


@pytest.fixture
def dask_cluster(tmp_path):
    cluster = DaskOnLoopback(2, tmp_path)
    try:
        cluster.wait_for_workers(2)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def small_set(tmp_path_factory, qm9_small):
    """A sharded synth set of 2,000 molecules in shards of 100, computed in process (seed 0)."""
    synth = tmp_path_factory.mktemp("synth")
    write_synth(synth, SynthSpec(n=2000, bias="qm9", seed=5, shard_size=500), source=qm9_small)
    data = tmp_path_factory.mktemp("data")
    meta = ingest_files(data, [synth], "small", cluster="in-process", shard_size=100)
    return data, meta["id"]


def _copy(small_set, to: Path) -> Path:
    data, dataset_id = small_set
    shutil.copytree(ds.dataset_dir(data, dataset_id), ds.dataset_dir(to, dataset_id))
    return to


def test_precompute_on_a_dask_scheduler_gives_the_in_process_report(dask_cluster, small_set, tmp_path):
    data, dataset_id = small_set
    remote = _copy(small_set, tmp_path / "remote")
    cmd = [str(BIN / "orientscope"), "precompute", dataset_id, "--seed", "7", "--data-dir", str(remote)]
    proc = subprocess.run(
        [*cmd, "--cluster", dask_cluster.address], capture_output=True, text=True, timeout=600, env=dask_cluster.env
    )
    assert proc.returncode == 0, proc.stderr
    params = make_params(seed=7)
    precompute(data, dataset_id, params, cluster="in-process")
    report = build_report(remote, dataset_id, params)
    assert report["engine"]["statistics"] == {"where": dask_cluster.address, "workers": 2}
    assert _comparable(report) == _comparable(build_report(data, dataset_id, params))
    shown = subprocess.run(
        [str(BIN / "orientscope"), "report", dataset_id, "--seed", "7", "--json", "--data-dir", str(remote)],
        capture_output=True, text=True, timeout=300, env=dask_cluster.env,
    )  # fmt: skip
    assert json.loads(shown.stdout)["kl"] == report["kl"]


def test_a_worker_killed_mid_stage_still_gives_the_same_report(dask_cluster, small_set, tmp_path):
    data, dataset_id = small_set
    remote = _copy(small_set, tmp_path / "remote")
    params = make_params(seed=11)
    killed_at: list[float] = []

    def progress(fraction: float, message: str, stage: str = "") -> None:
        # Kill one worker (SIGKILL, no goodbye) once the frames stage is under way but not finished.
        if stage == "frames" and "shards" in message and not killed_at and 0 < fraction < 0.5:
            killed_at.append(fraction)
            dask_cluster.kill(dask_cluster.workers[0])

    t0 = time.perf_counter()
    precompute(remote, dataset_id, params, cluster=dask_cluster.address, progress=progress)
    assert killed_at, "the worker was never killed: the stage finished before any progress"
    assert time.perf_counter() - t0 < 600
    precompute(data, dataset_id, params, cluster="in-process")
    report = build_report(remote, dataset_id, params)
    assert report["engine"]["statistics"]["workers"] == 1  # the survivor did the rest
    assert _comparable(report) == _comparable(build_report(data, dataset_id, params))
