"""SIGKILL `orientscope precompute` at random moments: the store keeps only complete
stages, and the next run finishes the work with the same results as a clean run."""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from orientscope.store.results import list_result_keys
from orientscope.store.shards import save_sharded, shard_array_paths, shard_table_paths
from tests.kill_timing import sigkill_after

EXE = str(Path(sys.executable).parent / "orientscope")


def _check_store(data_dir: Path) -> list[str]:
    """Every stage the manifest names must have readable, complete files."""
    keys = list_result_keys(data_dir, "qm9")
    done = []
    for key in keys:
        folder = data_dir / "datasets" / "qm9" / "results" / key
        manifest = json.loads((folder / "manifest.json").read_text())
        for stage, info in manifest["stages"].items():
            json.loads((folder / f"{stage}.json").read_text())
            for table, rows in info["rows"].items():
                assert _stored_rows(folder, stage, table) == rows
            done.append(stage)
    return done


def _stored_rows(folder: Path, stage: str, table: str) -> int:
    """Rows of one stage table: one file, or (once precompute has migrated the set to shards) one per shard."""
    single = folder / f"{stage}.{table}.parquet"
    if single.exists():
        return pq.read_table(single).num_rows
    tables, arrays = shard_table_paths(folder, stage, table), shard_array_paths(folder, stage, table)
    assert tables or arrays, f"{stage}.{table}: no stored files"
    return sum(pq.read_table(p).num_rows for p in tables) + sum(len(np.load(p, mmap_mode="r")) for p in arrays)


def _report(data_dir: Path) -> dict:
    out = subprocess.run(
        [EXE, "report", "qm9", "--json", "--data-dir", str(data_dir)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def test_sigkill_at_random_moments_leaves_only_complete_results(tmp_path, qm9_small):
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    sub = qm9_small.subset(np.arange(250))
    for d in (killed, clean):
        save_sharded(d, "qm9", sub, name="QM9", source="test")
    rng = random.Random(1234)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    for _ in range(6):
        proc = subprocess.Popen([EXE, "precompute", "qm9", "--data-dir", str(killed)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        sigkill_after(proc, rng.uniform(0.5, 4.0))
        _check_store(killed)
    # The next run completes the work; results equal an uninterrupted run's.
    subprocess.run([EXE, "precompute", "qm9", "--data-dir", str(killed)], check=True, capture_output=True)
    subprocess.run([EXE, "precompute", "qm9", "--data-dir", str(clean)], check=True, capture_output=True)
    assert sorted(_check_store(killed)) == sorted(_check_store(clean))
    a, b = _report(killed), _report(clean)
    for report in (a, b):
        report.pop("stages")
    assert a == b
