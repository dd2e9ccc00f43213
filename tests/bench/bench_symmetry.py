"""Calibration of orientation by symmetry (issue 42) -> sections ``symmetry-calibration`` and ``symmetry-study``.

Each molecule contributes only the orientation its symmetry defines: single atoms and spherical
tops none, linear molecules and symmetric tops one axis (Bingham's test), every other molecule its
full frame (KL, KS, classifiers). Each draw goes through the science functions the stages call, in
process on arrays (frames and their classes, the k-NN KL and KS on the full frames, Bingham's test
on the defined axes, the three classifiers on the full frames with the models stage's settings,
each read from its first fold as the verdict reads it, see ``bench_verdict.first_fold_tests``), then
:func:`alignment_verdict` with the class counts.

* False positives: Haar-rotated QM9 draws salted with single atoms, linear molecules (CO2, HCN,
  acetylene), symmetric tops (NH3, benzene, CH3Cl) and spherical tops (CH4, SF6), a quarter each,
  at 1 %, 10 % and 50 % of the set; every molecule turned by its own Haar rotation. N = 100 and 1,000
  with the classifiers, N = 10,000 KL, KS and Bingham only. The rule before symmetry (every frame a
  pose; KL and KS) runs on the same draws for comparison.
* Power: subsets of the Chemical Component Dictionary's components in their ideal coordinates
  (aligned, as written; ``tests/bench/ccd_set.py``), and the same subsets Haar-rotated.
* Study: do finite-symmetry frames (QM9's sign ties) or exact duplicate frames bias the k-NN KL at
  small N? And the χ²₅ law of Bingham's statistic by simulation.

``python -m tests.bench.bench_symmetry [draws_small draws_large workers]``: draws per cell at N = 100 and
1,000 (default 1,000 each) and worker processes (default 2); N = 10,000 runs 200 draws, the CCD
power 200 draws per N. Sections are rewritten after each cell, stating the counts that ran.
"""

from __future__ import annotations

import os
import sys
import time
from multiprocessing import Pool

import numpy as np
from scipy import stats
from threadpoolctl import threadpool_limits

from orientscope.loaders.qm9 import load_qm9
from orientscope.pipeline.shard_stages import orientation_counts
from orientscope.science.axial import axial_test, defined_axes
from orientscope.science.frames import Frames, compute_frames
from orientscope.science.rotations import derived_seed, random_rotations, rotate_molecules
from orientscope.science.so3_partial import kl_exact
from orientscope.science.so3_stats import reference_and_ks
from orientscope.science.verdict import DEFAULT_ALPHA, alignment_verdict, kl_pvalue
from tests.bench.bench_verdict import LOOSE_ALPHA, first_fold_tests
from tests.bench.ccd_set import load_ccd
from tests.bench.common import write_section
from tests.molecules import ACETYLENE, CH3CL, CO2, HCN, METHANE, NH3, SF6, benzene

SEED = 42
FRACTIONS = (0.01, 0.10, 0.50)
SMALL, LARGE, HUGE = 100, 1000, 10_000
HUGE_DRAWS = 200
POWER_SIZES = (30, 100, 1000)
POWER_DRAWS = 200
# A quarter of the salt each: single atoms, linear molecules, symmetric tops, spherical tops.
SALT = {
    "single atoms": [([z], np.zeros((1, 3))) for z in (3, 11, 12, 17, 19, 20, 30, 35)],
    "linear": [CO2, HCN, ACETYLENE],
    "symmetric tops": [NH3, benzene(), CH3CL],
    "spherical tops": [METHANE, SF6],
}
TESTS = ("KL", "frame classifier", "frame+composition classifier", "atom-order classifier", "KS", "Bingham axial")

_DATA: dict = {}  # per worker process: QM9 and the CCD arrays


