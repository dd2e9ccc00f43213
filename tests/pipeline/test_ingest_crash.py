"""SIGKILL `orientscope ingest` at random moments, and a server in the middle of an ingest job.

After every kill the store holds only complete datasets (every stage its
manifest names is readable with the row counts it records); the next ingest
finishes; a job interrupted by the server's death shows as failed once the
server is back, and a retry completes it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pyarrow.parquet as pq
import pytest

from orientscope.loaders.extxyz import write_extxyz
from orientscope.services.report import build_report
from orientscope.store.datasets import list_dataset_ids, load_dataset, read_meta
from orientscope.store.shards import SHARD_SIZE_ENV, shard_array_path, shard_array_paths, shard_table_paths
from tests.api_server import start_api_server
from tests.harness import wait_job
from tests.kill_timing import sigkill_after

EXE = str(Path(sys.executable).parent / "orientscope")
N_MOLECULES = 200
# A process that SIGKILLs itself as it is about to write the fingerprints of chemistry shard KILL_AT.
KILL_AT = 3
DIES_IN_CHEMISTRY = f"""
import os, signal
from orientscope.pipeline import shard_chemistry
write = shard_chemistry.write_shard_array
def write_or_die(result, stage, name, number, array):
    if name == "fingerprints" and number == {KILL_AT}:
        os.kill(os.getpid(), signal.SIGKILL)
    return write(result, stage, name, number, array)
