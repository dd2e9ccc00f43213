"""The KL bar of the verdict's strength at any N -> section ``kl-bar`` of BENCHMARKS.md (issue 40).

The verdict sizes KL by its interval at the set's own N against :data:`~orientscope.science.verdict.STRONG_KL`
(below 100,000 molecules there is no KL at n). That interval is for the expected estimate at N, so the bar
is conservative at small N only if the expected estimate grows with N towards the population's KL. This
benchmark measures it on sets whose law is known, in process on arrays (k = 5):

* concentrated sets: unit quaternions (s·z, 1) normalised, z standard normal in 3-d, for several spreads s;
* multi-modal sets: the same around one of six fixed random poses, drawn uniformly (QM9-like: a few
  preferred poses, each with its spread);
* Haar sets (the null).

Per set and N: the mean estimate and its standard error over the draws, the interval's coverage of that
mean, and where the interval lies against the bar (above / across / below). QM9 subsets are in section
``verdict`` (``bench_verdict.py``) and ``kl-interval``.

``python -m tests.bench.bench_kl_bar [draws]`` (default 200 per N up to 300, a fifth of that above).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from orientscope.science.rotations import derived_seed
from orientscope.science.so3_partial import kl_exact
from orientscope.science.verdict import STRONG_KL, size_reading
from tests.bench.common import write_section

SEED = 4000
SIZES = (20, 30, 50, 100, 300, 1000, 3000)
MODES = 6


def _concentrated(rng, n: int, spread: float) -> np.ndarray:
    q = np.column_stack([spread * rng.normal(size=(n, 3)), np.ones(n)])
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _times(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise quaternion product a·b, (n, 4) scalar-last."""
    va, wa, vb, wb = a[:, :3], a[:, 3], b[:, :3], b[:, 3]
    return np.column_stack([wa[:, None] * vb + wb[:, None] * va + np.cross(va, vb), wa * wb - np.sum(va * vb, 1)])


def laws(modes: np.ndarray) -> dict:
    """Name -> draw(rng, n) of each law measured."""

    def haar(rng, n):
        q = rng.normal(size=(n, 4))
        return q / np.linalg.norm(q, axis=1, keepdims=True)

    def concentrated(spread):
        return lambda rng, n: _concentrated(rng, n, spread)

    def mixture(spread):
        return lambda rng, n: _times(modes[rng.integers(0, len(modes), n)], _concentrated(rng, n, spread))

    out = {"Haar": haar}
    out.update({f"concentrated s = {s:g}": concentrated(s) for s in (0.1, 0.3, 0.6, 1.5)})
    out.update({f"{MODES} modes, s = {s:g}": mixture(s) for s in (0.05, 0.2, 0.5)})
    return out


def measure(draw, name: str, n: int, count: int) -> dict:
    rng = np.random.default_rng(derived_seed(SEED, f"{name}:{n}"))
    values, cis = np.empty(count), np.empty((count, 2))
    for i in range(count):
        fit = kl_exact(draw(rng, n), 5, overwrite=True)
        values[i], cis[i] = fit["value"], fit["ci95"]
    mean = float(values.mean())
    readings = [size_reading(v, ci, STRONG_KL) for v, ci in zip(values, cis, strict=True)]
    return {
        "mean": mean,
        "se": float(values.std(ddof=1) / np.sqrt(count)),
        "cover": float(np.mean((cis[:, 0] <= mean) & (mean <= cis[:, 1]))),
        "reading": {r: readings.count(r) for r in ("strong", "uncertain", "small")},
        "count": count,
    }


def main(argv: list[str] | None = None) -> None:
    argv = argv or []
    draws = int(argv[0]) if argv else 200
    t0, load = time.perf_counter(), os.getloadavg()
    modes = _concentrated(np.random.default_rng(derived_seed(SEED, "modes")), MODES, 3.0)
    mean_rows, bar_rows = [], []
    for name, draw in laws(modes).items():
        rows = [measure(draw, name, n, draws if n <= 300 else max(10, draws // 5)) for n in SIZES]
        # Growth: no mean falls below an earlier one by more than three standard errors of the two.
        drops = [
            (SIZES[i], SIZES[j])
            for i in range(len(rows))
            for j in range(i + 1, len(rows))
            if rows[j]["mean"] < rows[i]["mean"] - 3 * np.hypot(rows[i]["se"], rows[j]["se"])
        ]
        mean_rows.append(
            f"| {name} | "
            + " | ".join(f"{r['mean']:.3f} ± {r['se']:.3f} ({r['cover']:.0%})" for r in rows)
            + f" | {'yes' if not drops else 'no: ' + ', '.join(f'{a}→{b}' for a, b in drops)} |"
        )
        bar_rows.append(
            f"| {name} | "
            + " | ".join(" / ".join(str(r["reading"][k]) for k in ("strong", "uncertain", "small")) for r in rows)
            + " |"
        )
        print(mean_rows[-1], bar_rows[-1], flush=True)
    head = " | ".join(f"N = {n:,}" for n in SIZES)
    rule = "---|" * len(SIZES)
    write_section(
        "kl-bar",
        f"""## kl-bar: the verdict's KL bar at any N (issue 40)

`python -m tests.bench.bench_kl_bar {draws}`: {draws} sets per law and N up to 300, {max(10, draws // 5)} above,
k = 5, seed {SEED}, in process on arrays. The verdict sizes KL by its interval at the set's own N against
the bar {STRONG_KL:g} (`STRONG_KL`; KL at n where a set has 100,000 molecules). Laws: Haar (the null);
unit quaternions (s·z, 1) normalised, z standard normal, for spreads s; the same around one of {MODES} fixed
random poses ("modes").

Mean estimate ± its standard error over the sets, and in brackets the share of the report's intervals
that hold that mean. "grows" says whether the mean never falls, N to a larger N, by more than three
standard errors: where it grows, an interval above the bar at a small N stays above it at larger N.

| law | {head} | grows |
|---|{rule}---|
{chr(10).join(mean_rows)}

Where each set's interval lies against the bar {STRONG_KL:g}: above (strong) / across (uncertain) / below (small),
whether or not the KL test rejected.

| law | {head} |
|---|{rule}
{chr(10).join(bar_rows)}

Run time {(time.perf_counter() - t0) / 60:.1f} min; load average at start {load[0]:.1f} / {load[1]:.1f} /
{load[2]:.1f} on a shared 2-core machine.
""",
    )


if __name__ == "__main__":
    main(sys.argv[1:])