def _load() -> None:
    # One thread per worker: the classifiers' OpenMP threads on a few hundred rows cost more than they
    # save (profiled: predict_proba was 60 % of a draw at N = 100; 1.1 s a draw with them, 0.4 s without).
    _DATA["threads"] = threadpool_limits(limits=1)
    q = load_qm9()
    _DATA["qm9"] = {"z": q.atomic_numbers, "pos": q.positions_angstrom, "offsets": q.offsets}
    _DATA["ccd"] = load_ccd()


def _pick(src: dict, rows: np.ndarray) -> list:
    off = src["offsets"]
    return [(src["z"][off[i] : off[i + 1]], src["pos"][off[i] : off[i + 1]]) for i in rows]


def _stack(mols: list, turn_seed: int | None):
    """(positions, offsets, z) of the molecules, each centred and, with a seed, turned by its own Haar rotation."""
    offsets = np.r_[0, np.cumsum([len(z) for z, _ in mols])].astype(np.int64)
    pos = np.vstack([p - p.mean(axis=0) for _, p in mols])
    if turn_seed is not None:
        pos = rotate_molecules(pos, offsets, random_rotations(len(mols), turn_seed))
    return pos, offsets, np.concatenate([np.asarray(z) for z, _ in mols]).astype(np.int16)


def salted_draw(n: int, fraction: float, seed: int):
    """A Haar-rotated QM9 draw of ``n`` molecules of which ``fraction`` are symmetric salt (a quarter of each kind)."""
    rng = np.random.default_rng(seed)
    n_salt = int(round(fraction * n))
    qm9 = _DATA["qm9"]
    mols = _pick(qm9, rng.choice(len(qm9["offsets"]) - 1, n - n_salt, replace=False))
    kinds = list(SALT)
    for k in range(n_salt):
        pool = SALT[kinds[k % len(kinds)]]
        mols.append(pool[rng.integers(len(pool))])
    return _stack(mols, derived_seed(seed, "haar"))


def ccd_draw(n: int, seed: int, haar: bool):
    rng = np.random.default_rng(seed)
    ccd = _DATA["ccd"]
    mols = _pick(ccd, np.sort(rng.choice(len(ccd["ids"]), n, replace=False)))
    return _stack(mols, derived_seed(seed, "haar") if haar else None)


def _subset(frames: Frames, keep: np.ndarray) -> Frames:
    return Frames(*(getattr(frames, f)[keep] for f in ("rotations", "eigenvalues", "quaternions", "centroids",
                                                       "degenerate", "reasons", "symmetry")))  # fmt: skip


def evaluate(positions, offsets, z, seed: int, classifiers: bool) -> dict:
    """The verdict by symmetry (and the rule before it, KL and KS on every frame) of one draw."""
    frames = compute_frames(positions, offsets, z)
    classes = orientation_counts(frames.symmetry)
    full = frames.orientation == "full"
    kl = ks = None
    if full.sum() > 6:
        kl = kl_exact(frames.quaternions[full].copy(), 5, seed=seed)
        ks = reference_and_ks(frames.rotations[full], seed)["ks"]
    axial = axial_test(defined_axes(frames.rotations, frames.defined_axis))
    clf = []
    if classifiers and full.sum() >= 20:
        rows = np.flatnonzero(full)
        sizes = np.diff(offsets)[rows]
        atoms = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in rows])
        sub_off = np.r_[0, np.cumsum(sizes)]
        negatives = random_rotations(len(rows), derived_seed(seed, "negatives"))
        clf = first_fold_tests(positions[atoms], sub_off, z[atoms], _subset(frames, full), negatives, seed)
    n = len(offsets) - 1
    new = alignment_verdict(n, kl, clf, ks, axial=axial, orientation=classes)
    old_kl = kl_exact(frames.quaternions.copy(), 5, seed=seed)
    old = alignment_verdict(n, old_kl, [], reference_and_ks(frames.rotations, seed)["ks"])
    return {
        "code": new["code"],
        "loose": _code_at(new, LOOSE_ALPHA),
        "p": {e["test"]: e["pvalue"] for e in new["evidence"]},
        "old": old["code"],
        "old_loose": _code_at(old, LOOSE_ALPHA),
        "old_kl": old_kl["value"],
        "kl": None if kl is None else kl["value"],
        "classes": {k: classes[k] for k in ("none", "axis", "full")},
    }


