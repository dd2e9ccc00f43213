"""Calibration of the alignment verdict (issue 28) -> section ``verdict`` of BENCHMARKS.md.

QM9 molecules drawn at random (seeded) are the truth in two states: their
original poses (aligned, as QM9 is) and every molecule Haar-rotated (not
aligned). Each draw goes through the same science functions the pipeline's
stages call, in process, on arrays: canonical frames, the k-NN KL with its
interval, the reference-orientation KS test, the three rotation classifiers
(the models stage's settings; only their bootstrap of the accuracy CI is
shortened, which no p-value uses), then :func:`alignment_verdict`.

Measured:

* power: the share of original-pose sets detected, split by the effect the rule reads
  (strong, uncertain, small: each rejecting test's interval against its bar), and the
  classifiers' mean accuracy (the sizes' estimates);
* the KL bar (``STRONG_KL``): where each set's KL interval lies against it (above, across,
  below) on original-pose and on Haar-rotated sets, whether or not the test rejected;
* false positives on Haar-rotated sets, at α = 0.05 and at the default α, for
  the whole rule and for each test on its own (raw p below the level), and how
  many of them the rule called strong;
* coverage of the KL interval: on Haar sets its target is the null mean at N,
  on aligned sets the mean estimate over the aligned draws at that N;
* the KL null's fitted law against a fresh Monte-Carlo run of Haar
  quaternions (its tail at the p-values the rule uses).

Draws run in a process pool (each worker loads QM9 once). The classifiers
dominate the cost (about 1 s per draw at N = 100, 1-4 s at N = 1,000 on the
shared 2-core machine), so the draw counts are parameters:
``python -m tests.bench.bench_verdict [power_draws null_draws classifier_draws workers null_law_draws]``
(defaults 200, 1,000, all, 2, 20,000). Draws past ``classifier_draws`` run KL and KS
only; they count towards coverage and the KL + KS table. The section is
rewritten after each N, and states the counts that ran.
"""

from __future__ import annotations

import os
import sys
import time
from multiprocessing import Pool

import numpy as np

from orientscope.loaders.qm9 import load_qm9
from orientscope.science.classifiers import (
    FEATURE_SETS,
    ClassifierSettings,
    composition_features,
    detect_rotation,
    fold_model,
    grouped_folds,
    held_out_pvalue,
    pose_features,
)
from orientscope.science.frames import compute_frames
from orientscope.science.rotations import derived_seed, random_rotations, rotate_molecules
from orientscope.science.so3_partial import kl_exact
from orientscope.science.so3_stats import kl_to_uniform, reference_and_ks
from orientscope.science.verdict import (
    DEFAULT_ALPHA,
    KL_NULL_MC,
    KL_SPREAD_GROWTH,
    RULE_VERSION,
    STRONG_ACCURACY,
    STRONG_KL,
    alignment_verdict,
    kl_null,
    kl_pvalue,
    size_reading,
)
from tests.bench.common import write_section

SIZES = (20, 50, 100, 200, 500, 1000)
POWER_DRAWS = 200
NULL_DRAWS = 1000
LOOSE_ALPHA = 0.05
SEED = 28
CLASSIFIER = ClassifierSettings(n_bootstrap=20)
NULL_MC_DRAWS = 20_000
NULL_MC_SIZES = (20, 100, 1000)
FIRST_FOLD_CHECKS = 3  # Haar draws per N whose first-fold p-values are checked against detect_rotation
TESTS = ("KL", "frame classifier", "frame+composition classifier", "atom-order classifier", "KS")
READINGS = ("strong", "uncertain", "small")

_QM9 = None  # one copy per worker process


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


