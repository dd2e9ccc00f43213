"""The alignment verdict: one calibrated decision from every valid test of "each pose is Haar-uniform".

Every surface (CLI, REST, dashboard, HTML report, compare view) shows what
:func:`alignment_verdict` returns; nothing else turns the figures into words.

The rule
--------
Each figure below is a test of the null "each stored pose is an independent
Haar-uniform rotation" (what the seeded random-rotation control is by
construction):

* ``kl``: the k-NN KL estimate against its own null law at the same N and k
  (:func:`kl_null`), one-sided (aligned sets score higher);
* each rotation classifier's held-out accuracy (binomial test against 50 %
  on the molecules of one fold, whose model never saw their labels): under
  the null a stored pose and its random copy are exchangeable, so no model
  can beat chance on molecules it never saw; the atom-order classifier
  included. A model that predicted one class for every held-out molecule
  (below about 35 molecules it can grow no split) tests nothing and is left
  out of the family, under ``not_tests``;
* ``ks``: the Kolmogorov-Smirnov test of the angles to a reference orientation;
* ``axial``: Bingham's test of the defined axis of the molecules whose symmetry
  leaves only an axis (linear molecules, symmetric tops; :mod:`orientscope.science.axial`).

KL, KS and the classifiers read full frames only (molecules with no orientation,
single atoms and spherical tops, and axis-only molecules are left out of them);
each part enters the family when it has at least :data:`MIN_MOLECULES`
molecules (full frames, or axes for Bingham's test).

A control that is not ``not_detected`` fails the self-check:
:func:`control_check` says so, with the likely cause, and every surface shows
it before the verdict.

Holm's step-down adjustment over the tests present controls the family-wise
error at ``alpha`` (default :data:`DEFAULT_ALPHA`); a test *rejects* when its
Holm p is below ``alpha``. Nothing rejected is ``not_detected``; fewer than
:data:`MIN_MOLECULES` molecules (or no test at all) is ``too_few``.

How strong
----------
Only a test that rejected sizes the effect, by its own estimate and 95 %
interval against a bar (:data:`STRONG_ACCURACY` for a classifier's held-out
accuracy, :data:`STRONG_KL` for KL: KL at n where the set has it, else the KL
at this N; :data:`STRONG_AXIAL_KL` for Bingham's test: the KL of the Watson
law fitted to the axes, :func:`orientscope.science.axial.axial_size`). An interval wholly above its bar reads ``strong``, wholly below
``small``, across it ``uncertain`` (:func:`size_reading`). The effect is strong
when one size reads strong, small when every size reads small, else uncertain.
``effect`` strong or uncertain is code ``aligned``, small is ``weakly_aligned``;
the ``badge`` says which. N never decides alone: a set of 30 with KL
2.2-4.2 is strongly aligned. The KL interval is for the expected estimate at
this N, which on every set measured grows with N toward the population's KL
(``tests/bench/bench_verdict.py``, ``kl-bar`` table), so a lower bound above
the bar at small N holds at larger N too.

The KL null law
---------------
The estimator's law on Haar-uniform orientations was measured by a large
Monte-Carlo run (:data:`KL_NULL_MC`) and fitted as a Pearson type III law
(a shifted gamma, which holds the estimator's right skew at small N) with

    mean = b / N,   sd = (c + c1 / N) / sqrt(N),   skew = (s + s1 / N) / sqrt(N).

``tests/bench/bench_verdict.py`` checks its tail against fresh Haar draws.
"""

from __future__ import annotations

import math

import numpy as np

from orientscope.core.numbers import is_number
from orientscope.core.resources import scipy_stats as stats
from orientscope.science import alignment_words as words
from orientscope.science.axial import STRONG_AXIAL_KL, size_of
from orientscope.science.model_audit import holm

