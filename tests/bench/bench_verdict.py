"""Calibration of the alignment verdict (issue 28) -> section ``verdict`` of BENCHMARKS.md.

QM9 molecules drawn at random (seeded) are the truth in two states: their
original poses (aligned, as QM9 is) and every molecule Haar-rotated (not
aligned). Each draw goes through the same science functions the pipeline's
stages call, in process, on arrays: canonical frames, the k-NN KL with its
interval, the reference-orientation KS test, the three rotation classifiers
(the models stage's settings; only their bootstrap of the accuracy CI is
shortened, which no p-value uses), then :func:`alignment_verdict`.

Measured:

* power: the share of original-pose sets detected, split into ``aligned`` and
  ``weakly_aligned``;
* false positives on Haar-rotated sets, at α = 0.05 and at the default α;
* coverage of the KL interval: on Haar sets its target is the null mean at N,
  on aligned sets the mean estimate over the aligned draws at that N;
* the KL null's fitted law against a fresh Monte-Carlo run of Haar
  quaternions (its tail at the p-values the rule uses).

The classifiers cost seconds per draw (2.5 s at N = 200, 5-12 s at N = 1,000 on
the shared 2-core machine), so only the first ``ORIENTSCOPE_BENCH_VERDICT_CLASSIFIER_DRAWS``
draws of each kind and N run them (the full rule); every draw runs KL and KS,
whose two-test family (the rule without classifiers) and the KL interval are
measured over all of them.

Run: ``nice -n 10 python -m tests.bench.bench_verdict``. The draw counts can be
scaled down while developing with ``ORIENTSCOPE_BENCH_VERDICT_SCALE`` (e.g. 0.05).
"""

from __future__ import annotations

import os
import time

import numpy as np

from orientscope.loaders.qm9 import load_qm9
from orientscope.science.classifiers import ClassifierSettings, detect_rotation
from orientscope.science.frames import compute_frames
from orientscope.science.rotations import derived_seed, random_rotations, rotate_molecules
from orientscope.science.so3_partial import kl_exact
from orientscope.science.so3_stats import kl_to_uniform, reference_and_ks
from orientscope.science.verdict import DEFAULT_ALPHA, KL_NULL_MC, alignment_verdict, kl_null, kl_pvalue
from tests.bench.common import write_section

SIZES = (20, 50, 100, 200, 500, 1000)
POWER_DRAWS = 200
NULL_DRAWS = 1000
LOOSE_ALPHA = 0.05
SEED = 28
CLASSIFIER = ClassifierSettings(n_bootstrap=20)
NULL_MC_DRAWS = 20_000
NULL_MC_SIZES = (20, 100, 1000)


def _scale() -> float:
    return float(os.environ.get("ORIENTSCOPE_BENCH_VERDICT_SCALE", "1"))


def _classifier_draws() -> int:
    return int(os.environ.get("ORIENTSCOPE_BENCH_VERDICT_CLASSIFIER_DRAWS", str(NULL_DRAWS)))


def draw_set(qm9, n: int, seed: int, haar: bool):
    """(positions, offsets, atomic_numbers) of ``n`` QM9 molecules drawn at random; Haar-rotated if ``haar``."""
    rng = np.random.default_rng(seed)
    picked = np.sort(rng.choice(qm9.n_molecules, n, replace=False))
    starts, sizes = qm9.offsets[picked], np.diff(qm9.offsets)[picked]
    rows = np.concatenate([np.arange(s, s + k) for s, k in zip(starts, sizes, strict=True)])
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    positions = qm9.positions_angstrom[rows]
    if haar:
        positions = rotate_molecules(positions, offsets, random_rotations(n, derived_seed(seed, "haar")))
    return positions, offsets, qm9.atomic_numbers[rows]


