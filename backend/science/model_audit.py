"""Model-exploitation audit: does a model's error depend on the pose?

A user runs their model on each molecule's stored pose and on randomly
rotated copies of it (``orientscope export --mode random --copies K``). An
invariant model gives the same prediction for every copy; a model whose error
grows on the copies was using the pose.

The unit of every figure, bootstrap and test is the molecule: each molecule's
squared and absolute errors are averaged over its copies first and molecules
weigh equally, so writing the same prediction K times never makes a result
look more certain.

Figures (per property, and per split when given)
------------------------------------------------
``mse_stored``, ``mse_rotated``, ``mae_stored``, ``mae_rotated``
    means over molecules, in the property's unit (squared for MSE).
``mse_increase``
    ``mse_rotated - mse_stored``, the absolute increase (unit squared).
``reliance``
    ``(mse_rotated - mse_stored) / max(mse_stored, mse_floor)`` (``mse_rotated /
    mse_stored - 1`` above the floor); its 95 % CI is the percentile interval
    of a seeded bootstrap over molecules. ``mse_floor`` is :data:`MSE_FLOOR_FRACTION` of the property's
    variance: a model that memorised its training set has a stored-pose MSE
    of 0, and the ratio then reads against the floor (``reliance_floored``).
``pvalue``
    two-sided paired sign-flip test of the per-molecule differences
    ``d = se_rotated - se_stored``: under the null that the stored pose is
    exchangeable with a rotated one, each ``d`` is symmetric about 0. Monte
    Carlo permutations up to ``max_permutation_molecules`` molecules, above
    that the normal approximation of the same sign-flip distribution
    (``z = Σd / sqrt(Σd²)``); the result names the method used.
``shift_rms``
    RMS over molecules of each molecule's RMS (over copies) of
    ``rotated - stored``. With two or more copies, ``copy_spread_rms`` is the
    RMS of the per-molecule standard deviation of the rotated predictions, and
    ``stored_special_ratio = shift_rms / (sqrt(2) * copy_spread_rms)``: about 1
    when the stored pose is just one more pose (the model is merely not
    invariant), well above 1 when the stored pose is special to the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orientscope.core.numbers import format_percent
from orientscope.core.resources import scipy_stats as stats

# Lower end of the reliance CI needed to call a model "leaning" on the pose.
LEANS_MIN_RELIANCE = 0.01
LEANS_MAX_PVALUE = 1e-3
# Holm p under this (but not under LEANS_MAX_PVALUE) reads "inconclusive", never "no reliance".
INCONCLUSIVE_PVALUE = 0.05
# The ratio's denominator is at least this share of the property's variance (a stored-pose MSE of 0 is
# a memoriser, not an infinitely good model); small enough that a model 1000x better than the mean
# still divides by its own MSE.
MSE_FLOOR_FRACTION = 1e-6
AUDIT_RULE_VERSION = 2
INVARIANT_ABS = 1e-12
INVARIANT_REL = 1e-6
# Spearman's rho: Fisher-z standard error sqrt(1.06 / (n - 3)) (Fieller, Hartley & Pearson 1957).
SPEARMAN_VARIANCE_FACTOR = 1.06
N_DECILES = 10
# A gather of this many (molecule, resample) pairs at a time bounds the bootstrap's memory.
RESAMPLE_BLOCK = 4_000_000
VERDICTS = ("invariant", "leans", "inconclusive", "no_reliance", "frame_dependent")


@dataclass(frozen=True)
class AuditSettings:
    """Resampling settings (recorded with every audit).

    ``n_permutations`` Monte Carlo sign flips are drawn when a property has at
    most ``max_permutation_molecules`` molecules; the smallest p-value they can
    give is ``1 / (n_permutations + 1)``, small enough to survive a Holm
    adjustment over a few dozen properties at 1e-3.
    """

    n_bootstrap: int = 1000
    n_permutations: int = 100_000
    max_permutation_molecules: int = 2_000

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class MoleculeErrors:
    """Per-molecule errors of one property; every array has shape (m,).

    ``molecule`` holds the caller's molecule codes (e.g. dataset row
    indices), sorted. Errors are in the property's unit (squared for ``se``).
    ``copy_spread`` is NaN for molecules with a single copy.
    """

    molecule: np.ndarray
    n_copies: np.ndarray
    stored: np.ndarray
    true: np.ndarray
    se_stored: np.ndarray
    se_rotated: np.ndarray
    ae_stored: np.ndarray
    ae_rotated: np.ndarray
    shift: np.ndarray
    copy_spread: np.ndarray

    @property
    def n(self) -> int:
        return len(self.molecule)

    def subset(self, mask: np.ndarray) -> MoleculeErrors:
        return MoleculeErrors(**{k: getattr(self, k)[mask] for k in self.__dataclass_fields__})


def molecule_errors(molecule: np.ndarray, stored: np.ndarray, rotated: np.ndarray, true: np.ndarray) -> MoleculeErrors:
    """Average each molecule's errors over its copies.

    Parameters
    ----------
    molecule : (r,) int codes, one row per (molecule, copy)
    stored, rotated, true : (r,) predictions on the stored pose and on the
        copy, and the true value (finite)
    """
    molecule = np.asarray(molecule)
    stored, rotated, true = (np.asarray(a, dtype=np.float64) for a in (stored, rotated, true))
    codes, inverse, counts = np.unique(molecule, return_inverse=True, return_counts=True)

    def mean(values: np.ndarray) -> np.ndarray:
        return np.bincount(inverse, weights=values, minlength=len(codes)) / counts

    mean_rotated = mean(rotated)
    deviation = rotated - mean_rotated[inverse]
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = np.sqrt(np.bincount(inverse, weights=deviation**2, minlength=len(codes)) / (counts - 1))
    spread[counts < 2] = np.nan
    return MoleculeErrors(
        molecule=codes,
        n_copies=counts,
        stored=mean(stored),
        true=mean(true),
        se_stored=mean((stored - true) ** 2),
        se_rotated=mean((rotated - true) ** 2),
        ae_stored=mean(np.abs(stored - true)),
        ae_rotated=mean(np.abs(rotated - true)),
        shift=np.sqrt(mean((rotated - stored) ** 2)),
        copy_spread=spread,
    )


def bootstrap_means(values: np.ndarray, n_bootstrap: int, seed: int) -> np.ndarray:
    """Column means of ``n_bootstrap`` seeded resamples of the rows of ``values``.

    values : (n, k) → (n_bootstrap, k). One resample of molecules serves every
    column, so ratios of columns are bootstrapped jointly.
    """
    rng = np.random.default_rng(seed)
    n = len(values)
    out = np.empty((n_bootstrap, values.shape[1]))
    block = max(1, RESAMPLE_BLOCK // max(n, 1))
    for start in range(0, n_bootstrap, block):
        b = min(block, n_bootstrap - start)
        idx = rng.integers(0, n, size=(b, n))
        # How often each molecule is drawn, then one matrix product: far faster than gathering rows.
        counts = np.bincount((idx + n * np.arange(b)[:, None]).ravel(), minlength=b * n).reshape(b, n)
        out[start : start + b] = (counts.astype(np.float64) @ values) / n
    return out


def sign_flip_test(differences: np.ndarray, settings: AuditSettings, seed: int) -> dict:
    """Two-sided paired sign-flip test of mean(differences) = 0 (exchangeable poses).

    Returns ``{pvalue, method, n_permutations, alternative}``.
    """
    d = np.asarray(differences, dtype=np.float64)
    n = len(d)
    total_sq = float(np.sum(d**2))
    if n == 0 or total_sq == 0.0:
        return {"pvalue": 1.0, "method": "no differences", "n_permutations": 0, "alternative": "two-sided"}
    if n > settings.max_permutation_molecules:
        z = abs(float(np.sum(d))) / np.sqrt(total_sq)
        return {
            "pvalue": float(min(1.0, 2.0 * stats.norm.sf(z))),
            "method": "sign-flip, normal approximation",
            "n_permutations": 0,
            "alternative": "two-sided",
        }
    rng = np.random.default_rng(seed)
    total = float(np.sum(d))
    # Flipped sums equal to the observed one up to rounding count as "as extreme".
    tolerance = 1e-9 * np.sum(np.abs(d))
    block = max(1, RESAMPLE_BLOCK // n)
    extreme = 0
    for start in range(0, settings.n_permutations, block):
        b = min(block, settings.n_permutations - start)
        # One random bit per (permutation, molecule): a set bit flips that molecule's sign.
        bits = np.unpackbits(rng.integers(0, 256, size=(b, (n + 7) // 8), dtype=np.uint8), axis=1, count=n)
        flipped = total - 2.0 * (bits.astype(np.float64) @ d)
        extreme += int(np.count_nonzero(np.abs(flipped) >= abs(total) - tolerance))
    return {
        "pvalue": (extreme + 1) / (settings.n_permutations + 1),
        "method": "sign-flip, Monte Carlo permutations",
        "n_permutations": settings.n_permutations,
        "alternative": "two-sided",
    }


def holm(pvalues: list[float | None]) -> list[float | None]:
    """Holm step-down adjustment of the non-null p-values (nulls stay null)."""
    present = [(p, i) for i, p in enumerate(pvalues) if p is not None]
    adjusted: list[float | None] = [None] * len(pvalues)
    m = len(present)
    running = 0.0
    for rank, (p, i) in enumerate(sorted(present)):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def spearman(x: np.ndarray, y: np.ndarray) -> dict:
    """Spearman's rho with a 95 % Fisher-z CI, or ``{rho: None, reason}``."""
    ok = np.isfinite(x) & np.isfinite(y)
    n = int(ok.sum())
    if n < 4:
        return {"rho": None, "ci95": None, "n": n, "reason": f"only {n} molecules with a score"}
    if np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return {"rho": None, "ci95": None, "n": n, "reason": "constant values (e.g. no prediction shift)"}
    rho = float(stats.spearmanr(x[ok], y[ok]).statistic)
    z = np.arctanh(np.clip(rho, -1 + 1e-12, 1 - 1e-12))
    half = 1.959964 * np.sqrt(SPEARMAN_VARIANCE_FACTOR / (n - 3)) if n > 3 else np.inf
    return {"rho": rho, "ci95": [float(np.tanh(z - half)), float(np.tanh(z + half))], "n": n, "reason": None}


