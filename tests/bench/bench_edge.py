"""What the server's edge (Host allowlist, origin rule) costs the REST API: A/B against a tree without it.

Runs ``orientscope serve`` (API + dashboard, one worker, loopback, no token: what
``make serve`` starts) from two source trees in turn, the code before the edge and
this one, on the same store, and drives ``molecules/{id}`` with 32 keep-alive clients.
The two alternate (A B, B A, ...) in one sitting, so a change in the machine's load
falls on both; each run records the load average.

Run: ``python -m tests.bench.bench_edge BASE_TREE`` where BASE_TREE is a checkout of
the code before the edge (``git worktree add``); it runs with this environment's
packages. Env ``ORIENTSCOPE_BENCH_EDGE_DATA`` picks the data dir (default
``/tmp/os-bench-edge``; the first run stores and precomputes a QM9 subset).
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.bench.bench_api import CLIENTS, wait_until_healthy, wait_until_warm
from tests.bench.common import write_section
from tests.bench.http_load import drive
from tests.harness import free_port

N_MOLECULES = 20_000  # the edge's cost is per request, not per molecule: a subset keeps the set-up short
ROUNDS = 6  # the machine is shared: many short alternating runs, compared in pairs
DURATION_S = 15.0
SEED = 0
REPO = Path(__file__).resolve().parents[2]


def ensure_store(data_dir: Path) -> None:
    from orientscope.loaders.qm9 import load_qm9
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.services.datasets import READY, dataset_info
    from orientscope.store.datasets import has_dataset
    from orientscope.store.shards import save_sharded

    if has_dataset(data_dir, "qm9") and dataset_info(data_dir, "qm9").status == READY:
        return
    save_sharded(data_dir, "qm9", load_qm9(limit=N_MOLECULES), name="QM9", source="qm9pack subset")
    precompute(data_dir, "qm9", make_params(seed=SEED))


def one_run(tree: Path, data_dir: Path, paths: list[str], seed: int) -> dict:
    """Serve from ``tree``, wait for the warm-up, drive 32 clients; the load figures and the load average."""
    port = free_port()
    cmd = [sys.executable, "-m", "orientscope.cli", "serve", "--data-dir", str(data_dir), "--port", str(port)]
    env = {**os.environ, "PYTHONPATH": str(tree)}  # this tree's backend and app, before the installed one
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until_healthy(proc, port, t0, limit_s=300)
        wait_until_warm(port, t0, limit_s=600)
        httpx.get(f"http://127.0.0.1:{port}{paths[0]}", timeout=120).raise_for_status()
        result = drive(port, paths, CLIENTS, DURATION_S, seed)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {**result, "load": os.getloadavg()[0]}


GET_HEADERS = [(b"host", b"127.0.0.1:8050"), (b"accept", b"*/*"), (b"accept-encoding", b"gzip, deflate")]
POST_HEADERS = [*GET_HEADERS, (b"origin", b"http://127.0.0.1:8050"), (b"content-type", b"application/json")]


def guard_cost_us(method: str, headers: list, n: int = 20_000, repeats: int = 5) -> float:
    """Microseconds the guard adds to one request it lets through (in process, the median of ``repeats``)."""
    import asyncio

    from orientscope.api.edge import EdgeGuard, edge_rules

    async def inner(scope, receive, send) -> None:
        return None

    guard = EdgeGuard(inner, edge_rules("127.0.0.1"))
    scope = {"type": "http", "method": method, "path": "/api/datasets/qm9/molecules/1", "query_string": b""}
    scope["headers"] = headers

    async def timed(app) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            await app(scope, None, None)
        return time.perf_counter() - t0

    async def cost() -> float:
        return (await timed(guard) - await timed(inner)) / n * 1e6

    return statistics.median(asyncio.run(cost()) for _ in range(repeats))


# The commit that added the edge: make bench compares against its parent.
EDGE_COMMIT = "dbcbc3f"


def before_edge_tree() -> Path:
    """A checkout of the code before the edge (a detached git worktree beside the temp files, made once)."""
    tree = Path(os.environ.get("TMPDIR", "/tmp")) / "orientscope-before-edge"
    if not (tree / "backend").is_dir():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--force", str(tree),
                        f"{EDGE_COMMIT}~1"], check=True)  # fmt: skip
    return tree


def main(base_tree: Path | None = None) -> None:
    base_tree = base_tree or before_edge_tree()
    data_dir = Path(os.environ.get("ORIENTSCOPE_BENCH_EDGE_DATA", "/tmp/os-bench-edge"))
    ensure_store(data_dir)
    from orientscope.store.datasets import load_dataset

    ids = random.Random(SEED).sample(list(load_dataset(data_dir, "qm9").ids), 2000)
    paths = [f"/api/datasets/qm9/molecules/{m}" for m in ids]
    trees = {"before": base_tree.resolve(), "edge": REPO}
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for r in range(ROUNDS):
        order = list(trees) if r % 2 == 0 else list(trees)[::-1]
        for name in order:
            runs[name].append(one_run(trees[name], data_dir, paths, SEED + r))
            print(name, runs[name][-1], flush=True)
    p95 = {name: statistics.median(x["p95"] for x in rs) for name, rs in runs.items()}
    ratio = p95["edge"] / p95["before"]
    # Each round's two runs are neighbours in time: their ratio cancels most of the background load.
    paired = statistics.median(e["p95"] / b["p95"] for b, e in zip(runs["before"], runs["edge"], strict=True))
    lines = [
        "## edge: REST latency with the Host and origin guard, A/B",
        "",
        f"`orientscope serve` (1 worker, loopback, no token: `make serve`) from the tree before the guard and from "
        f"this one, alternating ({ROUNDS} runs each, order A B, B A, ...), on one store of {N_MOLECULES:,} QM9 "
        f"molecules; `molecules/{{id}}` with {CLIENTS} keep-alive clients for {DURATION_S:.0f} s after the warm-up.",
        "",
        f"| tree | {CLIENTS}-client p95 per run (ms) | median p95 (ms) | median p50 (ms) | median req/s | errors |",
        "|---|---|---|---|---|---|",
    ]
    for name, rs in runs.items():
        per_run = ", ".join(f"{x['p95']:.1f}" for x in rs)
        lines.append(
            f"| {name} | {per_run} | {p95[name]:.1f} | "
            f"{statistics.median(x['p50'] for x in rs):.1f} | {statistics.median(x['rps'] for x in rs):.0f} | "
            f"{sum(x['errors'] for x in rs)} |"
        )
    loads = ", ".join(f"{x['load']:.1f}" for name in trees for x in runs[name])
    lines += [
        "",
        f"- p95 with the guard / before: **{ratio:.2f}** from the medians, **{paired:.2f}** as the median of "
        "each round's pair (target ≤ 1.10).",
        f"- 1-min load average at the end of each run (before…, edge…): {loads}; the machine is shared, "
        "so both trees' figures carry the same background load, run by run.",
    ]
    spread = ", ".join(
        f"{name} {min(x['p95'] for x in rs):.0f}-{max(x['p95'] for x in rs):.0f} ms" for name, rs in runs.items()
    )
    lines.append(f"- Run-to-run spread of each tree's p95 ({spread}) is wider than the difference between the trees.")
    get_us, post_us = guard_cost_us("GET", GET_HEADERS), guard_cost_us("POST", POST_HEADERS)
    p50_ms = statistics.median(x["p50"] for x in runs["before"])
    lines.append(
        f"- The guard's own cost per request, in process (no network): {get_us:.1f} µs for a GET, {post_us:.1f} µs "
        f"for a POST from the dashboard's own page, {100 * post_us / 1000 / p50_ms:.3f} % of the 32-client median "
        f"p50 above ({p50_ms:.0f} ms)."
    )
    write_section("edge", "\n".join(lines))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
