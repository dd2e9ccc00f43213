"""Benchmark large sets: `synth` → sharded `ingest` (frames + statistics) on 1 or more local workers.

For each (N, workers) it runs, as a user would, in fresh processes:

1. ``orientscope synth --n N --bias qm9`` (once per N, reused);
2. ``orientscope ingest DIR --cluster local:W`` (reads the NPZ shards in
   parallel, writes Parquet shards, runs frames, statistics and the
   classifiers per shard),
   sampling every 0.5 s the summed RSS of the CLI process and all its
   descendants (the Dask scheduler, nanny and worker processes), and the
   largest single process.

It records the stage times from the report and writes the ``scale`` section of
BENCHMARKS.md. Run: ``python -m tests.bench.bench_scale 1000000:1,2 10000000:2``
(each argument is N:workers,...). The 10M run needs ~9 GB of disk for the
input and ~6 GB for the store.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from tests.bench.common import ROOT, write_section

BIN = Path(sys.executable).parent


def _tree_rss(proc: psutil.Process) -> tuple[int, int]:
    """(summed, largest) RSS in bytes of ``proc`` and its descendants."""
    total = largest = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            rss = p.memory_info().rss
        except psutil.Error:
            continue
        total += rss
        largest = max(largest, rss)
    return total, largest


def run_sampled(cmd: list[str], env: dict) -> dict:
    """Run ``cmd``; its wall time and the peak summed and single-process RSS of its process tree (MB)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    watched = psutil.Process(proc.pid)
    peak = {"total": 0, "largest": 0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            try:
                total, largest = _tree_rss(watched)
            except psutil.Error:
                break
            peak["total"], peak["largest"] = max(peak["total"], total), max(peak["largest"], largest)
            stop.wait(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    stop.set()
    sampler.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed:\n{err[-3000:]}")
    return {
        "seconds": time.perf_counter() - t0,
        "peak_total_mb": peak["total"] / 2**20,
        "peak_process_mb": peak["largest"] / 2**20,
        "stdout": out,
    }


def bench(n: int, workers: list[int], work: Path) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cli = [sys.executable, "-m", "backend.cli"]
    synth = work / f"synth-{n}"
    rows = []
    if not (synth / "synth.json").is_file():
        made = run_sampled([*cli, "synth", "--n", str(n), "--out", str(synth), "--bias", "qm9"], env)
        rows.append({"what": f"`synth --n {n:,} --bias qm9`", "n": n, **made})
    for w in workers:
        data = work / f"data-{n}-{w}"
        shutil.rmtree(data, ignore_errors=True)
        cmd = [*cli, "ingest", str(synth), "--name", "scale", "--cluster", f"local:{w}", "--data-dir", str(data)]
        done = run_sampled(cmd, env)
        report = json.loads(
            subprocess.run(
                [*cli, "report", "scale", "--json", "--data-dir", str(data)],
                capture_output=True, text=True, env=env, cwd=ROOT, check=True,
            ).stdout
        )  # fmt: skip
        stages = {k: v["seconds"] for k, v in report["stages"].items()}
        disk = sum(f.stat().st_size for f in (data / "datasets").rglob("*") if f.is_file())
        rows.append({
            "what": f"`ingest` + frames + statistics + classifiers, `local:{w}`", "n": n, "workers": w, **done,
            "frames_s": stages["frames"], "statistics_s": stages["statistics"], "models_s": stages["models"],
            "kl": report["kl"]["value"], "control_kl": report["control"]["kl"]["value"],
            "ks": report["ks"]["statistic"], "store_gb": disk / 1e9,
        })  # fmt: skip
        shutil.rmtree(data, ignore_errors=True)
    return rows


def to_markdown(rows: list[dict]) -> str:
    lines = [
        "## scale: sharded ingest, frames and statistics on a local Dask cluster (issue 15)",
        "",
        "Input: `orientscope synth --bias qm9` (QM9 tiled, QM9 poses turned by |N(0, 10°)|), NPZ shards of 250k.",
        "Peak RSS is sampled every 0.5 s over the CLI process and every descendant (scheduler, nannies, workers).",
        "",
        "| run | molecules | wall time | frames / statistics / classifiers | peak RSS, all processes / largest "
        "| KL (control) | store |",
        "|---|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        stages = f"{r['frames_s']:.0f} / {r['statistics_s']:.0f} / {r['models_s']:.0f} s" if "frames_s" in r else ""
        kl = f"{r['kl']:.3f} ({r['control_kl']:+.4f})" if "kl" in r else ""
        store = f"{r['store_gb']:.2f} GB" if "store_gb" in r else ""
        lines.append(
            f"| {r['what']} | {r['n']:,} | {r['seconds']:.0f} s | {stages} | "
            f"{r['peak_total_mb']:,.0f} / {r['peak_process_mb']:,.0f} MB | {kl} | {store} |"
        )
    return "\n".join(lines)


def main(args: list[str]) -> None:
    plan = [(int(a.split(":")[0]), [int(w) for w in a.split(":")[1].split(",")]) for a in args or ["1000000:1,2"]]
    work = Path(os.environ.get("ORIENTSCOPE_BENCH_DIR") or tempfile.mkdtemp(prefix="orientscope-scale-"))
    rows = []
    for n, workers in plan:
        rows += bench(n, workers, work)
        print(json.dumps([{k: v for k, v in r.items() if k != "stdout"} for r in rows], indent=1), flush=True)
    write_section("scale", to_markdown(rows))


if __name__ == "__main__":
    main(sys.argv[1:])