def _reliance(se_stored_mean: float, se_rotated_mean: float, scale: float) -> float | None:
    return None if se_stored_mean <= INVARIANT_ABS * max(scale, 1.0) else se_rotated_mean / se_stored_mean - 1.0


def mse_floor(true: np.ndarray) -> float:
    """The smallest stored-pose MSE the reliance ratio divides by: :data:`MSE_FLOOR_FRACTION` of the variance."""
    variance = float(np.var(true))
    return MSE_FLOOR_FRACTION * (variance if variance > 0 else max(float(np.mean(true**2)), 1.0))


def reliance_by_decile(errors: MoleculeErrors, scores: np.ndarray) -> list[dict] | None:
    """Reliance within each decile of the classifier score (molecules without a score left out)."""
    ok = np.isfinite(scores)
    if ok.sum() < N_DECILES:
        return None
    s = scores[ok]
    edges = np.quantile(s, np.linspace(0, 1, N_DECILES + 1))
    bins = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, N_DECILES - 1)
    scale = float(np.mean(errors.true[ok] ** 2))
    rows = []
    for k in range(N_DECILES):
        sel = bins == k
        if not sel.any():
            continue
        rows.append({
            "decile": k + 1,
            "score_range": [float(edges[k]), float(edges[k + 1])],
            "n": int(sel.sum()),
            "reliance": _reliance(errors.se_stored[ok][sel].mean(), errors.se_rotated[ok][sel].mean(), scale),
        })  # fmt: skip
    return rows


