"""REST API on a 10M-molecule sharded dataset, against full QM9 in the same run.

Serves the shared 10M store (``synth --n 10000000 --bias qm9``; default ``/work/big10m/data``,
its id in ``/work/big10m/READY``) with ``orientscope serve --read-only``, which maps its
columns (``store.columns``) instead of loading it, and drives it as ``bench_api`` does:
``molecules/{id}`` with 1 and 32 keep-alive clients, a sorted page, pose and chemistry
neighbours, the start of the streamed orientations export, the dashboard page, and the
server's resident memory once every piece is built. The baseline is the same run on full QM9
(loaded in memory; ``ORIENTSCOPE_BENCH_DATA``, default ``/work/qmdata``).

The 10M store has no chemistry stage, so for chemistry neighbours the script serves an
overlay data dir (``ORIENTSCOPE_BENCH_LARGE_OVERLAY``, default ``/tmp/os-bench-api-large``)
whose dataset links to the store's files and adds per-shard packed fingerprints
(``chemistry/fingerprints-NNNNN.npy``, 2.56 GB, and their bit counts ``popcounts-NNNNN.npy``,
as the chemistry stage writes them) tiled from QM9's: molecule ``<k>_<copy>`` gets QM9
molecule ``k``'s fingerprint, as the synth set tiles QM9's molecules.

Run: ``python -m tests.bench.bench_api_large``. The first run writes the memory-mapped
columns (~9 GB, minutes) to ``ORIENTSCOPE_COLUMNS_DIR`` (default ``/tmp/orientscope-columns``).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import psutil

from orientscope.services.cache import VIEW_CACHE_MB_ENV
from tests.bench.bench_api import wait_until_healthy, wait_until_warm
from tests.bench.common import write_section
from tests.bench.http_load import drive
from tests.harness import free_port

CLIENTS = 32
DURATION_S = 20.0
BASELINE_S = 10.0
CHEMISTRY_S = 20.0
EXPORT_MB = 64
SEED = 0
# The 10M view's k-d tree (~0.5 GB), sort orders and bit counts exceed the default 512 MB
# view budget, and a view over budget is rebuilt on every request (docs/operations.md, section 9).
VIEW_CACHE_MB = 1024


def _large_store() -> tuple[Path, str]:
    data = Path(os.environ.get("ORIENTSCOPE_BENCH_LARGE_DATA", "/work/big10m/data"))
    dataset_id = os.environ.get("ORIENTSCOPE_BENCH_LARGE_ID")
    if not dataset_id:
        dataset_id = (data.parent / "READY").read_text().split()[0]
    return data, dataset_id


def _qm9_fingerprints(qm9_data: Path) -> tuple[dict[str, int], np.ndarray]:
    from orientscope.services.results import open_result

    table = open_result(qm9_data, "qm9").table("chemistry", "fingerprints").to_pandas()
    words = np.ascontiguousarray(table[[c for c in table.columns if c != "id"]].to_numpy(np.uint64))
    return {str(m): i for i, m in enumerate(table["id"])}, words


def _overlay(data: Path, dataset_id: str, qm9_data: Path, root: Path) -> Path:
    """A data dir linking to the large store's dataset, plus tiled per-shard fingerprints."""
    from orientscope.store.atomic import read_json
    from orientscope.store.shards import shard_refs

    src = data / "datasets" / dataset_id
    dst = root / "datasets" / dataset_id
    meta = read_json(src / "dataset.json")
    key = meta["active_result"]
    result = dst / "results" / key
    (result / "chemistry").mkdir(parents=True, exist_ok=True)
    for name in ("dataset.json", "shards"):
        if not (dst / name).exists():
            (dst / name).symlink_to(src / name)
    for item in (src / "results" / key).iterdir():
        if item.name != "chemistry" and not (result / item.name).exists():
            (result / item.name).symlink_to(item)
    refs = shard_refs(data, dataset_id, meta)
    if not (result / "chemistry" / f"popcounts-{len(refs) - 1:05d}.npy").exists():
        index, words = _qm9_fingerprints(qm9_data)
        counts = np.bitwise_count(words).sum(axis=1).astype(np.uint16)  # as the chemistry stage writes them
        for ref in refs:
            ids = pd.read_parquet(Path(ref.folder) / "molecules.parquet", columns=["id"])["id"]
            rows = np.fromiter((index[m.rsplit("_", 1)[0]] for m in ids), np.int64, len(ids))
            np.save(result / "chemistry" / f"fingerprints-{ref.number:05d}.npy", words[rows])
            np.save(result / "chemistry" / f"popcounts-{ref.number:05d}.npy", counts[rows])
    # The overlay's columns and map are the store's (``<result>/columns``, ``<result>/map``, linked above).
    return root