# 3: a classifier that predicted one class is left out of the family.
# 4: only a test that rejected sizes the effect, by its interval against the bar (strong, small or uncertain);
#    the KL interval at any N sizes it too, against STRONG_KL.
# 5: Bingham's axial test of the axis-only molecules joins the family, and KL, KS and the classifiers (on full
#    frames only) join only with MIN_MOLECULES full frames.
# 6: Bingham's axial test sizes the effect too, by the KL of the Watson law fitted to the axes (against
#    STRONG_AXIAL_KL): a set whose only rejecting test is Bingham's reads strong or small, no longer uncertain.
RULE_VERSION = 6
DEFAULT_ALPHA = 1e-3
MIN_MOLECULES = 10
CODES = ("aligned", "weakly_aligned", "not_detected", "too_few")
# Held-out accuracy (50 % = chance) from which a classifier's effect counts as strong. The accuracy of a
# fixed model family drifts little with N once a few hundred molecules train it (QM9 draws: frame about
# 0.56 at N = 100 and 0.63 at 1,000, atom-order 0.85 to 0.90); the atom-order bar is higher because that
# classifier also reads file order, which only order-aware models see.
STRONG_ACCURACY = {"frame": 0.60, "frame+composition": 0.60, "atom-order": 0.70}
# KL from which the effect counts as strong: KL at n (full QM9 scores ~0.9) or, below n, the KL at this N,
# whose expected estimate grows with N (QM9 subsets: 0.30 at 100, 0.53 at 1,000), so the same bar is
# conservative there.
STRONG_KL = 0.2
# STRONG_AXIAL_KL (science.axial): the bar of Bingham's effect size, the axes' KL in nats; the same 0.2.
AXIAL_SIZE = "axial KL"
# The KL null's fitted parameters (k = 5 neighbours) and the Monte-Carlo run they come from.
# Measured sd·√N: 0.527 (N = 10), 0.573 (20), 0.581 (30), 0.591 (50), 0.589 (100), 0.594 (200), 0.608 (500),
# 0.582 (1,000), 0.603 (3,000), 0.579 (10,000); skew·√N: 3.3, 3.1, 3.5, 3.2, 2.7, 3.2, 1.4, 3.6, 7, 6 (the last
# two from 1,000 and 300 draws: noisy); mean within ±0.001 of 0 at every N. The skew is held at its
# small-N value, which overstates it at large N: the tail is then heavier than measured (conservative).
KL_NULL_FIT = {5: {"b": 0.0, "c": 0.603, "c1": -0.78, "s": 3.2, "s1": 0.0}}
KL_NULL_MC = {
    "seed": 20261201,
    "draws_per_n": {  # string keys: the record is stored and served as JSON
        "10": 20_000,
        "20": 20_000,
        "30": 20_000,
        "50": 20_000,
        "100": 10_000,
        "200": 10_000,
        "500": 5_000,
        "1000": 3_000,
        "3000": 1_000,
        "10000": 300,
    },
    "generator": "numpy default_rng(seed); unit quaternions from normalised 4-d normals",
}
# How the estimate's variance grows with what it estimates: at an expected estimate T > 0 it is the null's
# sd0(N)^2 + KL_SPREAD_GROWTH * T / N. For a law near uniform, Var(log p) is about 2 KL, and the k-NN noise adds
# to it; over random QM9 subsets (N = 20 to 1,000) the excess variance times N was 2.4-3.6 times their mean
# estimate. 3.0 puts the interval's coverage in 94-97 % of Haar sets and of QM9 subsets at every N there
# (tests/bench/bench_kl_interval.py).
KL_SPREAD_GROWTH = 3.0
# The k-NN noise of the per-molecule log-density terms on uniform poses: their variance tends to trigamma(k)
# (0.221 at k = 5; smaller at small N). A set whose terms vary more holds molecules of very different density
# (a mixture: an aligned part and a random one), and the excess over this is Var(log p), which the estimate's
# variance carries; KL_SPREAD_GROWTH · T does not see it (half aligned, half Haar: N·Var 7-8 at T = 1.7).
KL_TERMS_NULL_VAR = {5: 0.2213}
# On uniform poses the terms' sample variance scatters about that with sd 0.6 / sqrt(N) (measured at N = 20 to
# 1,000): only the excess beyond two of those sd counts, so chance scatter does not widen a uniform set's interval.
KL_TERMS_VAR_SD = 0.6
# The sign-invariant KL (no fitted null) widens its normal interval to this multiple of the spread over
# seeded random subsamples (so3_partial.kl_spread).
SPREAD_MARGIN = 2.3
CLASSIFIER_ROLE = {
    "frame": "reads only the canonical frame R (pure orientation); any model sees this",
    "frame+composition": "reads R plus rotation-invariant size and composition; any model sees this",
    "atom-order": "also reads lab-frame directions between the first atoms in file order; "
    "only models that see atoms in order can exploit it",
}
# A result computed before the test counted one fold only: its p pools every fold and rejects too often.
POOLED_NOTE = (
    "; its p pools every fold (a result computed before the verdict's rule 2: recompute for the calibrated test)"
)
# Left out of the family (Holm's m): with too few molecules the model grows no split and predicts one class.
CONSTANT_NOTE = (
    "left out of the family: the model predicted one class for every held-out molecule (too few molecules "
    "to learn a split), so its accuracy is 50 % by construction and tests nothing"
)
KL_ROLE = "measures how far the orientations are from uniform, against the estimator's own null law at this N"
KS_ROLE = "compares the angles to one reference orientation with the Haar angle law (low power for multi-modal poses)"
AXIAL_ROLE = (
    "tests the one axis of the molecules whose symmetry defines only an axis (linear molecules, symmetric tops) "
    "for a preferred direction"
)