def _code_at(verdict: dict, alpha: float) -> str:
    return "detected" if any(e["p_holm"] < alpha for e in verdict["evidence"]) else "not_detected"


def salted_job(job: tuple) -> dict:
    n, fraction, i, classifiers = job
    seed = derived_seed(SEED, f"salted:{n}:{fraction}:{i}")
    return evaluate(*salted_draw(n, fraction, seed), seed, classifiers)


def ccd_job(job: tuple) -> dict:
    n, i, haar = job
    seed = derived_seed(SEED, f"ccd:{n}:{i}:{haar}")
    return {"haar": haar, **evaluate(*ccd_draw(n, seed, haar), seed, classifiers=True)}


def _detected(rows: list[dict], key: str) -> int:
    return sum(r[key] in ("aligned", "weakly_aligned", "detected") for r in rows)


def binomial_band(draws: int, p: float = LOOSE_ALPHA) -> tuple[int, int]:
    """The central 99 % of false positives among ``draws`` calibrated draws at level ``p``."""
    return int(stats.binom.ppf(0.005, draws, p)), int(stats.binom.ppf(0.995, draws, p))


def measure_cell(pool, n: int, fraction: float, draws: int, classifiers: bool) -> dict:
    t = time.perf_counter()
    rows = pool.map(salted_job, [(n, fraction, i, classifiers) for i in range(draws)], chunksize=4)
    lo, hi = binomial_band(draws)
    return {
        "n": n,
        "fraction": fraction,
        "draws": draws,
        "classifiers": classifiers,
        "fp_loose": _detected(rows, "loose"),
        "fp_default": _detected(rows, "code"),
        "band": (lo, hi),
        "per_test": {name: sum(r["p"].get(name, 1.0) < LOOSE_ALPHA for r in rows) for name in TESTS},
        "tested": {name: sum(name in r["p"] for r in rows) for name in TESTS},
        "old_loose": _detected(rows, "old_loose"),
        "old_default": _detected(rows, "old"),
        "old_kl": float(np.mean([r["old_kl"] for r in rows])),
        "kl": float(np.mean([r["kl"] for r in rows if r["kl"] is not None])),
        "classes": {k: float(np.mean([r["classes"][k] for r in rows])) for k in ("none", "axis", "full")},
        "seconds": time.perf_counter() - t,
    }


def measure_power(pool, n: int, draws: int) -> dict:
    t = time.perf_counter()
    rows = pool.map(ccd_job, [(n, i, haar) for haar in (False, True) for i in range(draws)], chunksize=2)
    ideal, haar = [r for r in rows if not r["haar"]], [r for r in rows if r["haar"]]
    return {
        "n": n,
        "draws": draws,
        "detected": _detected(ideal, "code") / len(ideal),
        "aligned": sum(r["code"] == "aligned" for r in ideal),
        "weak": sum(r["code"] == "weakly_aligned" for r in ideal),
        "per_test": {name: sum(r["p"].get(name, 1.0) < DEFAULT_ALPHA for r in ideal) for name in TESTS},
        "fp_loose": _detected(haar, "loose"),
        "fp_default": _detected(haar, "code"),
        "old_fp_default": _detected(haar, "old"),
        "classes": {k: float(np.mean([r["classes"][k] for r in ideal])) for k in ("none", "axis", "full")},
        "seconds": time.perf_counter() - t,
    }


