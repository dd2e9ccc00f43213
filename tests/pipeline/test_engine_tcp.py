"""A real Dask scheduler and two `dask worker` processes on loopback, started from the project's environment.

The CLI's `precompute --cluster tcp://127.0.0.1:PORT` must give the report the
in-process run gives, and so must a run during which a worker is killed. The
workers' environment holds settings no run accepts: tasks carry what they need.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
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

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
STARTUP_S = 90


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _comparable(report: dict) -> dict:
    return {k: v for k, v in report.items() if k not in {"engine", "stages", "result_key"}}


class DaskOnLoopback:
    """`dask scheduler` plus `dask worker` processes, each in its own session so it can be killed whole."""

    def __init__(self, n_workers: int, log_dir: Path):
        self.port = _free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        self.log_dir = log_dir
        self.scheduler = self._start("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", str(self.port)])
        # A task that read a setting on a worker (rather than receiving it from the client) would fail here.
        broken = {**self.env, "ORIENTSCOPE_SETTINGS": "{not json", "ORIENTSCOPE_MAX_ATOMS_PER_MOLECULE": "none"}
        self.workers = [
            self._start(f"worker{k}", ["worker", self.address, "--nworkers", "1", "--nthreads", "1"], broken)
            for k in range(n_workers)
        ]

    def _start(self, name: str, args: list[str], env: dict | None = None) -> subprocess.Popen:
        log = open(self.log_dir / f"{name}.log", "w")  # noqa: SIM115 - closed with the process in stop()
        cmd = [str(BIN / "dask"), *args, "--no-dashboard"]
        return subprocess.Popen(cmd, stdout=log, stderr=log, env=env or self.env, cwd=ROOT, start_new_session=True)

    def wait_for_workers(self, n: int) -> None:
        from distributed import Client

        with Client(self.address, timeout=f"{STARTUP_S}s") as client:
            client.wait_for_workers(n, timeout=STARTUP_S)

    def kill(self, proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)

    def stop(self) -> None:
        for proc in [*self.workers, self.scheduler]:
            self.kill(proc)


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
