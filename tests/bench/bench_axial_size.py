"""The axial effect size on known truths -> section ``axial-size`` of BENCHMARKS.md.

Axes drawn from Watson laws of known concentration κ about z (κ = 0 is uniform; κ < 0 a girdle about the
xy-plane), and perfectly aligned axes, at several N. For each: how often the size's 95 % interval
(:func:`orientscope.science.axial.axial_size`) covers the law's own KL, and the words the verdict gives
a set whose only test is Bingham's (:func:`orientscope.science.verdict.alignment_verdict`). On uniform axes
the verdict must say "strong" no more often than the family's error rate α.

Mixtures of axes along z and uniform ones check a law that is not Watson's (the interval uses the fitted
Watson law's spread, which a mixture exceeds). ``python -m tests.bench.bench_axial_size [draws]`` (default
1,000 per cell).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from orientscope.science.axial import _mean_t, axial_test, watson_axes, watson_kl
from orientscope.science.rotations import derived_seed
from orientscope.science.verdict import STRONG_AXIAL_KL, alignment_verdict
from tests.bench.common import write_section

SIZES = (10, 30, 100, 1000)
KAPPAS = (0.0, 1.0, 2.0, 4.0, 10.0, 100.0, -4.0, -20.0)
SEED = 4242
# Shares of axes along z in a mixture with uniform ones: not Watson laws, so the fitted law's spread is not theirs.
MIXTURES = (0.1, 0.2, 0.5)


def _mixture(share: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, 3) axes: each along ±z with probability ``share``, else uniform (a law that is not Watson's)."""
    axes = watson_axes(0.0, n, rng)
    along = rng.random(n) < share
    axes[along] = [0.0, 0.0, 1.0]
    return axes


def cell(kappa: float | None, n: int, draws: int, share: float | None = None) -> dict:
    """Coverage of the true KL and the verdict's words over ``draws`` sets (κ None: every axis along ±z;
    ``share``: a mixture of axes along z and uniform ones, whose target is the Watson KL of its population T)."""
    rng = np.random.default_rng(derived_seed(SEED, f"{kappa}:{n}" if share is None else f"mixture:{share}:{n}"))
    if share is not None:
        truth = watson_kl(share + (1 - share) / 3)  # the population T's largest eigenvalue
    else:
        truth = watson_kl(1.0) if kappa is None else watson_kl(_mean_t(kappa))
    covered, words = 0, {"strong": 0, "uncertain": 0, "small": 0, None: 0}
    for _ in range(draws):
        if share is not None:
            axes = _mixture(share, n, rng)
        elif kappa is None:
            axes = np.zeros((n, 3))
            axes[:, 2] = rng.choice([-1.0, 1.0], n)
        else:
            axes = watson_axes(kappa, n, rng)
        test = axial_test(axes)
        low, high = test["size"]["ci95"]
        covered += low - 1e-12 <= truth <= high + 1e-12
        words[alignment_verdict(n, axial=test)["effect"]] += 1
    return {"truth": truth, "coverage": covered / draws, **{str(k): v / draws for k, v in words.items()}}


def main(draws: int = 1000) -> None:
    start = time.time()
    rows = []
    for kappa in (*KAPPAS, None):
        for n in SIZES:
            r = cell(kappa, n, draws)
            rows.append(
                f"| {'all along z' if kappa is None else kappa} | {n} | {r['truth']:.3f} | {100 * r['coverage']:.1f} % "
                f"| {100 * r['strong']:.1f} % | {100 * r['uncertain']:.1f} % | {100 * r['small']:.1f} % "
                f"| {100 * r['None']:.1f} % |"
            )
            print(rows[-1], flush=True)
    for share in MIXTURES:
        for n in SIZES[1:]:
            r = cell(None, n, draws, share)
            rows.append(
                f"| mixture: {share:.0%} along z | {n} | {r['truth']:.3f} | {100 * r['coverage']:.1f} % "
                f"| {100 * r['strong']:.1f} % | {100 * r['uncertain']:.1f} % | {100 * r['small']:.1f} % "
                f"| {100 * r['None']:.1f} % |"
            )
            print(rows[-1], flush=True)
    load = os.getloadavg()
    md = "\n".join(
        [
            f"Axes from Watson laws exp(κ (z·x)²) (κ = 0 uniform, κ < 0 a girdle), {draws} seeded sets per cell "
            f"(seed {SEED}); the size is the KL (nats) of the fitted Watson law, its bar {STRONG_AXIAL_KL}. "
            "'covers' = the 95 % interval holds the law's own KL; the verdict's effect for a set whose only "
            "test is Bingham's (α = 1e-3; 'none' = not detected).",
            "",
            "| κ | N | true KL | covers | strong | uncertain | small | none |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"Wall time {time.time() - start:.0f} s; load average at the end {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f}.",
        ]
    )
    write_section("axial-size", md)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
