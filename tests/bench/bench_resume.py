"""Benchmark of a re-run after a crash (section ``resume`` of BENCHMARKS.md).

On an evenly spread QM9 subset cut into 8 shards, in process: an uninterrupted
run of every stage; then runs SIGKILLed halfway through a stage (as they are
about to write the table of shard 4) and run again. The re-run takes over the
shards that finished; its report equals the uninterrupted one's, which the
script checks. Also: the markers' share of an uninterrupted run (their count,
bytes, and the time spent writing them). Data dir: $ORIENTSCOPE_BENCH_DIR or
/tmp/os-bench-resume (removed and written afresh).
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

from orientscope.loaders.qm9 import load_qm9
from orientscope.pipeline import resume
from orientscope.pipeline.precompute import make_params, precompute
from orientscope.services.report import build_report
from orientscope.store.results import ResultStore
from orientscope.store.shards import save_sharded
from tests.bench.common import write_section
from tests.kill_timing import precompute_killed_at_shard

DATA_DIR = Path(os.environ.get("ORIENTSCOPE_BENCH_DIR", "/tmp/os-bench-resume"))
N_MOLECULES = 1200
SHARD = 150  # 8 shards
KILL_AT = 4
PARAMS = make_params(seed=0)
# stage -> (module whose write_shard_table dies at shard KILL_AT, the table)
KILLS = {"frames": ("shard_stages", "original"), "chemistry": ("shard_chemistry", "molecules"),
         "models": ("shard_models", "scores")}  # fmt: skip


def _report(data_dir: Path) -> dict:
    report = build_report(data_dir, "set", PARAMS)
    return {k: v for k, v in report.items() if k not in ("stages", "dataset")}


def _killed(data_dir: Path, module: str, table: str) -> float:
    """Seconds until the child run died."""
    t0 = time.perf_counter()
    done = precompute_killed_at_shard(data_dir, module, table, KILL_AT, seed=0, timeout_s=1800)
    assert done.returncode == -signal.SIGKILL, done.returncode
    return time.perf_counter() - t0


def _marker_costs(data_dir: Path) -> tuple[int, int, float]:
    """(markers, bytes, seconds writing them) of an uninterrupted run, timed around ``run_step``'s write."""
    sizes, seconds = [], [0.0]
    write = resume.atomic_write_bytes

    def timed(path, data, durable=True):
        t0 = time.perf_counter()
        write(path, data, durable)
        seconds[0] += time.perf_counter() - t0
        sizes.append(len(data))

    resume.atomic_write_bytes = timed
    try:
        precompute(data_dir, "set", PARAMS, force=True, cluster="in-process")
    finally:
        resume.atomic_write_bytes = write
    return len(sizes), sum(sizes), seconds[0]


def main() -> None:
    shutil.rmtree(DATA_DIR, ignore_errors=True)
    mols = load_qm9(limit=N_MOLECULES)
    load_before = os.getloadavg()[0]
    clean = DATA_DIR / "clean"
    save_sharded(clean, "set", mols, name="Set", source="bench", shard_size=SHARD)
    t0 = time.perf_counter()
    precompute(clean, "set", PARAMS, cluster="in-process")
    full = time.perf_counter() - t0
    seconds = {s: v["seconds"] for s, v in ResultStore(clean, "set", PARAMS).manifest()["stages"].items()}
    expected = _report(clean)
    n_markers, marker_bytes, marker_s = _marker_costs(clean)
    assert _report(clean) == expected  # --force computes the same

    rows = []
    for stage, (module, table) in KILLS.items():
        folder = DATA_DIR / f"killed-{stage}"
        save_sharded(folder, "set", mols, name="Set", source="bench", shard_size=SHARD)
        died = _killed(folder, module, table)
        t0 = time.perf_counter()
        precompute(folder, "set", PARAMS, cluster="in-process")
        rerun = time.perf_counter() - t0
        reused = ResultStore(folder, "set", PARAMS).manifest()["stages"][stage]["reused"]
        assert _report(folder) == expected, stage
        rows.append(
            f"| {stage} (shard {KILL_AT} of 8) | {died:.1f} | {rerun:.1f} | {full - rerun:.1f} | "
            f"{reused['reused']} of {reused['shards']} | yes |"
        )
    stages = ", ".join(f"{s} {v:.1f} s" for s, v in seconds.items())
    write_section(
        "resume",
        f"""## Re-run after a crash (`tests/bench/bench_resume.py`)

{N_MOLECULES:,} QM9 molecules (evenly spread subset) in 8 shards of {SHARD}, in process, seed 0.
Uninterrupted run of every stage: **{full:.1f} s** ({stages}).
Each killed run was SIGKILLed as it was about to write a table of shard {KILL_AT} in the stage named;
the re-run takes over the finished stages whole and the finished shards of the killed stage.

| killed in | killed run until death, s | re-run, s | uninterrupted run minus re-run, s | shards of the stage reused | report equals the uninterrupted one |
|---|---|---|---|---|---|
{chr(10).join(rows)}

Markers of an uninterrupted run: {n_markers} files, {marker_bytes / 1e6:.2f} MB, {marker_s:.2f} s to write
({100 * marker_s / full:.1f} % of the run); they are removed once each stage is recorded.
Load average: {load_before:.1f} before, {os.getloadavg()[0]:.1f} after (2 cores shared with other work).
""",
    )
    print(f"full {full:.1f} s; markers {n_markers} ({marker_bytes / 1e6:.2f} MB, {marker_s:.2f} s)")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