def _score_figures(errors: MoleculeErrors, scores: np.ndarray | None, control: np.ndarray | None) -> dict:
    if scores is None:
        reason = "the dataset has no classifier scores (the models stage was not computed)"
        missing = {"rho": None, "ci95": None, "n": 0, "reason": reason}
        return {"shift_vs_score": missing, "shift_vs_control_score": missing, "reliance_by_decile": None}
    return {
        "shift_vs_score": spearman(errors.shift, scores),
        "shift_vs_control_score": spearman(errors.shift, control)
        if control is not None
        else {"rho": None, "ci95": None, "n": 0, "reason": "no control scores"},
        "reliance_by_decile": reliance_by_decile(errors, scores),
    }


def audit_figures(
    errors: MoleculeErrors,
    settings: AuditSettings,
    seed: int,
    scores: np.ndarray | None = None,
    control_scores: np.ndarray | None = None,
) -> dict:
    """Every figure of one property (see the module docstring); p-values not yet Holm-adjusted.

    scores, control_scores : (m,) classifier P(stored pose) per molecule of
    ``errors`` (NaN where missing), for the stored poses and the control.
    """
    n = errors.n
    if n == 0:
        raise ValueError("no molecules to audit")
    columns = np.column_stack([errors.se_stored, errors.se_rotated, errors.ae_stored, errors.ae_rotated])
    mse_stored, mse_rotated, mae_stored, mae_rotated = (float(v) for v in columns.mean(axis=0))
    floor = mse_floor(errors.true)
    reliance = (mse_rotated - mse_stored) / max(mse_stored, floor)
    ci: dict[str, list[float] | None] = {}
    if settings.n_bootstrap > 0 and n > 1:
        means = bootstrap_means(columns, settings.n_bootstrap, seed)
        for j, name in enumerate(("mse_stored", "mse_rotated", "mae_stored", "mae_rotated")):
            ci[name] = [float(v) for v in np.percentile(means[:, j], [2.5, 97.5])]
        # The percentile interval of the resampled ratio: above the floor, that of log(ratio) mapped back.
        increase = (means[:, 1] - means[:, 0]) / np.maximum(means[:, 0], floor)
        ci["reliance"] = [float(v) for v in np.percentile(increase, [2.5, 97.5])]
    ci.setdefault("reliance", None)
    test = sign_flip_test(errors.se_rotated - errors.se_stored, settings, seed + 1)
    shift_rms = float(np.sqrt(np.mean(errors.shift**2)))
    stored_rms = float(np.sqrt(np.mean(errors.stored**2)))
    multi = errors.n_copies >= 2
    spread_rms = float(np.sqrt(np.mean(errors.copy_spread[multi] ** 2))) if multi.any() else None
    special = shift_rms / (np.sqrt(2.0) * spread_rms) if spread_rms else None
    return {
        "n": n,
        "n_copies_max": int(errors.n_copies.max()),
        "mse_stored": mse_stored,
        "mse_rotated": mse_rotated,
        "mae_stored": mae_stored,
        "mae_rotated": mae_rotated,
        "mse_increase": mse_rotated - mse_stored,
        "mse_floor": floor,
        "reliance": reliance,
        "reliance_floored": mse_stored < floor,
        "reliance_reason": f"mse_stored is below the floor ({MSE_FLOOR_FRACTION:g} of the variance, {floor:.3g}): "
        "the ratio divides by the floor"
        if mse_stored < floor
        else None,
        "ci95": ci,
        "pvalue": test["pvalue"],
        "test": {k: v for k, v in test.items() if k != "pvalue"},
        "shift_rms": shift_rms,
        "stored_rms": stored_rms,
        "invariant": shift_rms <= max(INVARIANT_ABS, INVARIANT_REL * stored_rms),
        "copy_spread_rms": spread_rms,
        "stored_special_ratio": None if special is None else float(special),
        **_score_figures(errors, scores, control_scores),
    }