def first_fold_tests(positions, offsets, z, frames, negatives, seed: int) -> list[dict]:
    """Each classifier's held-out test as :func:`detect_rotation` computes it, from its first fold's model only.

    The verdict reads a classifier's p-value from the molecules of fold 0, scored by the model that never saw
    them, so that p needs one fit of the three. On Haar draws, where only detection counts, this saves two
    thirds of the cost. ``accuracy`` here is fold 0's, not the cross-fitted one (no Haar row reads it).
    :func:`one_draw` checks the p-values against :func:`detect_rotation` on the first draws of each N.
    """
    rotated = rotate_molecules(positions, offsets, negatives)
    rotated_frames = compute_frames(rotated, offsets, z)
    composition = composition_features(z, offsets)
    test = grouped_folds(len(offsets) - 1, CLASSIFIER.n_folds, seed) == 0
    fold = np.where(test, 0, 1)
    out = []
    for i, fs in enumerate(FEATURE_SETS):
        x_orig = pose_features(fs, frames, composition, positions, offsets)
        x_rot = pose_features(fs, rotated_frames, composition, rotated, offsets)
        model = fold_model(x_orig, x_rot, fold, 0, CLASSIFIER, seed)
        says_stored = np.r_[model.predict_proba(x_orig[test])[:, 1], model.predict_proba(x_rot[test])[:, 1]] > 0.5
        half = int(test.sum())
        correct, rows = int(says_stored[:half].sum() + (~says_stored[half:]).sum()), 2 * half
        p = held_out_pvalue(correct, rows, seed + i)  # detect_rotation's metrics seed for feature set i
        constant = bool(says_stored.all() or not says_stored.any())
        out.append(
            {"features": fs, "accuracy": correct / rows, "pvalue": float(p), "n_pvalue": rows, "constant": constant}
        )
    return out


def evaluate(positions, offsets, z, seed: int, classifiers: str) -> dict:
    """The figures the verdict reads, from the same science functions as the stages.

    ``classifiers``: "" (none), "full" (:func:`detect_rotation`), "first-fold" or "both" (checked equal).
    """
    frames = compute_frames(positions, offsets, z)
    n = len(offsets) - 1
    kl = kl_exact(frames.quaternions.copy(), 5, seed=seed)
    ks = reference_and_ks(frames.rotations, seed)["ks"]
    clf = []
    negatives = random_rotations(n, derived_seed(seed, "negatives"))
    if classifiers in ("full", "both"):
        clf = detect_rotation(positions, offsets, z, frames, negatives, settings=CLASSIFIER, seed=seed).metrics
    if classifiers in ("first-fold", "both"):
        quick = first_fold_tests(positions, offsets, z, frames, negatives, seed)
        if classifiers == "both":
            for a, b in zip(clf, quick, strict=True):
                if (a["pvalue"], a["n_pvalue"], a["constant"]) != (b["pvalue"], b["n_pvalue"], b["constant"]):
                    raise AssertionError(f"first-fold p {b} differs from detect_rotation's {a}")
        else:
            clf = quick
    return {"n": n, "kl": kl, "ks": ks, "classifiers": clf}


def _load() -> None:
    global _QM9
    _QM9 = load_qm9()


def one_draw(job: tuple[int, int, bool, bool]) -> dict:
    """One draw's verdicts (full rule and KL + KS only, at both α), raw p per test and KL interval."""
    n, i, haar, with_classifiers = job
    seed = derived_seed(SEED, f"{'haar' if haar else 'orig'}:{n}:{i}")
    mode = "" if not with_classifiers else "full" if not haar else "both" if i < FIRST_FOLD_CHECKS else "first-fold"
    fig = evaluate(*draw_set(_QM9, n, seed, haar), seed, classifiers=mode)
    full = alignment_verdict(fig["n"], fig["kl"], fig["classifiers"], fig["ks"])
    cheap = alignment_verdict(fig["n"], fig["kl"], [], fig["ks"])
    return {
        "haar": haar,
        "kl": fig["kl"]["value"],
        "ci": fig["kl"]["ci95"],
        "full": with_classifiers,
        "code": full["code"],
        "effect": full["effect"],
        "kl_reading": size_reading(fig["kl"]["value"], fig["kl"]["ci95"], STRONG_KL),
        "loose": _code_at(full, LOOSE_ALPHA),
        "code_kl_ks": cheap["code"],
        "effect_kl_ks": cheap["effect"],
        "loose_kl_ks": _code_at(cheap, LOOSE_ALPHA),
        "p": {e["test"]: e["pvalue"] for e in full["evidence"]},
        "accuracy": {c["features"]: c["accuracy"] for c in fig["classifiers"]},
    }


def _code_at(verdict: dict, alpha: float) -> str:
    """The detected / not-detected part of the rule at another α, from the same Holm-adjusted evidence."""
    return "detected" if any(e["p_holm"] < alpha for e in verdict["evidence"]) else "not_detected"


def _detected(rows: list[dict], key: str) -> int:
    return sum(r[key] in ("aligned", "weakly_aligned", "detected") for r in rows)


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