def write_calibration(cells: list[dict], power: list[dict], counts: dict, load, total: float) -> None:
    def row(c: dict) -> str:
        tests = " | ".join(f"{c['per_test'][t]} / {c['tested'][t]}" for t in TESTS)
        mix = f"{c['classes']['none']:.0f} / {c['classes']['axis']:.0f} / {c['classes']['full']:.0f}"
        return (
            f"| {c['n']:,} | {c['fraction']:.0%} | {mix} | {'yes' if c['classifiers'] else 'no'} | {c['draws']} | "
            f"{c['fp_loose']} ({c['band'][0]}–{c['band'][1]}) | {c['fp_default']} | {c['old_loose']} | {c['old_default']} | "
            f"{c['old_kl']:.3f} → {c['kl']:.3f} | {tests} | {c['seconds']:.0f} s |"
        )

    power_rows = "\n".join(
        f"| {p['n']:,} | {p['draws']} | {p['detected']:.1%} ({p['aligned']} aligned, {p['weak']} weakly) | "
        + " / ".join(str(p["per_test"][t]) for t in TESTS)
        + f" | {p['classes']['none']:.1f} / {p['classes']['axis']:.1f} / {p['classes']['full']:.1f} | "
        f"{p['fp_loose']} | {p['fp_default']} | {p['old_fp_default']} | {p['seconds']:.0f} s |"
        for p in power
    )
    write_section(
        "symmetry-calibration",
        f"""## symmetry-calibration: the verdict when each molecule contributes only the orientation its symmetry defines (issue 42)

Haar-rotated QM9 draws salted with symmetric molecules, a quarter each of single atoms (Li, Na, Mg, Cl,
K, Ca, Zn, Br), linear molecules (CO2, HCN, acetylene), symmetric tops (NH3, benzene, CH3Cl) and
spherical tops (CH4, SF6), every molecule turned by its own Haar rotation (`SEED = {SEED}`). The null holds
for every draw, so every detection is a false positive. Targets: at α = {LOOSE_ALPHA} within the binomial band
(central 99 %, in brackets), at the default α = {DEFAULT_ALPHA:g} at most 3 per 1,000. "Before" is the rule
before symmetry on the same draws (every frame counted as a pose; KL and KS only, so it cannot show what the
classifiers added); "KL before → now" is the mean KL over all frames, then over full frames only.

Counts that ran: {counts["small"]} draws per cell at N = 100, {counts["large"]} at N = 1,000 (with the
three classifiers, each read from its first fold), {HUGE_DRAWS} at N = 10,000 (KL, KS, Bingham);
{counts["workers"]} worker processes.

| N | salt | none / axis / full (mean) | classifiers | draws | false pos. α = 0.05 (band) | false pos. default α | before: α = 0.05 | before: default α | KL before → now | raw p < 0.05 per test: {" | ".join(TESTS)} | time |
|---|---|---|---|---|---|---|---|---|---|{"---|" * len(TESTS)}---|
{chr(10).join(row(c) for c in cells)}

Power on real chemistry: seeded subsets of the {counts["ccd"]:,} CCD components with ideal coordinates for
every atom (at most 400 atoms; the dictionary inside `biotite`'s wheel), in their ideal coordinates (aligned
as written) and Haar-rotated (the null), {POWER_DRAWS} draws of each per N, the full rule with the
classifiers read from their first fold (the tier's accuracy is fold 0's, noisier than the stage's
cross-fitted one).

| N | draws | detected (ideal) | tests rejecting at the default α: {" / ".join(TESTS)} | none / axis / full (mean) | Haar: false pos. α = 0.05 | Haar: default α | Haar, before: default α | time |
|---|---|---|---|---|---|---|---|---|
{power_rows}

Command: `nice .venv/bin/python -m tests.bench.bench_symmetry {counts["small"]} {counts["large"]} {counts["workers"]}`
(needs the `ccd` extra: `pip install -e '.[ccd]'`). Run time {total / 60:.1f} min; load average at start
{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on a shared 2-core machine.
""",
    )