def _percent(x: float | None) -> str:
    return "n/a" if x is None else format_percent(x)


def shortcut_reading(regression: dict | None) -> str:
    """What the property's orientation-only regression says about a shortcut."""
    if not regression or regression.get("improvement") is None:
        return (
            "This dataset has no orientation-only regression for the property, so a learned shortcut "
            "cannot be told apart from rotated inputs that are out of distribution for the model."
        )
    gain = float(regression["improvement"])
    floor = max(
        0.01, float(regression.get("control_improvement") or 0.0) + 2 * float(regression.get("improvement_std") or 0.0)
    )
    if gain > floor:
        return (
            f"The pose alone predicts {gain:.1%} of this property in this dataset, "
            "so a learned shortcut through the pose is plausible."
        )
    return (
        f"The pose alone predicts almost none of this property here ({gain:+.1%}), so the rotated inputs are "
        "more likely out of distribution for the model (e.g. it only saw one pose convention) than a learned shortcut."
    )


def _change(figures: dict) -> str:
    """The MSE change in absolute terms and as a ratio, saying when the ratio reads against the floor."""
    stored, rotated = figures["mse_stored"], figures["mse_rotated"]
    text = f"rotated copies change the MSE from {stored:.3g} to {rotated:.3g} (by {rotated - stored:+.3g}"
    reliance = figures.get("reliance")
    if reliance is not None:
        floored = " against the floor of the stored-pose MSE" if figures.get("reliance_floored") else ""
        text += f", {_percent(reliance)}{floored}"
    ci = figures["ci95"].get("reliance")
    if ci:
        text += f"; 95 % CI {_percent(ci[0])} to {_percent(ci[1])}"
    return text + ")"