def kl_null(n: int, k: int = 5) -> dict:
    """The fitted law of the k-NN KL estimate on ``n`` Haar-uniform orientations: mean, sd, skew and its source."""
    if k not in KL_NULL_FIT:
        raise ValueError(f"no fitted KL null for k={k}; fitted for k in {sorted(KL_NULL_FIT)}")
    if n < 2:
        raise ValueError(f"the KL null needs n >= 2, got {n}")
    f = KL_NULL_FIT[k]
    return {
        "n": int(n),
        "k": int(k),
        "mean": f["b"] / n,
        "sd": (f["c"] + f["c1"] / n) / math.sqrt(n),
        "skew": (f["s"] + f["s1"] / n) / math.sqrt(n),
        "law": "Pearson III; mean = b/N, sd = (c + c1/N)/sqrt(N), skew = (s + s1/N)/sqrt(N)",
        "parameters": dict(f),
        "monte_carlo": KL_NULL_MC,
    }


def kl_pvalue(value: float, n: int, k: int = 5) -> float:
    """One-sided p of a KL estimate this large on ``n`` Haar-uniform orientations."""
    law = kl_null(n, k)
    return float(stats.pearson3.sf(value, law["skew"], loc=law["mean"], scale=law["sd"]))


def kl_interval(value: float, n: int, k: int = 5, terms_var: float | None = None) -> list[float]:
    """95 % interval for the expected KL estimate at this ``n`` (not the KL of the population).

    A Neyman interval: it holds each target T whose own law puts ``value``
    inside its central 95 %. At T the estimate has the null law's shape
    (its 2.5 % and 97.5 % quantiles, so the skew at small N is kept),
    centred on T and scaled to sd(T) = sqrt(sd0² + max(:data:`KL_SPREAD_GROWTH` · T, E) / n):
    aligned sets spread more than uniform ones, the more the further they
    are from uniform. ``terms_var``, the variance of the set's per-molecule
    log-density terms, gives E, its excess over the k-NN noise of uniform
    poses (:data:`KL_TERMS_NULL_VAR`, beyond two sd of its scatter at this
    ``n``, :data:`KL_TERMS_VAR_SD`): a set that mixes aligned and random
    poses spreads more than its T says. On Haar sets (T = 0) it is the null
    law's own interval. Each bound solves T + q · sd(T) / sd0 = value: a
    quadratic in sd(T) for the growth, direct for E; the larger spread wins
    (the lower bound is the smaller root, the upper the larger).
    ``tests/bench/bench_kl_interval.py`` measures the coverage.
    """
    law = kl_null(n, k)
    sd0 = law["sd"]
    low_q, high_q = stats.pearson3.ppf([0.025, 0.975], law["skew"], loc=0.0, scale=sd0)
    excess = 0.0
    if is_number(terms_var) and k in KL_TERMS_NULL_VAR:
        excess = max(0.0, float(terms_var) - KL_TERMS_NULL_VAR[k] - 2 * KL_TERMS_VAR_SD / math.sqrt(n))

    def bound(q: float) -> float:
        if value - q <= 0:  # at T <= 0 the spread is the null's
            return float(value - q)
        # (n / g) s² + (q / sd0) s - (n sd0² / g + value) = 0, s = sd(T) >= sd0
        a, b, c = n / KL_SPREAD_GROWTH, q / sd0, -(n * sd0**2 / KL_SPREAD_GROWTH + value)
        s = (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)
        grown = (s * s - sd0**2) * n / KL_SPREAD_GROWTH
        if excess <= 0:
            return float(grown)
        mixed = value - q * math.sqrt(sd0**2 + excess / n) / sd0
        return float(max(min(grown, mixed), 0.0) if q > 0 else max(grown, mixed))

    return [bound(float(high_q)), bound(float(low_q))]


