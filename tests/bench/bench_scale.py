"""Benchmark large sets: `synth` → sharded `ingest` on 1 or more local workers, memory per phase.

For each (N, workers, scope) it runs, in fresh processes:

1. ``orientscope synth --n N --bias qm9`` (once per N, reused; or the folder
   named by ``$ORIENTSCOPE_BENCH_INPUTS``, e.g. ``10000000=/work/big10m/npz``);
2. the sharded ingest on ``local:W``: ``orientscope ingest DIR --cluster local:W``
   (scope ``all``: every stage), or the same ``ingest_files`` call stopped after
   frames and statistics (scope ``fs``, the issue's 10M row),
   sampling every 0.5 s the summed RSS of the CLI process and all its
   descendants (the Dask scheduler, nanny and worker processes), and the
   largest single process, with the time, so the peaks split by phase
   (ingest, then each stage's window from its stored seconds and completion time).

It records the stage times from the report, the load average, and writes the
``scale`` section of BENCHMARKS.md. Run:
``python -m tests.bench.bench_scale 1000000:1,2 1000000:1,2:fs 10000000:2:fs``
(each argument is N:workers,...[:scope]). A 10M input takes ~8.3 GB of disk,
its store ~10 GB.
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

FS_ONLY = (
    "import sys; from orientscope.pipeline.sharded_ingest import ingest_files; "
    "ingest_files(sys.argv[1], [sys.argv[2]], 'scale', cluster=sys.argv[3], stages=['frames', 'statistics'])"
)

READ_REPORT = (
    "import json, sys; from pathlib import Path; from orientscope.services.report import build_report; "
    "d = Path(sys.argv[1]); print(json.dumps(build_report(d, next((d / 'datasets').iterdir()).name), default=str))"
)


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
    """Run ``cmd``; its wall time, the peak summed and single-process RSS of its process tree (MB), the samples."""
    t0 = time.perf_counter()
    load = os.getloadavg()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    watched = psutil.Process(proc.pid)
    samples: list[tuple[float, int, int]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            try:
                samples.append((time.time(), *_tree_rss(watched)))
            except psutil.Error:
                break
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
        "peak_total_mb": max((s[1] for s in samples), default=0) / 2**20,
        "peak_process_mb": max((s[2] for s in samples), default=0) / 2**20,
        "load": f"{load[0]:.1f} → {os.getloadavg()[0]:.1f}",
        "samples": samples,
    }


def phase_peaks(samples: list[tuple[float, int, int]], stages: dict) -> dict:
    """Peak (summed, largest) RSS in MB per phase: ``ingest`` before the first stage, then each stage's window."""
    windows = {name: (s["completed_at"] - s["seconds"], s["completed_at"]) for name, s in stages.items()}
    first = min((lo for lo, _ in windows.values()), default=float("inf"))
    windows = {"ingest": (0.0, first), **windows}
    out = {}
    for name, (lo, hi) in windows.items():
        inside = [s for s in samples if lo <= s[0] <= hi]
        if inside:
            out[name] = [max(s[1] for s in inside) / 2**20, max(s[2] for s in inside) / 2**20]
    return out