def verdict(figures: dict, pvalue_holm: float | None, frame_dependent: bool, regression: dict | None) -> dict:
    """``{code, text, alpha, rule_version}`` from one property's figures (see :data:`VERDICTS`).

    ``leans``: Holm p below :data:`LEANS_MAX_PVALUE` and an increase whose CI
    starts above :data:`LEANS_MIN_RELIANCE` (or, for figures stored before the
    floor existed, a stored-pose MSE of about 0 that the copies raise);
    ``inconclusive``: Holm p below :data:`INCONCLUSIVE_PVALUE`, or a CI that
    excludes 0, without the above; ``no_reliance`` otherwise.
    """
    out = {"alpha": LEANS_MAX_PVALUE, "rule_version": AUDIT_RULE_VERSION}
    ci = figures["ci95"].get("reliance")
    change = _change(figures)
    p_text = "n/a" if pvalue_holm is None else f"{pvalue_holm:.2g}"
    if frame_dependent:
        return {
            **out,
            "code": "frame_dependent",
            "text": "The property depends on the lab frame by definition, so the error depends on the pose for "
            f"any model; {change}. Audit it with the rotated copies' own true values.",
        }
    if figures["invariant"]:
        return {
            **out,
            "code": "invariant",
            "text": f"Invariant: rotating the input does not change the predictions (shift RMS "
            f"{figures['shift_rms']:.3g}), so the error does not depend on the pose.",
        }
    significant = pvalue_holm is not None and pvalue_holm < LEANS_MAX_PVALUE
    memoriser = figures.get("reliance") is None and figures["mse_rotated"] > figures["mse_stored"]
    if significant and ((ci and ci[0] > LEANS_MIN_RELIANCE) or memoriser):
        return {
            **out,
            "code": "leans",
            "text": f"The error depends on the pose: {change}, Holm-adjusted p = {p_text}. "
            + shortcut_reading(regression),
        }
    excludes_zero = bool(ci) and (ci[0] > 0 or ci[1] < 0)
    if significant or excludes_zero or (pvalue_holm is not None and pvalue_holm < INCONCLUSIVE_PVALUE):
        why = (
            f"below α = {LEANS_MAX_PVALUE:g}, but the increase may be under {LEANS_MIN_RELIANCE:.0%}"
            if significant
            else f"not below α = {LEANS_MAX_PVALUE:g}"
        )
        return {
            **out,
            "code": "inconclusive",
            "text": f"Inconclusive: {change}, Holm-adjusted p = {p_text} ({why}). "
            "More molecules or rotated copies would settle it.",
        }
    return {
        **out,
        "code": "no_reliance",
        "text": f"No detectable reliance on the pose: {change}, Holm-adjusted p = {p_text} (α = {LEANS_MAX_PVALUE:g}).",
    }


def reread_verdict(entry: dict, frame_dependent: bool) -> dict:
    """The verdict of a stored property entry by the current rule (entries keep their figures, not the rule)."""
    if (entry.get("verdict") or {}).get("rule_version") == AUDIT_RULE_VERSION:
        return entry["verdict"]
    improvement = entry.get("regression_improvement")
    regression = None if improvement is None else {"improvement": improvement}
    return {**verdict(entry, entry.get("pvalue_holm"), frame_dependent, regression), "reread": True}


def units_warning(mse_stored: float, variance: float, unit: str = "", split: str | None = None) -> str | None:
    """A warning when the stored-pose MSE exceeds the property's variance (predicting the mean does better)."""
    if variance > 0 and mse_stored > variance:
        unit_text = f" in {unit}" if unit else ""
        where = f" on split {split!r}" if split else " over all molecules"
        return (
            f"the stored-pose MSE{where} ({mse_stored:.3g}) is above the property's variance ({variance:.3g}): "
            f"are the predictions in the dataset's units{unit_text}?"
        )
    return None