shard_chemistry.write_shard_array = write_or_die
"""
DYING_CLI = DIES_IN_CHEMISTRY + "from orientscope.cli import main\nmain()\n"


def stored_rows(result: Path, stage: str, table: str) -> int:
    """Rows of a result table: one file, or the per-shard tables or arrays of a sharded result."""
    whole = result / f"{stage}.{table}.parquet"
    if whole.is_file():
        return pq.read_table(whole).num_rows
    parts = shard_table_paths(result, stage, table)
    if parts:
        return sum(pq.read_metadata(p).num_rows for p in parts)
    return sum(len(np.load(p, mmap_mode="r")) for p in shard_array_paths(result, stage, table))


def check_complete(data_dir: Path) -> dict[str, list[str]]:
    """Every stored dataset is whole: its molecules load and every stage in its manifests is readable."""
    out = {}
    for dataset_id in list_dataset_ids(data_dir):
        folder = data_dir / "datasets" / dataset_id
        meta = read_meta(data_dir, dataset_id)
        assert load_dataset(data_dir, dataset_id).n_molecules == meta["n_molecules"]
        assert meta.get("active_result"), f"{dataset_id} was published without a result"
        stages = []
        for manifest in (folder / "results").glob("*/manifest.json"):
            for stage, info in json.loads(manifest.read_text())["stages"].items():
                json.loads((manifest.parent / f"{stage}.json").read_text())
                for table, rows in info["rows"].items():
                    assert stored_rows(manifest.parent, stage, table) == rows
                stages.append(stage)
        assert {"frames", "statistics"} <= set(stages), (dataset_id, stages)
        assert not [p for p in folder.rglob("*.tmp")], f"temporary files inside {dataset_id}"
        out[dataset_id] = sorted(stages)
    return out


def test_sigkill_ingest_at_random_moments_leaves_only_complete_datasets(tmp_path, qm9_small):
    data_dir, upload = tmp_path / "data", tmp_path / "in.extxyz"
    write_extxyz(upload, qm9_small.subset(np.arange(N_MOLECULES)))
    cmd = [EXE, "ingest", str(upload), "--name", "Crash", "--data-dir", str(data_dir)]
    rng = random.Random(2024)
    for _ in range(6):
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sigkill_after(proc, rng.uniform(0.3, 4.0))  # anywhere from start-up to the last stage
        for stages in check_complete(data_dir).values():
            assert len(stages) >= 4  # a dataset only appears with every stage done
    before = set(list_dataset_ids(data_dir))
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (new,) = set(list_dataset_ids(data_dir)) - before
    assert f"ingested {new} (Crash): {N_MOLECULES} molecules" in done.stdout
    assert check_complete(data_dir)[new] == check_complete(data_dir)[sorted(before | {new})[0]]


def _serve(data_dir: Path, prelude: str = "", env: dict | None = None) -> tuple[subprocess.Popen, str]:
    return start_api_server(data_dir, env=env, prelude=prelude)


def _wait_job(url: str, job_id: str, states: tuple[str, ...], timeout_s: float = 120) -> dict:
    return wait_job(url, f"/api/jobs/{job_id}", until=states, timeout_s=timeout_s)


def test_job_interrupted_by_a_server_crash_is_failed_on_restart_and_retried(tmp_path, qm9_small):
    data_dir, upload = tmp_path / "data", tmp_path / "in.extxyz"
    write_extxyz(upload, qm9_small.subset(np.arange(N_MOLECULES)))
    proc, url = _serve(data_dir)
    try:
        r = httpx.post(
            f"{url}/api/datasets", files={"file": ("in.extxyz", upload.read_bytes())}, data={"name": "Lab"}, timeout=60
        )
        assert r.status_code == 202, r.text
        job_id, dataset_id = r.json()["job_id"], r.json()["dataset_id"]
        running = _wait_job(url, job_id, ("running", "done", "failed"))
        assert running["state"] == "running", running
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert dataset_id not in list_dataset_ids(data_dir)
    proc, url = _serve(data_dir)
    try:
        health = httpx.get(f"{url}/api/health", timeout=10).json()  # the first request after the restart
        assert health["jobs"]["failed"] == 1 and health["jobs"]["running"] == 0, health
        job = httpx.get(f"{url}/api/jobs/{job_id}", timeout=10).json()
        assert job["state"] == "failed" and "interrupted while running" in job["message"], job
        assert httpx.post(f"{url}/api/jobs/{job_id}/retry", timeout=10).status_code == 202
        job = _wait_job(url, job_id, ("done", "failed"))
        assert job["state"] == "done" and job["attempts"] == 2, job
        assert httpx.get(f"{url}/api/datasets/{dataset_id}", timeout=10).json()["status"] == "ready"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert check_complete(data_dir)[dataset_id]


def _identity(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns


def _upload(url: str, upload: Path, name: str) -> dict:
    r = httpx.post(
        f"{url}/api/datasets", files={"file": ("in.extxyz", upload.read_bytes())}, data={"name": name}, timeout=60
    )
    assert r.status_code == 202, r.text
    return r.json()


def _finished_by_the_killed_run(data_dir: Path, dataset_id: str) -> tuple[Path, dict]:
    """The staged result folder of a run killed by DIES_IN_CHEMISTRY, and the identities of the files it finished
    (every frame table, the fingerprints of the chemistry shards before KILL_AT), by path in the result."""
    (staged,) = (data_dir / "jobs" / ".staging").glob(f"{dataset_id}-*")
    (result,) = (staged / "datasets" / dataset_id / "results").iterdir()
    finished = {p.relative_to(result): _identity(p) for p in sorted((result / "frames").glob("*.parquet"))}
    fingerprints = [shard_array_path(result, "chemistry", "fingerprints", k) for k in range(KILL_AT)]
    finished.update({p.relative_to(result): _identity(p) for p in fingerprints})
    assert len(finished) == 2 * 8 + KILL_AT
    assert not shard_array_path(result, "chemistry", "fingerprints", KILL_AT).exists()
    return result, finished


# A process that SIGKILLs itself as it is about to rename a finished temporary into place: the temporary stays.
DIES_BEFORE_RENAME = """
import os, signal
replace = os.replace
def replace_or_die(src, dst):
    if os.path.basename(dst) == {target!r}:
        os.kill(os.getpid(), signal.SIGKILL)
    return replace(src, dst)