def _accuracy_interval(clf: dict) -> list | None:
    """A classifier's 95 % accuracy interval: ``ci95.accuracy`` (``ci95`` itself in results before the AUC's)."""
    ci = clf.get("ci95")
    ci = ci.get("accuracy") if isinstance(ci, dict) else ci
    return [float(x) for x in ci] if ci is not None and len(ci) == 2 and all(is_number(x) for x in ci) else None


def size_reading(value, interval, bar: float) -> str:
    """``strong`` when the 95 % interval lies at or above ``bar``, ``small`` when wholly below, else ``uncertain``.

    Without an interval the size cannot be judged against the bar: ``uncertain``.
    """
    if interval is None or not all(is_number(x) for x in interval) or not is_number(value):
        return "uncertain"
    low, high = interval
    return "strong" if low >= bar else "small" if high < bar else "uncertain"


def _effect_size(measure: str, value, interval, bar: float, kind: str, **extra) -> dict:
    """An effect size judged against its bar: what the words cite for a test that rejected."""
    return {
        "measure": measure,
        "value": float(value),
        "ci95": interval,
        "bar": bar,
        "kind": kind,
        "reading": size_reading(value, interval, bar),
        **extra,
    }


def _kl_size(kl: dict, kl_at_n: dict | None) -> dict:
    """KL's effect size: KL at n where the set has it (comparable across sizes), else the KL at this N."""
    if kl_at_n and is_number(kl_at_n.get("value")):
        n = int(kl_at_n.get("subsample_size") or kl_at_n.get("n"))
        ci = kl_at_n.get("ci95")
        return _effect_size("KL at n", kl_at_n["value"], list(ci) if ci else None, STRONG_KL, "number", n=n)
    n = int(kl.get("n_used") or kl["n"])
    ci = kl.get("ci95")
    return _effect_size("KL", kl["value"], list(ci) if ci else None, STRONG_KL, "number", n=n)