def _start_server(data_dir: Path, port: int) -> tuple[subprocess.Popen, float]:
    """``orientscope serve --read-only`` on ``port``; (process, seconds until /api/health answers)."""
    cmd = [
        sys.executable,
        "-m",
        "orientscope.cli",
        "serve",
        "--read-only",
        "--data-dir",
        str(data_dir),
        "--port",
        str(port),
    ]
    env = {**os.environ, VIEW_CACHE_MB_ENV: os.environ.get(VIEW_CACHE_MB_ENV, str(VIEW_CACHE_MB))}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return proc, wait_until_healthy(proc, port, t0, limit_s=600)  # a 10M set maps its columns first


def _memory(pid: int) -> dict[str, float]:
    """Resident memory of the server and its children (MB): total, anonymous (heap) and file-backed (maps)."""
    out = {"rss": 0.0, "anon": 0.0, "file": 0.0}
    server = psutil.Process(pid)
    for proc in [server, *server.children(recursive=True)]:
        status = Path(f"/proc/{proc.pid}/status").read_text().splitlines()
        fields = {line.split(":")[0]: int(line.split()[1]) for line in status if line.startswith("Rss")}
        out["rss"] += (
            fields.get("RssAnon", 0) / 1024 + fields.get("RssFile", 0) / 1024 + fields.get("RssShmem", 0) / 1024
        )
        out["anon"] += fields.get("RssAnon", 0) / 1024
        out["file"] += fields.get("RssFile", 0) / 1024
    return out


def _timed_get(client: httpx.Client, url: str, **params) -> float:
    t0 = time.perf_counter()
    client.get(url, params=params, timeout=1800).raise_for_status()
    return time.perf_counter() - t0


def _export_start(base: str, path: str) -> tuple[float, float]:
    """(seconds to the first byte, MB/s over the first EXPORT_MB) of a streamed download."""
    t0 = time.perf_counter()
    first, got = None, 0
    with httpx.stream("GET", base + path, timeout=600) as r:
        r.raise_for_status()
        for chunk in r.iter_bytes():
            first = first or time.perf_counter() - t0
            got += len(chunk)
            if got >= EXPORT_MB * 2**20:
                break
    return first or float("nan"), got / 2**20 / (time.perf_counter() - t0)


def _run(data: Path, dataset_id: str, ids: list[str], chemistry: bool) -> dict:
    """Everything measured on one served dataset."""
    port = free_port()
    proc, start_s = _start_server(data, port)
    spawned = time.perf_counter() - start_s  # the one-offs below run before the warm-up is waited for
    base = f"http://127.0.0.1:{port}"
    api = f"/api/datasets/{dataset_id}"
    out: dict = {"start_s": start_s}
    rng = random.Random(SEED)
    try:
        with httpx.Client(base_url=base) as c:
            out["first_molecule_s"] = _timed_get(c, f"{api}/molecules/{ids[0]}")
            out["summary_s"] = _timed_get(c, f"{api}/summary")
            out["dashboard_s"] = _timed_get(c, "/")
            out["sort_build_s"] = _timed_get(c, f"{api}/molecules", sort="-n_atoms", offset=0, limit=50)
            out["pose_build_s"] = _timed_get(c, f"{api}/neighbors/{ids[1]}", by="pose", k=10)
            if chemistry:
                out["chem_first_s"] = _timed_get(c, f"{api}/neighbors/{ids[2]}", by="chemistry", k=10)
        out["export_first_byte_s"], out["export_mb_s"] = _export_start(base, f"{api}/orientations?format=parquet")
        # The loaded runs start once the server's own start-up warm-up is over, as a user's steady state.
        out["warm_s"] = wait_until_warm(port, spawned, limit_s=1800)
        n = len(ids)
        molecule_paths = [f"{api}/molecules/{m}" for m in ids]
        pages = [f"{api}/molecules?sort=-n_atoms&limit=50&offset={rng.randrange(n)}" for _ in range(500)]
        pose = [f"{api}/neighbors/{m}?by=pose&k=10" for m in ids[:500]]
        out["molecule_1"] = drive(port, molecule_paths, 1, BASELINE_S, SEED)
        out["molecule_32"] = drive(port, molecule_paths, CLIENTS, DURATION_S, SEED)
        out["page_32"] = drive(port, pages, CLIENTS, DURATION_S / 2, SEED)
        out["pose_32"] = drive(port, pose, CLIENTS, DURATION_S / 2, SEED)
        if chemistry:
            chem = [f"{api}/neighbors/{m}?by=chemistry&k=10" for m in ids[:500]]
            out["chem_1"] = drive(port, chem, 1, CHEMISTRY_S, SEED)
        out["memory"] = _memory(proc.pid)
        out["load"] = os.getloadavg()
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return out


