"""A run killed in the middle of the frames stage: the re-run keeps the shards that finished and
computes only the others, and its report equals an uninterrupted run's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from orientscope.pipeline.precompute import make_params, precompute
from orientscope.services.report import build_report
from orientscope.store.results import ResultStore
from orientscope.store.shards import save_sharded, shard_table_path

ROOT = Path(__file__).resolve().parents[2]
SHARD = 40  # 150 molecules: shards 0-3
KILL_AT = 2  # the process dies as it is about to write shard 2's frames


def _identity(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns


def test_a_rerun_after_a_kill_reuses_the_finished_shards(tmp_path, qm9_small):
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    sub = qm9_small.subset(np.arange(150))
    for d in (killed, clean):
        save_sharded(d, "set", sub, name="Set", source="test", shard_size=SHARD)
    script = textwrap.dedent(f"""
        import os, signal
        from orientscope.pipeline import shard_stages
        from orientscope.pipeline.precompute import make_params, precompute
        write = shard_stages.write_shard_table
        def write_or_die(result, stage, table, number, frame):
            if number == {KILL_AT}:
                os.kill(os.getpid(), signal.SIGKILL)
            return write(result, stage, table, number, frame)
        shard_stages.write_shard_table = write_or_die
        precompute({str(killed)!r}, "set", make_params(seed=4), cluster="in-process")
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=600)
    assert done.returncode == -signal.SIGKILL, done.stderr
    store = ResultStore(killed, "set", make_params(seed=4))
    assert not store.completed("frames")
    finished = {
        (which, k): _identity(shard_table_path(store.dir, "frames", which, k))
        for which in ("original", "control")
        for k in range(KILL_AT)
    }
    assert not shard_table_path(store.dir, "frames", "original", KILL_AT).exists()

    precompute(killed, "set", make_params(seed=4), cluster="in-process")
    # The shards the killed run finished are the same files, untouched; the others were written now.
    assert {key: _identity(shard_table_path(store.dir, "frames", *key)) for key in finished} == finished
    assert all(shard_table_path(store.dir, "frames", "control", k).is_file() for k in range(4))
    precompute(clean, "set", make_params(seed=4), cluster="in-process")
    a, b = build_report(killed, "set"), build_report(clean, "set")
    for report in (a, b):
        report.pop("stages")
        report.pop("dataset")
    assert a == b

    # --force computes every shard again.
    precompute(killed, "set", make_params(seed=4), stages=["frames"], force=True, cluster="in-process")
    assert all(_identity(shard_table_path(store.dir, "frames", *key)) != ident for key, ident in finished.items())