def measure_size(pool, n: int, power: int, null: int, with_classifiers: int) -> dict:
    """Power, false positives (whole rule and per test), tier and KL coverage at one N."""
    t = time.perf_counter()
    jobs = [(n, i, False, i < with_classifiers) for i in range(power)]
    jobs += [(n, i, True, i < with_classifiers) for i in range(null)]
    rows = pool.map(one_draw, jobs, chunksize=4)
    orig, haar = [r for r in rows if not r["haar"]], [r for r in rows if r["haar"]]
    full_orig, full_haar = [r for r in orig if r["full"]], [r for r in haar if r["full"]]
    codes = [r["code"] for r in full_orig]
    aligned_mean = float(np.mean([r["kl"] for r in orig]))
    return {
        "n": n,
        "draws": (len(orig), len(haar)),
        "full_draws": (len(full_orig), len(full_haar)),
        "detected": _detected(full_orig, "code") / max(1, len(full_orig)),
        "effects": {e: sum(r["effect"] == e for r in full_orig) for e in READINGS},
        "not_detected": codes.count("not_detected") + codes.count("too_few"),
        "fp_loose": _detected(full_haar, "loose"),
        "fp_default": _detected(full_haar, "code"),
        "fp_strong": sum(r["effect"] == "strong" for r in full_haar),
        "kl_bar": {
            kind: {e: sum(r["kl_reading"] == e for r in rs) for e in READINGS}
            for kind, rs in (("orig", orig), ("haar", haar))
        },
        "per_test": {
            t_: (sum(r["p"].get(t_, 1.0) < LOOSE_ALPHA for r in full_haar), sum(t_ in r["p"] for r in full_haar))
            for t_ in TESTS
        },
        "accuracy": {
            f: float(np.mean([r["accuracy"][f] for r in full_orig if f in r["accuracy"]] or [np.nan]))
            for f in STRONG_ACCURACY
        },
        "detected_kl_ks": _detected(orig, "code_kl_ks") / len(orig),
        "fp_loose_kl_ks": _detected(haar, "loose_kl_ks"),
        "fp_default_kl_ks": _detected(haar, "code_kl_ks"),
        "effects_kl_ks": {e: sum(r["effect_kl_ks"] == e for r in orig) for e in READINGS},
        "fp_strong_kl_ks": sum(r["effect_kl_ks"] == "strong" for r in haar),
        "cover_haar": _coverage(haar, kl_null(n)["mean"]),
        "cover_aligned": _coverage(orig, aligned_mean),
        "aligned_mean": aligned_mean,
        "seconds": time.perf_counter() - t,
    }