def bench(n: int, workers: list[int], scope: str, work: Path) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cli = [sys.executable, "-m", "orientscope.cli"]
    given = dict(pair.split("=", 1) for pair in os.environ.get("ORIENTSCOPE_BENCH_INPUTS", "").split(",") if pair)
    synth = Path(given.get(str(n)) or work / f"synth-{n}")
    rows = []
    if not (synth / "synth.json").is_file():
        made = run_sampled([*cli, "synth", "--n", str(n), "--out", str(synth), "--bias", "qm9"], env)
        rows.append({"what": f"`synth --n {n:,} --bias qm9`", "n": n, **made})
    for w in workers:
        data = work / f"data-{n}-{w}"
        shutil.rmtree(data, ignore_errors=True)
        if scope == "fs":
            cmd, what = [sys.executable, "-c", FS_ONLY, str(data), str(synth), f"local:{w}"], "frames + statistics"
        else:
            cmd = [*cli, "ingest", str(synth), "--name", "scale", "--cluster", f"local:{w}", "--data-dir", str(data)]
            what = "every stage"
        done = run_sampled(cmd, env)
        # The stored report as it stands (`orientscope report` would compute the stages a `fs` run left out).
        report = json.loads(
            subprocess.run(
                [sys.executable, "-c", READ_REPORT, str(data)], capture_output=True, text=True, env=env, cwd=ROOT,
                check=True,
            ).stdout
        )  # fmt: skip
        manifest = json.loads(next((data / "datasets").rglob("manifest.json")).read_text())
        ran = {k: v for k, v in manifest["stages"].items() if v.get("seconds") is not None and not v.get("skipped")}
        disk = sum(f.stat().st_size for f in (data / "datasets").rglob("*") if f.is_file())
        rows.append({
            "what": f"`ingest` + {what}, `local:{w}`", "n": n, "workers": w, "scope": scope, **done,
            "stage_s": {k: v["seconds"] for k, v in ran.items()},
            "phase_peaks_mb": phase_peaks(done["samples"], ran),
            "kl": report["kl"]["value"], "kl_method": report["kl"]["method"], "kl_n_used": report["kl"]["n_used"],
            "control_kl": report["control"]["kl"]["value"],
            "kl_at_n": (report.get("kl_at_n") or {}).get("value"),
            "ks": report["ks"]["statistic"], "store_gb": disk / 1e9,
        })  # fmt: skip
        (work / f"row-{n}-{w}-{scope}.json").write_text(json.dumps({k: v for k, v in rows[-1].items()}, default=str))
        shutil.rmtree(data, ignore_errors=True)
    return rows


def to_markdown(rows: list[dict]) -> str:
    lines = [
        "## scale: sharded ingest and the stages on a local Dask cluster (issue 15)",
        "",
        "Input: `orientscope synth --bias qm9` (QM9 tiled, QM9 poses turned by |N(0, 10°)|), NPZ shards of 250k.",
        "Peak RSS is sampled every 0.5 s over the CLI process and every descendant (scheduler, nannies, workers);",
        "per phase: all processes / largest process, in MB. Load: 1-minute load average at start → end",
        "(shared 2-core machine: timings are noisy).",
        "",
        "| run | molecules | wall time | seconds per stage | peak RSS, all / largest | peak per phase "
        "| KL (control), kl_at_n | store | load |",
        "|---|---:|---:|---|---:|---|---|---:|---|",
    ]
    for r in rows:
        stages = ", ".join(f"{k} {v:.0f}" for k, v in r.get("stage_s", {}).items())
        phases = "; ".join(f"{k} {a:,.0f} / {b:,.0f}" for k, (a, b) in r.get("phase_peaks_mb", {}).items())
        kl = f"{r['kl']:.3f} ({r['control_kl']:+.4f})" if "kl" in r else ""
        kl += f", {r['kl_at_n']:.3f}" if r.get("kl_at_n") is not None else ""
        store = f"{r['store_gb']:.2f} GB" if "store_gb" in r else ""
        lines.append(
            f"| {r['what']} | {r['n']:,} | {r['seconds']:.0f} s | {stages} | "
            f"{r['peak_total_mb']:,.0f} / {r['peak_process_mb']:,.0f} | {phases} | {kl} | {store} | {r['load']} |"
        )
    return "\n".join(lines)


def main(args: list[str] | None = None) -> None:
    plan = []
    for arg in args or ["1000000:1,2"]:
        n, ws, *scope = arg.split(":")
        plan.append((int(n), [int(w) for w in ws.split(",")], scope[0] if scope else "all"))
    work = Path(os.environ.get("ORIENTSCOPE_BENCH_DIR") or tempfile.mkdtemp(prefix="orientscope-scale-"))
    # Rows of earlier runs to keep in the table (the row-*.json files `bench` writes), so a
    # long 10M row need not be re-run beside a new 1M one; each keeps its own load and timings.
    kept = [p for p in os.environ.get("ORIENTSCOPE_BENCH_KEEP_ROWS", "").split(",") if p]
    rows = [json.loads(Path(p).read_text()) for p in kept]
    for n, workers, scope in plan:
        rows += bench(n, workers, scope, work)
        print(json.dumps([{k: v for k, v in r.items() if k != "samples"} for r in rows], indent=1), flush=True)
    write_section("scale", to_markdown(rows))


if __name__ == "__main__":
    main(sys.argv[1:])
