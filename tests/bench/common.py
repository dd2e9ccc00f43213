"""Helpers shared by the benchmark scripts: timing, peak memory, BENCHMARKS.md sections."""

from __future__ import annotations

import platform
import re
import time
from contextlib import contextmanager
from pathlib import Path

from orientscope.store.atomic import atomic_write_bytes

ROOT = Path(__file__).resolve().parents[2]
BENCH_FILE = ROOT / "BENCHMARKS.md"
HEADER = "# OrientScope benchmarks\n\nWritten by `make bench` (each section by its script in `tests/bench/`).\n"


def machine() -> str:
    import os

    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


@contextmanager
def timer(results: dict, name: str):
    t0 = time.perf_counter()
    yield
    results[name] = time.perf_counter() - t0


def write_section(topic: str, markdown: str) -> None:
    """Replace (or append) the section between ``<!-- bench:topic -->`` markers."""
    text = BENCH_FILE.read_text() if BENCH_FILE.exists() else HEADER
    start, end = f"<!-- bench:{topic} -->", f"<!-- /bench:{topic} -->"
    block = f"{start}\n{markdown.strip()}\n\n_Measured {time.strftime('%Y-%m-%d %H:%M')} on {machine()}._\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    atomic_write_bytes(BENCH_FILE, text.encode())


# A script's linear model of QM9's gap from per-molecule composition and covariance eigenvalues (invariant by
# construction): `features(numbers, positions, offsets)` and its weights `w`, fitted on the script's `mols`.
GAP_MODEL = """
def features(numbers, positions, offsets):
    n = len(offsets) - 1
    owner = np.repeat(np.arange(n), np.diff(offsets))
    sizes = np.diff(offsets)[:, None]
    centroid = np.stack([np.bincount(owner, positions[:, k], minlength=n) for k in range(3)], 1) / sizes
    x = positions - centroid[owner]
    cov = np.zeros((n, 3, 3))
    np.add.at(cov, owner, x[:, :, None] * x[:, None, :])
    counts = np.stack([np.bincount(owner, numbers == z, minlength=n) for z in (1, 6, 7, 8, 9)], 1)
    return np.column_stack([np.ones(n), counts, np.linalg.eigvalsh(cov / sizes[:, :, None])])

w, *_ = np.linalg.lstsq(features(mols.atomic_numbers, mols.positions_angstrom, mols.offsets),
                        mols.properties["gap"].to_numpy(), rcond=None)
"""