def _evidence(
    kl: dict | None,
    classifiers: list[dict],
    ks: dict | None,
    kl_at_n: dict | None,
    alpha: float,
    axial: dict | None = None,
    so3_molecules: int | None = None,
) -> list[dict]:
    """One row per test: ``{test, statistic, ci95, pvalue, p_holm, rejects, role, size}``, in the fixed order.

    ``so3_molecules``: molecules with a full frame; below :data:`MIN_MOLECULES` the SO(3) tests (KL, KS,
    classifiers) leave the family, and only Bingham's axial test (on the axis-only molecules) may remain.
    """
    rows = []
    if so3_molecules is not None and so3_molecules < MIN_MOLECULES:
        kl, ks, classifiers = None, None, []
    if kl and is_number(kl.get("value")) and (kl.get("n_used") or kl.get("n") or 0) > kl.get("k", 5):
        n, k = int(kl.get("n_used") or kl["n"]), int(kl.get("k", 5))
        ci = kl.get("ci95")
        rows.append(
            {
                "test": "KL",
                "statistic": float(kl["value"]),
                "ci95": list(ci) if ci else None,
                "n": n,
                "pvalue": kl_pvalue(kl["value"], n, k),
                "role": KL_ROLE,
                "size": _kl_size(kl, kl_at_n),
            }
        )
    order = {name: i for i, name in enumerate(CLASSIFIER_ROLE)}
    for c in sorted(classifiers, key=lambda c: order.get(c.get("features"), len(order))):
        if is_number(c.get("pvalue")) and is_number(c.get("accuracy")) and not c.get("constant"):
            name = c.get("features")
            interval = _accuracy_interval(c)
            row = {
                "test": f"{name} classifier",
                "statistic": float(c["accuracy"]),
                "ci95": interval,
                "pvalue": float(c["pvalue"]),
                "role": CLASSIFIER_ROLE.get(name, "held-out accuracy of a stored-vs-rotated classifier")
                + ("" if "n_pvalue" in c else POOLED_NOTE),
            }
            if name in STRONG_ACCURACY:
                row["size"] = _effect_size("accuracy", c["accuracy"], interval, STRONG_ACCURACY[name], "percent")
            rows.append(row)
    if ks and is_number(ks.get("pvalue")):
        rows.append(
            {
                "test": "KS",
                "statistic": float(ks["statistic"]),
                "ci95": None,
                "pvalue": float(ks["pvalue"]),
                "role": KS_ROLE,
            }
        )
    rows += _axial_evidence(axial)
    for row, p_holm in zip(rows, holm([r["pvalue"] for r in rows]), strict=True):
        row["p_holm"] = p_holm
        row["rejects"] = bool(p_holm < alpha)
    return rows


def _axial_evidence(axial: dict | None) -> list[dict]:
    """Bingham's test as a row of the family, where it has at least :data:`MIN_MOLECULES` axes."""
    if not axial or not is_number(axial.get("pvalue")) or int(axial.get("n") or 0) < MIN_MOLECULES:
        return []
    row = {
        "test": words.BINGHAM,
        "statistic": float(axial["statistic"]),
        "ci95": None,
        "pvalue": float(axial["pvalue"]),
        "n": int(axial["n"]),
        "role": AXIAL_ROLE,
    }
    # Figures stored before rule 6 have no size: it is a function of the eigenvalues, n and p they do have.
    size = size_of(axial)
    if size:
        row["size"] = _effect_size(
            AXIAL_SIZE, size["value"], list(size["ci95"]), STRONG_AXIAL_KL, "number", n=int(axial["n"])
        )
    return [row]


def effect_of(evidence: list[dict]) -> str | None:
    """``strong``, ``small`` or ``uncertain``: the effect the tests that rejected size (None if none rejected).

    Strong when one of their sizes reads strong, small when every one reads small, uncertain otherwise
    (a size across its bar, or no test that rejected has a size).
    """
    carried = [e for e in evidence if e.get("rejects")]
    if not carried:
        return None
    readings = [e["size"]["reading"] for e in carried if e.get("size")]
    if "strong" in readings:
        return "strong"
    return "small" if readings and all(r == "small" for r in readings) else "uncertain"