os.replace = replace_or_die
from orientscope.cli import main
main()
"""


@pytest.mark.parametrize("target", ["chemistry.groups_formula.parquet", "control"])
def test_a_resumed_ingest_publishes_no_temporary_its_killed_attempt_left(tmp_path, qm9_small, target):
    """Killed between writing a table (or the map's folder) and renaming it into place, the run leaves the
    temporary in its staging folder; the next run takes that folder over and publishes none of it."""
    data_dir, upload = tmp_path / "data", tmp_path / "in.extxyz"
    write_extxyz(upload, qm9_small.subset(np.arange(N_MOLECULES)))
    args = ["ingest", str(upload), "--name", "Crash", "--data-dir", str(data_dir)]
    code = DIES_BEFORE_RENAME.format(target=target)
    killed = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    (staged,) = (data_dir / "jobs" / ".staging").glob("crash-*")
    left = [p.name for p in staged.rglob(".*") if p.name.endswith(".tmp") or p.name.startswith(f".{target}-")]
    assert left, "the killed run left no temporary: the test no longer kills where it means to"
    done = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert check_complete(data_dir)["crash"]
    hidden = [p for p in (data_dir / "datasets" / "crash").rglob(".*") if not p.name == ".lock"]
    assert not hidden, hidden


def test_the_same_cli_ingest_after_a_kill_reuses_the_finished_shards(tmp_path, qm9_small):
    data_dir, upload = tmp_path / "data", tmp_path / "in.extxyz"
    write_extxyz(upload, qm9_small.subset(np.arange(N_MOLECULES)))
    args = ["ingest", str(upload), "--name", "Crash", "--data-dir", str(data_dir)]
    env = {**os.environ, SHARD_SIZE_ENV: "25"}  # 8 shards
    killed = subprocess.run([sys.executable, "-c", DYING_CLI, *args], env=env, capture_output=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    result, finished = _finished_by_the_killed_run(data_dir, "crash")
    done = subprocess.run([EXE, *args], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ingested crash (Crash)" in done.stdout
    published = data_dir / "datasets" / "crash" / "results" / result.name
    assert {path: _identity(published / path) for path in finished} == finished
    manifest = json.loads((published / "manifest.json").read_text())
    # Every shard's graph chunks were done before the kill (they all come before the first shard's tables).
    assert manifest["stages"]["chemistry"]["reused"] == {"shards": 8, "reused": 8}
    assert not list((data_dir / "jobs" / ".staging").iterdir())


@pytest.mark.parametrize("again", ["retry", "resubmit"])
def test_an_ingest_run_again_reuses_the_shards_its_killed_attempt_finished(tmp_path, qm9_small, again):
    """Retried through the job manager, or the same upload submitted again, after the server was killed."""
    data_dir, upload = tmp_path / "data", tmp_path / "in.extxyz"
    write_extxyz(upload, qm9_small.subset(np.arange(N_MOLECULES)))
    env = {**os.environ, SHARD_SIZE_ENV: "25"}  # 8 shards
    proc, url = _serve(data_dir, DIES_IN_CHEMISTRY, env)
    try:
        submitted = _upload(url, upload, "Lab")
        job_id, dataset_id = submitted["job_id"], submitted["dataset_id"]
        assert proc.wait(timeout=300) == -signal.SIGKILL  # the server died in the chemistry stage
    finally:
        proc.kill()
        proc.wait()
    result, finished = _finished_by_the_killed_run(data_dir, dataset_id)

    proc, url = _serve(data_dir, env=env)
    try:
        job = httpx.get(f"{url}/api/jobs/{job_id}", timeout=10).json()
        assert job["state"] == "failed" and "interrupted while running" in job["message"], job
        if again == "retry":
            assert httpx.post(f"{url}/api/jobs/{job_id}/retry", timeout=10).status_code == 202
        else:
            job_id = _upload(url, upload, "Lab")["job_id"]
        job = _wait_job(url, job_id, ("done", "failed"), timeout_s=300)
        assert job["state"] == "done" and job["dataset_id"] == dataset_id, job
        assert (
            "from an interrupted attempt: frames and statistics kept whole, chemistry reused 8 of 8 shards"
            in job["message"]
        ), job
        clean = _upload(url, upload, "Lab")  # the same name: the reports differ only in the dataset id
        assert _wait_job(url, clean["job_id"], ("done", "failed"), timeout_s=300)["state"] == "done"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    # The files the killed attempt finished were moved into the store as they were, not written again.
    published = data_dir / "datasets" / dataset_id / "results" / result.name
    assert {path: _identity(published / path) for path in finished} == finished
    assert not list((data_dir / "jobs" / ".staging").iterdir())
    retried, uninterrupted = build_report(data_dir, dataset_id), build_report(data_dir, clean["dataset_id"])
    for report in (retried, uninterrupted):
        report.pop("stages")
        report.pop("dataset")
    assert retried.keys() == uninterrupted.keys()
    for field in retried:
        assert retried[field] == uninterrupted[field], field