def _sample_ids(data: Path, dataset_id: str, k: int) -> list[str]:
    from orientscope.store.atomic import read_json
    from orientscope.store.shards import read_shard_ids, shard_refs

    meta = read_json(data / "datasets" / dataset_id / "dataset.json")
    rng = random.Random(SEED)
    refs = shard_refs(data, dataset_id, meta)
    ids = []
    for ref in rng.sample(refs, min(8, len(refs))):
        shard_ids = read_shard_ids(ref)
        ids += [str(shard_ids[j]) for j in rng.sample(range(len(shard_ids)), k // min(8, len(refs)))]
    rng.shuffle(ids)
    return ids


def _row(name: str, large: dict, qm9: dict, target: str) -> str:
    def fmt(d):
        return f"{d['p50']:.1f} / {d['p95']:.1f} ({d['rps']:.0f} req/s, {d['errors']} errors)" if d else "–"

    return f"| {name} | {fmt(large.get(name))} | {fmt(qm9.get(name))} | {target} |"


def main() -> None:
    data, dataset_id = _large_store()
    qm9_data = Path(os.environ.get("ORIENTSCOPE_BENCH_DATA", "/work/qmdata"))
    overlay = _overlay(
        data, dataset_id, qm9_data, Path(os.environ.get("ORIENTSCOPE_BENCH_LARGE_OVERLAY", "/tmp/os-bench-api-large"))
    )
    load_before = os.getloadavg()
    large = _run(overlay, dataset_id, _sample_ids(data, dataset_id, 2000), chemistry=True)
    print("large", large, flush=True)
    from orientscope.store.datasets import read_molecule_columns

    qm9_ids = random.Random(SEED).sample(list(read_molecule_columns(qm9_data, "qm9", ["id"])["id"].astype(str)), 2000)
    qm9 = _run(qm9_data, "qm9", qm9_ids, chemistry=True)
    print("qm9", qm9, flush=True)
    n = int(pd.read_json(data / "datasets" / dataset_id / "dataset.json", typ="series")["n_molecules"])

    mem, qmem = large["memory"], qm9["memory"]
    lines = [
        f"## api_large: REST API on a {n:,}-molecule sharded dataset (memory-mapped columns), QM9 as baseline",
        "",
        "`orientscope serve --read-only` (API + dashboard, 1 worker) on loopback, driven from the same machine "
        "(`tests/bench/http_load.py`). Columns: p50 / p95 latency in ms. Baseline: full QM9 (130,831 molecules, "
        "loaded in memory) in the same run.",
        "",
        f"| requests | {n:,} molecules | QM9 | target |",
        "|---|---|---|---|",
        _row("molecule_1", large, qm9, "–"),
        _row("molecule_32", large, qm9, "p95 ≤ 50 ms"),
        _row("page_32", large, qm9, "–"),
        _row("pose_32", large, qm9, "–"),
        _row("chem_1", large, qm9, "p95 ≤ 500 ms"),
        "",
        "`molecule_N`: `molecules/{id}` with N clients over 2,000 random ids (from 8 random shards for the large set); "
        "`page_32`: 50-row pages sorted by `-n_atoms` at random offsets; `pose_32`: pose neighbours (k = 10); "
        "`chem_1`: chemistry neighbours (k = 10, one client; each query passes over every shard's bit counts "
        "and reads only the fingerprints whose count can still beat the 10th best).",
        "",
        "| one-off (s) | large | QM9 |",
        "|---|---|---|",
    ]
    for key, label in [
        ("start_s", "server start (spawn → /api/health)"),
        ("warm_s", "start-up warm-up over (spawn → /api/health stops reporting `warming`)"),
        ("first_molecule_s", "first `molecules/{id}` (opens the view)"),
        ("summary_s", "`summary`"),
        ("dashboard_s", "dashboard page `/`"),
        ("sort_build_s", "first sorted page (sorts every molecule)"),
        ("pose_build_s", "first pose neighbours (builds the k-d tree)"),
        ("chem_first_s", "first chemistry neighbours (reads the bit counts; cold page cache)"),
        ("export_first_byte_s", "orientations Parquet export: first byte"),
    ]:
        lines.append(f"| {label} | {large.get(key, float('nan')):.2f} | {qm9.get(key, float('nan')):.2f} |")
    lines += [
        f"| orientations Parquet export: MB/s over the first {EXPORT_MB} MB | {large['export_mb_s']:.1f} | "
        f"{qm9['export_mb_s']:.1f} |",
        "",
        f"- Warmed server memory (every piece above built): **{mem['rss']:.0f} MB RSS** = {mem['anon']:.0f} MB "
        f"anonymous + {mem['file']:.0f} MB file pages of the memory maps (target ≤ 3 GB); QM9: {qmem['rss']:.0f} MB "
        f"({qmem['anon']:.0f} + {qmem['file']:.0f}).",
        f"- Both servers ran with {VIEW_CACHE_MB_ENV}={os.environ.get(VIEW_CACHE_MB_ENV, VIEW_CACHE_MB)}.",
        f"- 1-min load average: {load_before[0]:.1f} before, {large['load'][0]:.1f} after the large run, "
        f"{qm9['load'][0]:.1f} after QM9. The machine is shared (2 cores); the driver runs on the same cores.",
        "- Chemistry neighbours on the large set use fingerprints tiled from QM9's (the shared 10M store has no "
        "chemistry stage), with their bit counts as the chemistry stage writes them.",
    ]
    write_section("api_large", "\n".join(lines))


if __name__ == "__main__":
    main()