def write_report(lines: list[dict], null_rows: list[dict], mc_draws: int, counts: dict, load, total: float) -> None:
    full_table = "\n".join(
        f"| {r['n']} | {r['full_draws'][0]} | {r['detected']:.1%} | "
        + " / ".join(str(r["effects"][e]) for e in READINGS)
        + " | "
        + " / ".join(f"{a:.2f}" for a in r["accuracy"].values())
        + f" | {r['full_draws'][1]} | {r['fp_loose']} | {r['fp_default']} | {r['fp_strong']} | {r['seconds']:.0f} s |"
        for r in lines
    )
    bar_table = "\n".join(
        f"| {r['n']} | "
        + " | ".join(" / ".join(str(r["kl_bar"][kind][e]) for e in READINGS) for kind in ("orig", "haar"))
        + f" | {r['aligned_mean']:.3f} |"
        for r in lines
    )
    per_test = "\n".join(
        f"| {r['n']} | " + " | ".join(f"{k} / {m}" for k, m in r["per_test"].values()) + " |" for r in lines
    )
    cheap_table = "\n".join(
        f"| {r['n']} | {r['draws'][0]} / {r['draws'][1]} | {r['detected_kl_ks']:.1%} | "
        + " / ".join(str(r["effects_kl_ks"][e]) for e in READINGS)
        + f" | {r['fp_loose_kl_ks']} | {r['fp_default_kl_ks']} | {r['fp_strong_kl_ks']} | {r['cover_haar']:.1%} | "
        f"{r['cover_aligned']:.1%} (target {r['aligned_mean']:.3f}) |"
        for r in lines
    )
    null_table = "\n".join(f"| {r['n']} | {r[0.05]:.4f} | {r[1e-2]:.4f} | {r[1e-3]:.4f} |" for r in null_rows)
    write_section(
        "verdict",
        f"""## verdict: calibration of the alignment verdict (issues 28 and 40; rule version {RULE_VERSION})

QM9 molecules drawn at random (seeded, `SEED = {SEED}`): original poses are the aligned truth, the same
draws with every molecule Haar-rotated the null. In process on arrays (frames, KL with its interval, KS,
the three classifiers with the models stage's settings, then `alignment_verdict`), not through ingest.
Default α = {DEFAULT_ALPHA:g} (Holm over every test); the α = {LOOSE_ALPHA} columns rerun the same evidence.
The effect of a detected set is read from the tests that rejected, each size's 95 % interval against its bar
(accuracy {" / ".join(f"{b:.0%}" for b in STRONG_ACCURACY.values())} for the frame / frame+composition /
atom-order classifiers, KL {STRONG_KL:g}): strong when one lies above, small when all lie below, else uncertain.
Targets: detected ≥ 95 % from N = 100; false positives at α = 0.05 within 33–68 per 1,000, at the default
α ≤ 3 per 1,000, strong or not (a strong effect is claimed only on a detection); KL interval coverage 93–97 % (Haar target: the null mean at N;
aligned target: the mean estimate over the aligned draws at N).

Counts that ran: {counts["power"]} original and {counts["null"]} Haar draws per N; the first
{counts["classifiers"]} of each kind run the full rule (KL, three classifiers, KS). Original draws run the
classifiers' full cross-fit; Haar draws, where only detection counts, read each classifier's p from its first
fold's model alone, the p the verdict uses (checked equal to the cross-fit's on {FIRST_FOLD_CHECKS} draws per N).

| N | original draws | detected | effect strong / uncertain / small | mean accuracy frame / frame+comp. / atom-order | Haar draws | false pos. α = 0.05 | false pos. default α | of them strong | time (all draws of N) |
|---|---|---|---|---|---|---|---|---|---|
{full_table}

The KL bar ({STRONG_KL:g}) on every draw, rejected or not: the KL interval (for the expected estimate at N)
lies above / across / below it. On Haar sets an interval above the bar would make KL alone call the effect
strong; on QM9 subsets the estimate grows with N (last column: their mean estimate), so an interval above
the bar at small N stays above it at larger N.

| N | QM9 subsets: above / across / below | Haar sets: above / across / below | mean KL, QM9 subsets |
|---|---|---|---|
{bar_table}

Each test on its own on the same Haar draws: raw p < 0.05 (nominal 5 %).

| N | KL | frame classifier | frame+composition classifier | atom-order classifier | KS |
|---|---|---|---|---|---|
{per_test}

Every draw, KL and KS only (the rule's two-test family without the classifiers), and the KL interval
(a Neyman interval: the null law at N scaled to the variance sd0² + {KL_SPREAD_GROWTH:g}·T/N at each target T):

| N | draws (orig / Haar) | detected | effect strong / uncertain / small | false pos. α = 0.05 | false pos. default α | of them strong | KL CI coverage, Haar | KL CI coverage, aligned |
|---|---|---|---|---|---|---|---|---|
{cheap_table}

KL null law (Pearson III fit from a Monte-Carlo run, seed {KL_NULL_MC["seed"]}) against {mc_draws:,} fresh Haar
quaternion sets per N: share of p-values below each level (nominal 0.05, 0.01, 0.001).

| N | p < 0.05 | p < 0.01 | p < 0.001 |
|---|---|---|---|
{null_table}

Run time {total / 60:.1f} min for N = {", ".join(str(r["n"]) for r in lines)} with {counts["workers"]} worker
processes at niceness {os.nice(0)}; load average at start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on a shared 2-core machine.
""",
    )


def main(argv: list[str] | None = None) -> None:
    argv = argv or []
    power, null = (int(argv[0]) if argv else POWER_DRAWS), (int(argv[1]) if len(argv) > 1 else NULL_DRAWS)
    counts = {
        "power": power,
        "null": null,
        "classifiers": int(argv[2]) if len(argv) > 2 else max(power, null),
        "workers": int(argv[3]) if len(argv) > 3 else 2,
    }
    t0 = time.perf_counter()
    load = os.getloadavg()
    mc_draws = int(argv[4]) if len(argv) > 4 else max(100, min(NULL_MC_DRAWS, 20 * null))
    null_rows = null_law_check(mc_draws)
    print(null_rows, flush=True)
    lines = []
    with Pool(counts["workers"], initializer=_load) as pool:
        # Smallest N first (the cheapest); the section is rewritten after each N, so a run cut short
        # still reports every N it finished, with its counts.
        for n in SIZES:
            lines.append(measure_size(pool, n, power, null, counts["classifiers"]))
            print(lines[-1], flush=True)
            lines.sort(key=lambda r: r["n"])
            write_report(lines, null_rows, mc_draws, counts, load, time.perf_counter() - t0)


if __name__ == "__main__":
    main(sys.argv[1:])