# ---------------------------------------------------------------------- the study
def study(draws: int = 1000) -> None:
    """Sign-tie frames and exact duplicate frames against the KL null; Bingham's law; written as ``symmetry-study``."""
    t0 = time.perf_counter()
    qm9 = _DATA["qm9"]
    frames = compute_frames(qm9["pos"], qm9["offsets"], qm9["z"])
    full = frames.orientation == "full"
    tie = np.char.find(frames.reasons.astype(str), "sign_tie") >= 0
    pools = {"sign ties": np.flatnonzero(full & tie), "no tie": np.flatnonzero(full & ~tie)}
    tie_rows = []
    for n, d in ((30, draws), (100, draws), (1000, max(draws // 3, 50))):
        for name, pool in pools.items():
            p, kl = np.empty(d), np.empty(d)
            for i in range(d):
                seed = derived_seed(SEED, f"study:{name}:{n}:{i}")
                rng = np.random.default_rng(seed)
                pos, off, z = _stack(
                    _pick(qm9, np.sort(rng.choice(pool, n, replace=False))), derived_seed(seed, "haar")
                )
                f = compute_frames(pos, off, z)
                q = f.quaternions[f.orientation == "full"].copy()
                kl[i] = kl_exact(q, 5)["value"]
                p[i] = kl_pvalue(kl[i], len(q))
            tie_rows.append((n, name, d, kl.mean(), np.mean(p < 0.05), np.mean(p < 1e-3)))
    q_all = frames.quaternions[full] * np.where(frames.quaternions[full][:, 3:] < 0, -1.0, 1.0)
    distinct = len(np.unique(np.round(q_all, 9), axis=0))
    dup_rows = []
    rng = np.random.default_rng(derived_seed(SEED, "study:duplicates"))
    for n, d in ((100, draws), (1000, max(draws // 3, 50))):
        for share, group in ((0.0, 1), (0.01, 2), (0.05, 2), (0.10, 2), (0.05, 6), (0.10, 6)):
            p, kl = np.empty(d), np.empty(d)
            for i in range(d):
                q = rng.normal(size=(n, 4))
                q /= np.linalg.norm(q, axis=1, keepdims=True)
                for g in range(int(round(share * n / group)) if group > 1 else 0):
                    q[g * group : (g + 1) * group] = q[g * group]
                kl[i] = kl_exact(q, 5)["value"]
                p[i] = kl_pvalue(kl[i], n)
            dup_rows.append((n, share, group, d, kl.mean(), np.mean(p < 0.05), np.mean(p < 1e-3)))
    law_rows = []
    rng = np.random.default_rng(derived_seed(SEED, "study:bingham"))
    for n in (10, 20, 30, 100, 1000):
        d = 20_000 if n <= 100 else 4_000
        v = rng.normal(size=(d, n, 3))
        v /= np.linalg.norm(v, axis=2, keepdims=True)
        s = np.array([axial_test(x)["statistic"] for x in v])
        p = stats.chi2.sf(s, 5)
        law_rows.append((n, d, s.mean(), np.mean(p < 0.05), np.mean(p < 0.01), np.mean(p < 1e-3)))
    ties = "\n".join(f"| {n:,} | {name} | {d} | {m:+.4f} | {a:.3f} | {b:.4f} |" for n, name, d, m, a, b in tie_rows)
    dups = "\n".join(
        f"| {n:,} | {s:.0%} | {'none' if g == 1 else f'groups of {g}'} | {d} | {m:+.3f} | {a:.3f} | {b:.4f} |"
        for n, s, g, d, m, a, b in dup_rows
    )
    law = "\n".join(f"| {n:,} | {d:,} | {m:.3f} | {a:.4f} | {b:.4f} | {c:.5f} |" for n, d, m, a, b, c in law_rows)
    write_section(
        "symmetry-study",
        f"""## symmetry-study: finite-symmetry frames, duplicate frames and Bingham's law (issue 42)

**Finite symmetries (sign ties).** {int((full & tie).sum()):,} of QM9's {int(full.sum()):,} molecules with a full frame
have a sign tie (the sign rule cannot choose an axis' direction; the third moment decides). Haar-rotated draws of
only those molecules, or only untied ones, against the KL null (nominal 0.05 and 0.001):

| N | molecules | draws | mean KL | p < 0.05 | p < 0.001 |
|---|---|---|---|---|---|
{ties}

Tied frames are as uniform as the others after a Haar rotation: the third moment turns with the molecule,
so the frame does too. Nothing to fix.

**Exact duplicate frames.** Among QM9's full frames {distinct:,} of {int(full.sum()):,} are distinct (no exact
duplicates; the single atoms and spherical tops whose frames were all the identity are out now). Haar
quaternion sets where a share of the molecules repeat another's frame exactly (pairs, or groups of 6 = k + 1):

| N | share repeated | repeats | draws | mean KL | p < 0.05 | p < 0.001 |
|---|---|---|---|---|---|---|
{dups}

A group of k + 1 = 6 identical frames puts a zero at the k-th neighbour, which the estimator floors at
10⁻⁶ rad (`so3_stats.MIN_RADIUS_RAD`): each such molecule adds about 40/N to the KL. That is how the
single atoms (all the identity frame) gave KL 41 on an ions-only set and 0.35 on the Haar-rotated CCD
set; they no longer reach the KL, and in a Haar-rotated set no other molecule repeats a frame. Repeated
poses of other molecules are poses that are not independent draws, and the KL sees them: pairs of
identical records raise its false-positive rate with their share (see the table). That is left as it
is: dropping repeated frames would also drop the most aligned sets of all, where every molecule is stored
in its own canonical frame (one frame, four sign variants). A set with duplicate records reads as
aligned, and its control stays clean (each copy turns on its own).

**Bingham's statistic on uniform axes** (χ²₅: mean 5, tail shares 0.05, 0.01, 0.001):

| n | draws | mean S | p < 0.05 | p < 0.01 | p < 0.001 |
|---|---|---|---|---|---|
{law}

Conservative below n = 20 (never liberal), nominal from 30. The verdict takes the test from
{10} axes (`science/axial.py`, `MIN_AXES`).

Command: part of `nice .venv/bin/python -m tests.bench.bench_symmetry`; {time.perf_counter() - t0:.0f} s.
""",
    )


def main(argv: list[str] | None = None) -> None:
    argv = argv or []
    counts = {
        "small": int(argv[0]) if argv else 1000,
        "large": int(argv[1]) if len(argv) > 1 else 1000,
        "workers": int(argv[2]) if len(argv) > 2 else 2,
    }
    t0, load = time.perf_counter(), os.getloadavg()
    _load()
    counts["ccd"] = len(_DATA["ccd"]["ids"])
    study()
    print(f"study done in {time.perf_counter() - t0:.0f} s", flush=True)
    cells, power = [], []
    plan = [(SMALL, f, counts["small"], True) for f in FRACTIONS]
    plan += [(HUGE, f, HUGE_DRAWS, False) for f in FRACTIONS]
    plan += [(LARGE, f, counts["large"], True) for f in FRACTIONS]
    with Pool(counts["workers"], initializer=_load) as pool:
        for n, fraction, draws, classifiers in plan:
            cells.append(measure_cell(pool, n, fraction, draws, classifiers))
            print(cells[-1], flush=True)
            cells.sort(key=lambda c: (c["n"], c["fraction"]))
            write_calibration(cells, power, counts, load, time.perf_counter() - t0)
        for n in POWER_SIZES:
            power.append(measure_power(pool, n, POWER_DRAWS))
            print(power[-1], flush=True)
            write_calibration(cells, power, counts, load, time.perf_counter() - t0)


if __name__ == "__main__":
    main(sys.argv[1:])
