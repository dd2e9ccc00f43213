"""The fix loop's benchmarks (issue 39), each beside a baseline measured in the same run.

1. ``audit_model``'s CPU beyond ``predict`` on a stored 10,000-molecule QM9 set, K = 5, a NumPy model
   (target <= 1.5 s), against the code of ``--baseline`` (default: the commit before issue 39) on the same
   store. CPU time (user + system of the process, around the call, less ``predict``'s own) is the figure the
   shared machine's load leaves alone; each side runs three times, interleaved, and the median is reported.
2. A subset audit of the precomputed QM9 (``--data-dir``): seconds from ``orientscope.load`` to the first
   ``predict`` call on 5,000 held-out ids (target <= 2 s); the baseline builds the subset with ``from_arrays``
   (there was no other way), whose audit runs every stage first.
3. ``orientscope.rotated_copies``: 16 copies of 20,000 QM9 molecules streamed (target <= 5 s) at flat
   memory (peak RSS for 1, 4 and 16 copies), beside ``export --copies 16`` of the same ids to NPZ files.

Run: ``python -m tests.bench.bench_fix_loop [--data-dir DIR] [--baseline REF]`` (the data folder must hold
the precomputed QM9: ``orientscope precompute qm9``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.bench.common import GAP_MODEL, ROOT, write_section

BASELINE_REF = "9863505"  # the commit before issue 39
AUDIT_N, SUBSET_N, COPIES_N = 10_000, 5_000, 20_000
REPEATS = 3

AUDIT = (
    """
import json, resource, sys, time, numpy as np, orientscope
ds = orientscope.load(sys.argv[1], data_dir=sys.argv[2])
mols = ds.molecules()

"""
    + GAP_MODEL
    + """spent = [0.0]

def predict(b):
    t = time.process_time()
    out = features(b.numbers, b.positions, b.offsets) @ w
    spent[0] += time.process_time() - t
    return out

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

# The audit's modules and SciPy's statistics imported first, on both sides: the figure is the audit's work, not
# where an import happens to fall (the code of issue 39 imports less before the call, so more within it).
import scipy.stats, orientscope.notebook.audit, orientscope.pipeline.model_audit  # noqa: E401
c0, t0 = cpu(), time.perf_counter()
audit = orientscope.audit_model(predict, ds, "gap", copies=5, progress=False)
print(json.dumps({"cpu": cpu() - c0, "wall": time.perf_counter() - t0, "predict_cpu": spent[0],
                  "n": audit.to_dict()["n_molecules"], "verdicts": audit.verdicts}))
"""
)

SUBSET_NEW = """
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
import numpy as np, orientscope
ds = orientscope.load("qm9", data_dir=sys.argv[1])
ids = np.random.default_rng(0).permutation(ds.ids)[: int(sys.argv[2])]
calls = []

def predict(b):
    calls.append((time.perf_counter() - t0, time.process_time() - c0))
    return np.zeros(len(b))

audit = orientscope.audit_model(predict, ds.subset(ids), "zpve", copies=5, progress=False)
print(json.dumps({"check": calls[0][0], "check_cpu": calls[0][1], "first_batch": calls[1][0],
                  "first_batch_cpu": calls[1][1], "total": time.perf_counter() - t0,
                  "n": audit.to_dict()["n_molecules"]}))
"""

SUBSET_BASE = """
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
import numpy as np, orientscope
whole = orientscope.load("qm9", data_dir=sys.argv[1])
ids = np.random.default_rng(0).permutation(whole.molecules().ids)[: int(sys.argv[2])]
mols = whole.molecules()
mols = mols.subset(np.flatnonzero(np.isin(mols.ids, ids)))
ds = orientscope.from_arrays(mols.atomic_numbers, mols.positions_angstrom, ids=mols.ids, offsets=mols.offsets,
                             properties=mols.properties[["zpve"]], data_dir=sys.argv[3])
calls = []

def predict(b):
    calls.append((time.perf_counter() - t0, time.process_time() - c0))
    return np.zeros(len(b))

audit = orientscope.audit_model(predict, ds, "zpve", copies=5, progress=False)
print(json.dumps({"first_batch": calls[0][0], "first_batch_cpu": calls[0][1], "total": time.perf_counter() - t0,
                  "n": audit.to_dict()["n_molecules"]}))
"""

COPIES = """
import json, resource, sys, time
import numpy as np, orientscope
ds = orientscope.load("qm9", data_dir=sys.argv[1])
ids = np.random.default_rng(1).permutation(ds.ids)[: int(sys.argv[2])]
k = int(sys.argv[3])
r0 = resource.getrusage(resource.RUSAGE_SELF)
t0 = time.perf_counter()
poses = atoms = 0
if sys.argv[4] == "stream":
    for batch in orientscope.rotated_copies(ds, k, ids=ids):
        poses += len(batch)
        atoms += len(batch.numbers)
else:
    from orientscope.pipeline.export import export_dataset
    info = export_dataset(ds.data_dir, "qm9", "random", sys.argv[5] + "/copies.npz", fmt="npz", copies=k, ids=ids)
    poses = k * info["n_molecules"]
wall = time.perf_counter() - t0
r1 = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall": wall, "cpu": r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, "poses": poses,
                  "atoms": atoms, "peak_rss_mb": r1.ru_maxrss / 1024}))