def evaluate(positions, offsets, z, seed: int, classifiers: bool) -> dict:
    """The figures the verdict reads, from the same science functions as the stages."""
    frames = compute_frames(positions, offsets, z)
    n = len(offsets) - 1
    kl = kl_exact(frames.quaternions.copy(), 5)
    ks = reference_and_ks(frames.rotations, seed)["ks"]
    clf = []
    if classifiers:
        negatives = random_rotations(n, derived_seed(seed, "negatives"))
        clf = detect_rotation(positions, offsets, z, frames, negatives, settings=CLASSIFIER, seed=seed).metrics
    return {"n": n, "kl": kl, "ks": ks, "classifiers": clf}


def _codes(fig: dict, classifiers: list[dict]) -> tuple[str, str]:
    args = (fig["n"], fig["kl"], classifiers, fig["ks"])
    return alignment_verdict(*args)["code"], alignment_verdict(*args, alpha=LOOSE_ALPHA)["code"]


def run_size(qm9, n: int, draws: int, haar: bool, with_classifiers: int) -> list[dict]:
    out = []
    for i in range(draws):
        seed = derived_seed(SEED, f"{'haar' if haar else 'orig'}:{n}:{i}")
        fig = evaluate(*draw_set(qm9, n, seed, haar), seed, classifiers=i < with_classifiers)
        row = {"kl": fig["kl"]["value"], "ci": fig["kl"]["ci95"], "full": bool(fig["classifiers"])}
        row["code"], row["loose"] = _codes(fig, fig["classifiers"])
        row["code_kl_ks"], row["loose_kl_ks"] = _codes(fig, [])
        out.append(row)
    return out


def _detected(rows: list[dict], key: str) -> int:
    return sum(r[key] in ("aligned", "weakly_aligned") for r in rows)


def null_law_check(draws: int) -> list[dict]:
    """Share of fresh Haar-quaternion sets whose KL p falls below 0.05, 1e-2 and 1e-3 (fitted law)."""
    rng = np.random.default_rng(derived_seed(SEED, "kl-null-check"))
    rows = []
    for n in NULL_MC_SIZES:
        p = np.empty(draws)
        for i in range(draws):
            q = rng.normal(size=(n, 4))
            q /= np.linalg.norm(q, axis=1, keepdims=True)
            p[i] = kl_pvalue(kl_to_uniform(q, 5, n_bootstrap=0).value, n)
        rows.append({"n": n, **{a: float(np.mean(p < a)) for a in (0.05, 1e-2, 1e-3)}})
    return rows


def _coverage(rows: list[dict], target: float) -> float:
    return float(np.mean([r["ci"][0] <= target <= r["ci"][1] for r in rows]))


def measure_size(qm9, n: int, scale: float) -> dict:
    """Power, false positives and KL coverage at one N."""
    t = time.perf_counter()
    m = max(2, round(_classifier_draws() * scale))
    orig = run_size(qm9, n, max(2, round(POWER_DRAWS * scale)), haar=False, with_classifiers=m)
    haar = run_size(qm9, n, max(2, round(NULL_DRAWS * scale)), haar=True, with_classifiers=m)
    full_orig, full_haar = [r for r in orig if r["full"]], [r for r in haar if r["full"]]
    codes = [r["code"] for r in full_orig]
    aligned_mean = float(np.mean([r["kl"] for r in orig]))
    row = {
        "n": n,
        "draws": (len(orig), len(haar)),
        "full_draws": (len(full_orig), len(full_haar)),
        "detected": _detected(full_orig, "code") / len(full_orig),
        "aligned": codes.count("aligned"),
        "weak": codes.count("weakly_aligned"),
        "fp_loose": _detected(full_haar, "loose"),
        "fp_default": _detected(full_haar, "code"),
        "detected_kl_ks": _detected(orig, "code_kl_ks") / len(orig),
        "fp_loose_kl_ks": _detected(haar, "loose_kl_ks"),
        "fp_default_kl_ks": _detected(haar, "code_kl_ks"),
        "cover_haar": _coverage(haar, kl_null(n)["mean"]),
        "cover_aligned": _coverage(orig, aligned_mean),
        "aligned_mean": aligned_mean,
        "seconds": time.perf_counter() - t,
    }
    return row


