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
The rotation shift (how far predictions move when the molecule is rotated)
    Per molecule, ``shift`` is the RMS and ``shift_max`` the largest absolute
    value over its copies of ``rotated - stored``, in the property's unit.
    ``shift_median`` and ``shift_p95`` are the median and the 95th percentile
    over molecules of ``shift``, each with a distribution-free 95 % interval
    from order statistics (``*_ci95``, :func:`quantile_ci`); ``shift_max_p95``
    is the 95th percentile of ``shift_max``, ``shift_max`` the largest of all
    and ``shift_tolerance`` the float tolerance under which a shift is 0
    (:func:`shift_tolerance`). ``shift_rms`` is the RMS over molecules of ``shift``.
``copy_spread_rms``, ``stored_special_ratio``
    With two or more copies, ``copy_spread_rms`` is the RMS of the per-molecule
    standard deviation of the rotated predictions, and ``stored_special_ratio
    = shift_rms / (sqrt(2) * copy_spread_rms)``: how far the stored-pose
    predictions sit from the copies', in units of the copies' distance from one
    another (1: as far as one copy from another). It describes where the
    predictions sit, not their errors: a model fitted on the stored poses can sit
    at ratio 1 and still be more accurate there, so the tier never reads it.

The tiers (words) built from these figures are in :mod:`orientscope.science.audit_verdict`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orientscope.core.numbers import decimals_apart, format_number
from orientscope.core.resources import scipy_stats as stats

# A stored-pose MSE above the variance by less than this share is rounding, not a worse-than-mean model
# (a constant prediction at the mean lands on either side of the variance in the last bit).
UNITS_TOLERANCE = 1e-9

# The ratio's denominator is at least this share of the property's variance (a stored-pose MSE of 0 is
# a memoriser, not an infinitely good model); small enough that a model 1000x better than the mean
# still divides by its own MSE.
MSE_FLOOR_FRACTION = 1e-6
# A shift within max(INVARIANT_ABS, INVARIANT_REL * RMS of the stored-pose predictions) is float noise.
INVARIANT_ABS = 1e-12
INVARIANT_REL = 1e-6
SHIFT_QUANTILES = {"median": 0.5, "p95": 0.95}
CI_LEVEL = 0.95
# Spearman's rho: Fisher-z standard error sqrt(1.06 / (n - 3)) (Fieller, Hartley & Pearson 1957).
SPEARMAN_VARIANCE_FACTOR = 1.06
N_DECILES = 10
# A gather of this many (molecule, resample) pairs at a time bounds the bootstrap's memory.
RESAMPLE_BLOCK = 4_000_000


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
    ``shift`` and ``shift_max`` are the RMS and the largest absolute value over copies of
    rotated − stored. ``copy_spread`` is NaN for molecules with a single copy.
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
    shift_max: np.ndarray

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
    largest = np.zeros(len(codes))
    np.maximum.at(largest, inverse, np.abs(rotated - stored))
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
        shift_max=largest,
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


def quantile_ci(values: np.ndarray, q: float, level: float = CI_LEVEL) -> tuple[float, list[float | None]]:
    """The ``q`` quantile of ``values`` (n,) and its distribution-free ``level`` interval [low, high].

    The bounds are order statistics whose ranks come from the Binomial(n, q) quantiles (the sign-test
    interval of a quantile: coverage at least ``level`` up to the binomial's discreteness, for any
    continuous distribution). A bound the sample cannot give (too few values beyond the quantile) is None.
    """
    x = np.sort(np.asarray(values, dtype=np.float64))
    n = len(x)
    if n == 0:
        raise ValueError("no values")
    tail = (1.0 - level) / 2.0
    low_rank = int(stats.binom.ppf(tail, n, q))  # 1-based rank of the lower bound
    high_rank = int(stats.binom.ppf(1.0 - tail, n, q)) + 1
    low = float(x[low_rank - 1]) if low_rank >= 1 else None
    high = float(x[high_rank - 1]) if high_rank <= n else None
    return float(np.quantile(x, q)), [low, high]


def shift_tolerance(stored_rms: float) -> float:
    """The shift below which rotating the input moved no prediction beyond float rounding."""
    return max(INVARIANT_ABS, INVARIANT_REL * stored_rms)


def shift_figures(shift: np.ndarray, shift_max: np.ndarray | None, stored_rms: float) -> dict:
    """The rotation shift's summary (see the module docstring) from per-molecule shifts (m,).

    ``shift_max`` None (a table stored before it existed) leaves the max-based figures out, and the
    largest RMS shift stands in for ``shift_max``.
    """
    out: dict = {}
    for name, q in SHIFT_QUANTILES.items():
        out[f"shift_{name}"], out[f"shift_{name}_ci95"] = quantile_ci(shift, q)
    if shift_max is not None:
        out["shift_max_p95"], out["shift_max_p95_ci95"] = quantile_ci(shift_max, SHIFT_QUANTILES["p95"])
    else:
        out["shift_max_p95"], out["shift_max_p95_ci95"] = None, None
    out["shift_max"] = float(np.max(shift_max if shift_max is not None else shift))
    out["shift_tolerance"] = shift_tolerance(stored_rms)
    return out


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
        "reliance_reason": f"mse_stored is below the floor ({MSE_FLOOR_FRACTION:g} of the variance, "
        f"{format_number(floor, '.3g')}): the ratio divides by the floor"
        if mse_stored < floor
        else None,
        "ci95": ci,
        "pvalue": test["pvalue"],
        "test": {k: v for k, v in test.items() if k != "pvalue"},
        "shift_rms": shift_rms,
        "stored_rms": stored_rms,
        **shift_figures(errors.shift, errors.shift_max, stored_rms),
        "invariant": float(errors.shift_max.max()) <= shift_tolerance(stored_rms),
        "copy_spread_rms": spread_rms,
        "stored_special_ratio": None if special is None else float(special),
        **_score_figures(errors, scores, control_scores),
    }


def units_warning(mse_stored: float, variance: float, unit: str = "", split: str | None = None) -> str | None:
    """A warning when the stored-pose MSE exceeds the property's variance (predicting the mean does better).

    A constant prediction at the mean has an MSE equal to the variance, up to rounding in the last bit:
    that is no worse than the mean, so a relative excess below :data:`UNITS_TOLERANCE` says nothing. Both
    numbers get as many significant digits as it takes to read apart, so "above" never sits between two
    equal-looking numbers.
    """
    if variance > 0 and mse_stored > variance * (1 + UNITS_TOLERANCE):
        unit_text = f" in {unit}" if unit else ""
        where = f" on split {split!r}" if split else " over all molecules"
        fmt = f".{decimals_apart([mse_stored, variance], start=3, style='g')}g"  # "above" must read above
        return (
            f"the stored-pose MSE{where} ({format_number(mse_stored, fmt)}) is above the property's variance "
            f"({format_number(variance, fmt)}): are the predictions in the dataset's units{unit_text}?"
        )
    return None