"""


def _python(code: str, *args: str, root: Path | None = None) -> dict:
    """Run ``code`` in a fresh process (``root``: a baseline checkout whose ``orientscope`` is imported)."""
    env = {k: v for k, v in os.environ.items() if k != "ORIENTSCOPE_DATA_DIR"}
    if root is not None:
        env["PYTHONPATH"] = str(root)
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, env=env,
                         check=False)  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def _baseline(ref: str, folder: Path) -> Path:
    """The code of ``ref`` under ``folder``, importable as ``orientscope`` with PYTHONPATH=<returned path>."""
    code = folder / "code"
    code.mkdir()
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(code)], input=archive, check=True)
    package = folder / "package"
    package.mkdir()
    (package / "orientscope").symlink_to(code / "backend")
    return package


def _store_10k(folder: Path) -> Path:
    """A stored, precomputed 10,000-molecule QM9 subset (both sides audit the same store)."""
    from orientscope.loaders.npz import write_npz
    from orientscope.loaders.qm9 import load_qm9

    write_npz(folder / "audit.npz", load_qm9(limit=AUDIT_N))
    data = folder / "audit-data"
    exe = str(Path(sys.executable).with_name("orientscope"))
    subprocess.run([exe, "ingest", str(folder / "audit.npz"), "--name", "bench audit", "--data-dir", str(data)],
                   check=True, capture_output=True, cwd=ROOT)  # fmt: skip
    return data


def main(data_dir: str | None = None, baseline_ref: str = BASELINE_REF) -> dict:
    from orientscope.core.settings import resolve_data_dir

    qm9 = resolve_data_dir(data_dir)
    loads = [os.getloadavg()[0]]
    r: dict = {"baseline": baseline_ref}
    with tempfile.TemporaryDirectory(prefix="bench-fix-loop-") as tmp:
        tmp = Path(tmp)
        base = _baseline(baseline_ref, tmp)
        store = _store_10k(tmp)
        runs = {"new": [], "base": []}
        for _ in range(REPEATS):
            runs["new"].append(_python(AUDIT, "bench-audit", str(store)))
            runs["base"].append(_python(AUDIT, "bench-audit", str(store), root=base))
        loads.append(os.getloadavg()[0])
        r["audit"] = {side: {"overhead_cpu": statistics.median(x["cpu"] - x["predict_cpu"] for x in v),
                             "predict_cpu": statistics.median(x["predict_cpu"] for x in v),
                             "wall": statistics.median(x["wall"] for x in v), "verdicts": v[0]["verdicts"]}
                      for side, v in runs.items()}  # fmt: skip
        r["subset"] = {
            "new": _python(SUBSET_NEW, str(qm9), str(SUBSET_N)),
            "base": _python(SUBSET_BASE, str(qm9), str(SUBSET_N), str(tmp / "base-data"), root=base),
        }
        loads.append(os.getloadavg()[0])
        r["copies"] = {k: _python(COPIES, str(qm9), str(COPIES_N), str(k), "stream") for k in (1, 4, 16)}
        r["export"] = _python(COPIES, str(qm9), str(COPIES_N), "16", "export", str(tmp))
        loads.append(os.getloadavg()[0])
    r["load"] = loads
    write_section("fix-loop", _markdown(r))
    return r


def _markdown(r: dict) -> str:
    a, s, c, e = r["audit"], r["subset"], r["copies"], r["export"]
    rss = ", ".join(f"{k} copies {v['peak_rss_mb']:.0f} MB" for k, v in c.items())
    return f"""## The fix loop (issue 39): audit overhead, subset audits, rotated copies

| measurement | this code | baseline ({r["baseline"]}, same run) | target |
|---|---:|---:|---|
| `audit_model` CPU beyond `predict`, {AUDIT_N:,} stored QM9 molecules × 5 copies, imports done first (median of {REPEATS}) | **{a["new"]["overhead_cpu"]:.2f} s** | {a["base"]["overhead_cpu"]:.2f} s | ≤ 1.5 s |
| of which `predict` itself (CPU) | {a["new"]["predict_cpu"]:.2f} s | {a["base"]["predict_cpu"]:.2f} s | |
| subset audit of the precomputed QM9, {SUBSET_N:,} ids, a fresh process: start → first `predict` (the 2-molecule check), wall and CPU | **{s["new"]["check"]:.2f} s**, {s["new"]["check_cpu"]:.2f} s CPU (first batch of the audit at {s["new"]["first_batch"]:.2f} s) | {s["base"]["first_batch"]:.1f} s, {s["base"]["first_batch_cpu"]:.1f} s CPU (a `from_arrays` subset: its stages run first) | ≤ 2 s |
| `rotated_copies`, 16 copies of {COPIES_N:,} QM9 molecules streamed: wall, CPU | **{c[16]["wall"]:.2f} s**, {c[16]["cpu"]:.2f} s ({c[16]["poses"]:,} poses) | `export --copies 16` of the same ids to NPZ: {e["wall"]:.1f} s, peak RSS {e["peak_rss_mb"]:.0f} MB | ≤ 5 s |
| peak RSS of the streaming process | {rss} | | flat in the copies |

Audit verdicts (both sides): {a["new"]["verdicts"]} / {a["base"]["verdicts"]}. The audit's CPU is that of
the whole process around the call (batching, the rotations, the checks of what `predict` returns, the figures
and, new, the rotation shift's quantiles and the identity-keyed rotations) less `predict`'s own process time.
The stream reads the QM9 store one shard at a time (the whole set is one shard here) and keeps one batch's
copies; its peak RSS is the shard plus the interpreter. Machine load (1-min average) before and after each
part: {", ".join(f"{x:.1f}" for x in r["load"])}. The targets of the subset start and the stream are wall times;
on a machine this loaded a process gets a fraction of a core (wall/CPU {s["new"]["check"] / s["new"]["check_cpu"]:.1f}×
for the subset start), so the CPU seconds are the figure to read against them: this run does not show the wall
targets met, only the work within them.
"""


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--baseline", default=BASELINE_REF)
    args = parser.parse_args()
    print(json.dumps(main(args.data_dir, args.baseline), indent=1, default=str))