def write_report(lines: list[dict], null_rows: list[dict], mc_draws: int, scale: float, load, total: float) -> None:
    full_table = "\n".join(
        f"| {r['n']} | {r['full_draws'][0]} | {r['detected']:.1%} ({r['aligned']} aligned, {r['weak']} weakly) | "
        f"{r['full_draws'][1]} | {r['fp_loose']} | {r['fp_default']} | {r['seconds']:.0f} s |"
        for r in lines
    )
    cheap_table = "\n".join(
        f"| {r['n']} | {r['draws'][0]} / {r['draws'][1]} | {r['detected_kl_ks']:.1%} | {r['fp_loose_kl_ks']} | "
        f"{r['fp_default_kl_ks']} | {r['cover_haar']:.1%} | {r['cover_aligned']:.1%} (target {r['aligned_mean']:.3f}) |"
        for r in lines
    )
    null_table = "\n".join(f"| {r['n']} | {r[0.05]:.4f} | {r[1e-2]:.4f} | {r[1e-3]:.4f} |" for r in null_rows)
    write_section(
        "verdict",
        f"""## verdict: calibration of the alignment verdict (issue 28)

QM9 molecules drawn at random (seeded, `SEED = {SEED}`): original poses are the aligned truth, the same
draws with every molecule Haar-rotated the null. In process on arrays (frames, KL with its interval, KS,
the three classifiers with the models stage's settings, then `alignment_verdict`), not through ingest.
Default α = {DEFAULT_ALPHA:g} (Holm over every test); the α = {LOOSE_ALPHA} columns rerun the same evidence.
Targets: detected ≥ 95 % from N = 100; false positives at α = 0.05 within 33–68 per 1,000, at the default
α ≤ 3 per 1,000; KL interval coverage 93–97 % (Haar target: the null mean at N; aligned target: the mean
estimate over the aligned draws at N).

The full rule (KL, three classifiers, KS): the classifiers cost seconds per draw, so only the first draws
of each N run them.

| N | original draws | detected | Haar draws | false pos. α = 0.05 | false pos. default α | time (all draws of N) |
|---|---|---|---|---|---|---|
{full_table}

Every draw, KL and KS only (the rule's two-test family without the classifiers), and the KL interval:

| N | draws (orig / Haar) | detected | false pos. α = 0.05 | false pos. default α | KL CI coverage, Haar | KL CI coverage, aligned |
|---|---|---|---|---|---|---|
{cheap_table}

KL null law (Pearson III fit from a Monte-Carlo run, seed {KL_NULL_MC["seed"]}) against {mc_draws:,} fresh Haar
quaternion sets per N: share of p-values below each level (nominal 0.05, 0.01, 0.001).

| N | p < 0.05 | p < 0.01 | p < 0.001 |
|---|---|---|---|
{null_table}

Run time {total / 60:.1f} min for N = {", ".join(str(r["n"]) for r in lines)} (scale {scale:g}, classifier draws {_classifier_draws()} per N and kind before
scaling), under `nice`; load average at start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on a shared 2-core machine.
""",
    )


def main() -> None:
    scale = _scale()
    t0 = time.perf_counter()
    load = os.getloadavg()
    mc_draws = max(100, round(NULL_MC_DRAWS * scale))
    null_rows = null_law_check(mc_draws)
    print(null_rows, flush=True)
    qm9 = load_qm9()
    lines = []
    for n in SIZES:  # the section is rewritten after each N, so a run cut short still reports what it measured
        lines.append(measure_size(qm9, n, scale))
        print(lines[-1], flush=True)
        write_report(lines, null_rows, mc_draws, scale, load, time.perf_counter() - t0)


if __name__ == "__main__":
    main()
