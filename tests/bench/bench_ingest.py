"""Benchmark `ingest`: upload-sized files through load → store → every pipeline stage.

1. A 10,000-molecule extended XYZ (real QM9 molecules): ingest plus the full
   pipeline (target ≤ 60 s on 2 cores), next to the naive baseline of reading
   the same file with ``ase.io.read(path, ":")``.
2. A generated 1,000,000-molecule NPZ (uniformly rotated 9-atom molecules):
   streaming ingest through the frames and statistics stages, throughput and
   peak memory (must stay ≤ 8 GB), next to ``np.load`` of the same file.

Each measurement runs in a fresh subprocess so its peak RSS (``VmHWM``)
is its own. Run: ``python -m tests.bench.bench_ingest [n_large]``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from tests.bench.common import ROOT, write_section

N_SMALL = 10_000
N_LARGE = 1_000_000
ATOMS_LARGE = 9

# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across fork/exec.
_MEASURE = """
import json, re, sys, time
t0 = time.perf_counter()
exec(sys.argv[1])
hwm_kb = int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
print(json.dumps({"seconds": time.perf_counter() - t0, "peak_rss_mb": hwm_kb / 1024, **globals().get("extra", {})}))
"""


def measure(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _MEASURE, code], capture_output=True, text=True, cwd=ROOT, check=False)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def make_small(path: Path) -> None:
    from orientscope.loaders.extxyz import write_extxyz
    from orientscope.loaders.qm9 import load_qm9

    write_extxyz(path, load_qm9(limit=N_SMALL))


def make_large(path: Path, n: int) -> None:
    """n copies of a rigid 9-atom molecule (ethanol-like), each uniformly rotated, written in 100k chunks."""
    from orientscope.science.rotations import random_rotations

    rng = np.random.default_rng(0)
    base = rng.normal(scale=1.2, size=(ATOMS_LARGE, 3))
    z = np.tile(np.array([6, 6, 8, 1, 1, 1, 1, 1, 1], dtype=np.int16), n)
    pos = np.empty((n * ATOMS_LARGE, 3))
    for start in range(0, n, 100_000):
        stop = min(start + 100_000, n)
        R = random_rotations(stop - start, start)
        pos[start * ATOMS_LARGE : stop * ATOMS_LARGE] = np.einsum("mij,aj->mai", R, base).reshape(-1, 3)
    np.savez(path, z=z, pos=pos, n_atoms=np.full(n, ATOMS_LARGE, dtype=np.int32), energy=rng.normal(size=n))


def main(n_large: int = N_LARGE) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        tmp = Path(tmp)
        small, large = tmp / "qm9-10k.extxyz", tmp / "large.npz"
        make_small(small)
        r = {
            "small_baseline": measure(f"from ase.io import read; extra = {{'n': len(read({str(small)!r}, ':'))}}"),
            "small_ingest": measure(
                "from orientscope.pipeline.ingest import ingest_file\n"
                f"meta = ingest_file({str(tmp / 'd1')!r}, {str(small)!r}, 'bench small')\n"
                "extra = {'n': meta['n_molecules']}"
            ),
        }
        del_small = small.stat().st_size
        small.unlink()
        make_large(large, n_large)
        r["large_baseline"] = measure(
            f"import numpy as np; f = np.load({str(large)!r}); extra = {{'n': len(f['n_atoms']), 'atoms': len(f['z'])}}; f['pos']"
        )
        r["large_ingest"] = measure(
            "from orientscope.pipeline.ingest import ingest_file\n"
            f"meta = ingest_file({str(tmp / 'd2')!r}, {str(large)!r}, 'bench large')\n"
            "extra = {'n': meta['n_molecules']}"
        )
        large_bytes = large.stat().st_size
    s, lg = r["small_ingest"], r["large_ingest"]
    md = f"""## ingest

| measurement | molecules | time | throughput | peak RSS |
|---|---:|---:|---:|---:|
| baseline: `ase.io.read(path, ':')` of the 10k extxyz ({del_small / 1e6:.1f} MB), parse only | {r["small_baseline"]["n"]:,} | {r["small_baseline"]["seconds"]:.1f} s | {r["small_baseline"]["n"] / r["small_baseline"]["seconds"]:,.0f} mol/s | {r["small_baseline"]["peak_rss_mb"]:,.0f} MB |
| **ingest + full pipeline**, 10k QM9 extxyz (target ≤ 60 s) | {s["n"]:,} | **{s["seconds"]:.1f} s** | {s["n"] / s["seconds"]:,.0f} mol/s | {s["peak_rss_mb"]:,.0f} MB |
| baseline: `np.load` of the {n_large:,}-molecule NPZ ({large_bytes / 1e6:.0f} MB) | {r["large_baseline"]["n"]:,} | {r["large_baseline"]["seconds"]:.1f} s | {r["large_baseline"]["n"] / r["large_baseline"]["seconds"]:,.0f} mol/s | {r["large_baseline"]["peak_rss_mb"]:,.0f} MB |
| **streaming ingest + full pipeline**, {n_large:,}-molecule NPZ (bound ≤ 8 GB) | {lg["n"]:,} | **{lg["seconds"]:.1f} s** | {lg["n"] / lg["seconds"]:,.0f} mol/s | **{lg["peak_rss_mb"]:,.0f} MB** |

The ingest rows include reading and validating every record, writing the
dataset, and running every registered pipeline stage (frames of the stored
poses and of the random-rotation control, statistics, and whatever other stages
are registered) in a staging folder that is renamed into place at the end.
The NPZ is read in 64 MB chunks from the zip member with the shapes checked
against the limits first; the large molecules are uniformly rotated 9-atom
copies, so the stages see a realistic unbiased set. Peak RSS is that of a fresh
process per row.
"""
    write_section("ingest", md)
    return r


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else N_LARGE), indent=1))