def alignment_verdict(
    n_molecules: int | None,
    kl: dict | None = None,
    classifiers: list[dict] | None = None,
    ks: dict | None = None,
    kl_at_n: dict | None = None,
    alpha: float = DEFAULT_ALPHA,
    axial: dict | None = None,
    orientation: dict | None = None,
) -> dict:
    """``{code, aligned, effect, badge, text, evidence, alpha, rule_version, n_molecules}`` of one set of orientations.

    Parameters
    ----------
    n_molecules : molecules in the set
    kl : ``{value, ci95, n (or n_used), k}`` of the k-NN KL to uniform
    classifiers : ``[{features, accuracy, ci95, pvalue}]``, held-out, one per feature set
    ks : ``{statistic, pvalue}`` of the angles to a reference orientation
    kl_at_n : ``{value, ci95, subsample_size}`` when the set is large enough for it
    alpha : family-wise error rate of the Holm-adjusted family
    axial : Bingham's test of the axis-only molecules (``{n, statistic, pvalue, eigenvalues, size}``; without
        ``size``, a result stored before rule 6, the size comes from the eigenvalues)
    orientation : ``{none, axis, full, by_symmetry}`` counts; KL, KS and the classifiers
        enter the family only with at least ``MIN_MOLECULES`` full frames

    ``aligned`` (the field older clients read) is True for ``aligned`` and
    ``weakly_aligned``, False for ``not_detected``, None for ``too_few``.
    ``effect`` is ``strong``, ``uncertain`` or ``small`` when a test rejected,
    else None. The words (``text``, ``badge``) come from
    :mod:`orientscope.science.alignment_words`, from these fields alone.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    classifiers = list(classifiers or [])
    n = int(n_molecules or 0)
    so3 = None if not orientation else int(orientation.get("full") or 0)
    evidence = _evidence(kl, classifiers, ks, kl_at_n, alpha, axial, so3) if n >= MIN_MOLECULES else []
    out = {
        "alpha": alpha,
        "rule_version": RULE_VERSION,
        "n_molecules": n,
        "min_molecules": MIN_MOLECULES,
        "evidence": evidence,
    }
    if orientation:
        out["orientation"] = {cls: int(orientation.get(cls) or 0) for cls in ("none", "axis", "full")}
    untested = [f"{c.get('features')} classifier" for c in classifiers if c.get("constant")]
    if untested and evidence:
        out["not_tests"] = {"tests": untested, "reason": CONSTANT_NOTE}
    if any(e["test"] == "KL" for e in evidence):
        law = kl_null(int(kl.get("n_used") or kl["n"]), int(kl.get("k", 5)))
        low, high = stats.pearson3.ppf([0.025, 0.975], law["skew"], loc=law["mean"], scale=law["sd"])
        out["kl_null"] = {**law, "range95": [float(low), float(high)]}
    effect = effect_of(evidence)
    if not evidence:
        code = "too_few"
    elif effect is None:
        code = "not_detected"
    else:
        code = "weakly_aligned" if effect == "small" else "aligned"
    out.update({"code": code, "aligned": {"too_few": None, "not_detected": False}.get(code, True), "effect": effect})
    out["badge"] = words.verdict_badge(out)
    out["text"] = words.verdict_text(out)
    return out


# ---------------------------------------------------------------------- the self-check
def control_check(
    control_verdict: dict | None, control: dict | None, n_molecules: int | None = None, alpha: float = DEFAULT_ALPHA
) -> dict:
    """The random-rotation control as a self-check: ``{passed, control_code, text, causes}``.

    The control (every molecule turned by a seeded Haar rotation) must come out
    ``not_detected``; anything else means the tests are not calibrated on this
    set, and ``text`` says so with the likely cause (``causes``, most likely
    first) read from the control's figures (``orientation_classes``,
    ``degenerate_reasons``) and its ``n_molecules``. ``passed`` is
    None when no test could run on the control (``too_few``): nothing to check.
    """
    v = control_verdict or {}
    code = v.get("code")
    if code == "not_detected":
        return {"passed": True, "control_code": code, "text": "", "causes": []}
    if code not in ("aligned", "weakly_aligned"):
        return {"passed": None, "control_code": code, "text": "", "causes": []}
    level = v.get("alpha", alpha)
    rejected = [e["test"] for e in v.get("evidence") or [] if is_number(e.get("p_holm")) and e["p_holm"] < level]
    causes = words.control_causes(control or {}, n_molecules or 0, rejected, level)
    return {
        "passed": False,
        "control_code": code,
        "text": words.control_failed(code, rejected, causes),
        "causes": causes,
    }


def subsample_spread(values: np.ndarray, m: int, n: int) -> float:
    """sd of an estimate at size ``n`` from its values on random subsamples of size ``m`` of the same set.

    Over subsamples drawn without replacement the variance of a mean-like
    statistic is (σ²/m)(1 − m/n), so the variance at n, σ²/n, is that
    spread times m / (n − m): exactly the spread itself for halves.
    """
    v = np.asarray(values, dtype=np.float64)
    if len(v) < 2 or m >= n:
        return float("nan")
    return float(v.std(ddof=1) * math.sqrt(m / (n - m)))
