"""Orientation statistics from per-shard partial results, for sets too large for one pass in memory.

Each function either makes a small partial result from one shard (counts,
kernel sums) or turns merged partials into the statistic. Merges are sums, so
the order of the shards never changes a count; float sums agree to rounding.

* KS test: the angles go into a fine histogram (``FINE_BINS`` on [0, π]).
  The exact statistic sup|F_n − F| is bracketed by its values at the bin
  edges: within a bin the empirical CDF rises from E(l) to E(r) and the Haar
  CDF from F(l) to F(r), so taking max(E(r) − F(l), F(r) − E(l)) overstates
  the exact statistic by at most F(r) − F(l) ≤ (2/π)·π/FINE_BINS < 1e-5.
* KL: the k-NN (Kozachenko–Leonenko) estimate over all molecules up to
  ``EXACT_KL_LIMIT``; beyond it, and for the sign-invariant variant and
  ``kl_at_n``, the mean over seeded disjoint subsamples with a t interval over
  the subsamples. Each fit is a :class:`KLPart`: which molecules belong to it
  is a function of (seed, global index) alone, so one task per part can read
  only its rows from the shards, and any cut gives the same subsamples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import digamma
from scipy.stats import kstwo
from scipy.stats import t as student_t

from orientscope.science.counter_rng import subsample, uniforms
from orientscope.science.so3_stats import (
    KL_AT_N_KEY,
    KL_KEY,
    KL_SIGN_INVARIANT_KEY,
    SO3_MOD_SIGNS_VOLUME,
    SO3_VOLUME,
    haar_angle_cdf,
    haar_angle_density,
    knn_entropy_terms,
    kth_neighbour_angles,
)
from orientscope.science.verdict import KL_SPREAD_GROWTH, SPREAD_MARGIN, kl_interval, subsample_spread

COARSE_BINS = 60
FINE_PER_COARSE = 4096
FINE_BINS = COARSE_BINS * FINE_PER_COARSE
EXACT_KL_LIMIT = 10_000_000
EXACT_SIGN_INVARIANT_LIMIT = 250_000  # eight copies per molecule in the tree: 250k molecules take ~6 s
SIGN_INVARIANT_SUBSAMPLES = 3
KL_AT_N = 100_000
MAX_SUBSAMPLES = 10
# The sign-invariant KL interval's spread: this many random subsamples of half the set, at most this
# large. On QM9 (130,831) 16 subsamples of 5,000 give the same spread as 20 of 50,000 (within their own
# seed-to-seed scatter) in a tenth of the time (0.3 s, not 3 s, per orientation set): the spread is
# rescaled to n anyway (subsample_spread), and the eight-copy k-NN search grows with the subsample.
SPREAD_SUBSAMPLES = 16
SPREAD_SUBSAMPLE_MAX = 5_000


# ---------------------------------------------------------------------- KS and the angle histogram
def fine_angle_counts(angles_rad: np.ndarray) -> np.ndarray:
    """(FINE_BINS,) int64 counts of angles on [0, π]: one shard's partial result."""
    idx = np.floor(np.asarray(angles_rad, dtype=np.float64) * (FINE_BINS / np.pi)).astype(np.int64)
    return np.bincount(np.clip(idx, 0, FINE_BINS - 1), minlength=FINE_BINS)


def ks_from_counts(counts: np.ndarray) -> dict:
    """Two-sided one-sample KS test against the Haar angle law from merged fine counts."""
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    if n == 0:
        return {"statistic": float("nan"), "pvalue": float("nan"), "n": 0}
    edges = np.linspace(0.0, np.pi, len(counts) + 1)
    cdf = haar_angle_cdf(edges)
    ecdf = np.concatenate([[0], np.cumsum(counts)]) / n
    d_plus = np.max(ecdf[1:] - cdf[:-1])
    d_minus = np.max(cdf[1:] - ecdf[:-1])
    d = float(np.clip(max(d_plus, d_minus), 0.0, 1.0))
    return {"statistic": d, "pvalue": float(np.clip(kstwo.sf(d, n), 0.0, 1.0)), "n": n}


def histogram_from_counts(counts: np.ndarray, bins: int = COARSE_BINS) -> dict:
    """The report's density histogram (``bins`` on [0, π]) from merged fine counts."""
    coarse = np.asarray(counts, dtype=np.float64).reshape(bins, -1).sum(axis=1)
    edges = np.linspace(0.0, np.pi, bins + 1)
    total = coarse.sum()
    density = coarse / (total * np.diff(edges)) if total else np.zeros(bins)
    centres = 0.5 * (edges[:-1] + edges[1:])
    return {
        "bin_edges_rad": edges.tolist(),
        "density": density.tolist(),
        "haar_density": haar_angle_density(centres).tolist(),
    }


# ---------------------------------------------------------------------- KL
def _kl_terms(q: np.ndarray, k: int, sign_invariant: bool, overwrite: bool) -> tuple[float, np.ndarray]:
    terms = knn_entropy_terms(kth_neighbour_angles(q, k, sign_invariant, overwrite))
    log_vol = np.log(SO3_MOD_SIGNS_VOLUME if sign_invariant else SO3_VOLUME)
    return float(log_vol - digamma(len(terms)) + digamma(k)), terms


def kl_exact(
    quaternions: np.ndarray, k: int = 5, sign_invariant: bool = False, overwrite: bool = False, seed: int = 0
) -> dict:
    """k-NN KL to Haar-uniform over every row, with a 95 % interval for the expected estimate at this n.

    The estimate depends on n (on QM9 subsets 0.31 at 100, 0.54 at 1,000,
    0.91 at 130,831), so the interval is for its mean at this n, not for the
    population's KL: see :func:`orientscope.science.verdict.kl_interval` (the
    fitted null's law at n, widened with the estimate). The sign-invariant
    variant has no fitted null: its interval is the normal approximation of
    the mean term, widened to the spread over ``SPREAD_SUBSAMPLES`` seeded
    random subsamples (half the set, at most ``SPREAD_SUBSAMPLE_MAX``) when that is larger.
    ``overwrite`` lets the k-NN search turn the caller's float64 array to
    w ≥ 0 in place instead of copying it (same orientations, same KL).
    """
    q = np.asarray(quaternions, dtype=np.float64)
    const, terms = _kl_terms(q, k, sign_invariant, overwrite)
    n = len(terms)
    value = const - float(terms.mean())
    out = {"value": value, "k": k, "n": n, "n_used": n, "sign_invariant": sign_invariant}
    if not sign_invariant:
        return {
            **out,
            "ci95": kl_interval(value, n, k, float(terms.var(ddof=1)) if n > 1 else None),
            "method": "exact k-NN (Kozachenko-Leonenko) over all molecules; CI: the expected estimate at this n, "
            f"a Neyman interval of the null law at n scaled to sd0^2 + max({KL_SPREAD_GROWTH} x KL, excess "
            "variance of the log-density terms) / n",
        }
    spread = kl_spread(q, k, sign_invariant, seed)
    half = 1.96 * float(terms.std(ddof=1)) / np.sqrt(n)
    if np.isfinite(spread):
        half = max(half, SPREAD_MARGIN * spread)
    return {
        **out,
        "ci95": [float(value - half), float(value + half)],
        "spread_sd": spread if np.isfinite(spread) else None,
        "interval_seed": seed,
        "method": "exact k-NN (Kozachenko-Leonenko) over all molecules; CI: normal, widened to "
        f"{SPREAD_MARGIN} x the spread over {SPREAD_SUBSAMPLES} random subsamples of half the set "
        f"(at most {SPREAD_SUBSAMPLE_MAX:,}) when larger",
    }


def kl_spread(q: np.ndarray, k: int, sign_invariant: bool, seed: int) -> float:
    """sd of the KL estimate at n = len(q), from ``SPREAD_SUBSAMPLES`` seeded subsamples of up to half of q."""
    n = len(q)
    m = min(n // 2, SPREAD_SUBSAMPLE_MAX)
    if m <= k:  # the k-NN estimate needs more than k points
        return float("nan")
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(SPREAD_SUBSAMPLES):
        rows = np.sort(rng.choice(n, m, replace=False))
        const, terms = _kl_terms(q[rows], k, sign_invariant, overwrite=True)
        values.append(const - float(terms.mean()))
    return subsample_spread(np.array(values), m, n)


@dataclass(frozen=True)
class KLPart:
    """One k-NN KL fit: the molecules of subsample ``group`` of ``n_groups``, at most ``size`` of them.

    A uniform draw per molecule, ``uniforms(seed, stream, index)``, puts it in
    one of ``n_groups`` disjoint groups; with ``size`` set, the group keeps its
    ``size`` molecules with the smallest ``(seed, stream + ":trim")`` draws.
    Both are functions of the global index, so a task can pick its rows shard
    by shard.
    """

    stream: str
    group: int
    n_groups: int
    size: int | None
    sign_invariant: bool

    def members(self, seed: int, index: np.ndarray) -> np.ndarray:
        """(len(index),) bool: which of these global indices fall in this part's group."""
        if self.n_groups == 1:
            return np.ones(len(index), dtype=bool)
        u = uniforms(seed, self.stream, index)[:, 0]
        return np.floor(u * self.n_groups).astype(np.int64) == self.group

    def trim(self, seed: int, index: np.ndarray) -> np.ndarray:
        """Positions in the group's sorted global ``index`` of the molecules the fit uses."""
        if self.size is None or len(index) <= self.size:
            return np.arange(len(index))
        return np.searchsorted(index, subsample(seed, self.stream + ":trim", index, self.size))


def _fixed_size(n: int, m: int, count: int, stream: str, sign_invariant: bool) -> list[KLPart]:
    # Groups of about m + 4√m molecules, so each nearly always holds m to keep.
    n_groups = max(1, int(n // (m + 4.0 * np.sqrt(m))))
    return [KLPart(stream, g, n_groups, m, sign_invariant) for g in range(min(n_groups, count))]


def kl_plan(
    n: int, exact_limit: int = EXACT_KL_LIMIT, sign_limit: int = EXACT_SIGN_INVARIANT_LIMIT, at_n: int = KL_AT_N
) -> dict[str, list[KLPart]]:
    """The fits behind ``kl``, ``kl_sign_invariant`` and ``kl_at_n`` of a set of ``n`` molecules.

    ``kl`` is one exact fit up to ``exact_limit`` molecules, else ⌈n / limit⌉
    disjoint groups that together use every molecule; the sign-invariant
    variant is exact up to ``sign_limit`` (eight copies per molecule in the
    tree), else ``SIGN_INVARIANT_SUBSAMPLES`` subsamples of ``sign_limit``;
    ``kl_at_n`` is up to ``MAX_SUBSAMPLES`` subsamples of ``at_n`` (none below ``at_n``).
    """
    groups = max(1, -(-n // exact_limit))
    return {
        KL_KEY: [KLPart("kl", g, groups, None, False) for g in range(groups)],
        KL_SIGN_INVARIANT_KEY: [KLPart("kl:signs", 0, 1, None, True)]
        if n <= sign_limit
        else _fixed_size(n, sign_limit, SIGN_INVARIANT_SUBSAMPLES, "kl:signs", True),
        KL_AT_N_KEY: _fixed_size(n, at_n, MAX_SUBSAMPLES, "kl:at-n", False) if n >= at_n else [],
    }


def part_rows(part: KLPart, seed: int, index: np.ndarray) -> np.ndarray:
    """The sorted global indices of ``index`` (sorted) that ``part`` fits."""
    group = index[part.members(seed, index)]
    return group[part.trim(seed, group)]


def combine_kl(fits: list[dict], n: int, k: int, sign_invariant: bool, exact: bool = True) -> dict:
    """One ``kl`` entry from its parts' fits: the exact fit (if ``exact`` and it covers all ``n``), or
    their mean with a t interval.

    With a single subsample the interval is that subsample's normal-approximation CI.
    """
    if exact and len(fits) == 1 and fits[0]["n"] == n:
        return fits[0]
    values = np.array([f["value"] for f in fits])
    value = float(values.mean())
    if len(values) > 1:
        half = float(student_t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values)))
        ci = [float(value - half), float(value + half)]
    else:
        ci = fits[0]["ci95"]
    sizes = [f["n"] for f in fits]
    size = f"{sizes[0]:,}" if min(sizes) == max(sizes) else f"{min(sizes):,}-{max(sizes):,}"
    return {
        "value": value,
        "ci95": ci,
        "k": k,
        "n": n,
        "n_used": int(sum(sizes)),
        "sign_invariant": sign_invariant,
        "subsample_size": int(round(np.mean(sizes))),
        "n_subsamples": len(fits),
        "method": f"mean k-NN KL over {len(fits)} seeded disjoint subsample(s) of {size} "
        "(a uniform draw per molecule picks its subsample); CI: t interval over the subsamples",
    }


def kl_from_fits(plan: dict[str, list[KLPart]], fits: dict[str, list[dict]], n: int, k: int, at_n: int) -> dict:
    """``kl``, ``kl_sign_invariant`` and ``kl_at_n`` from each part's fit (same order as ``plan``)."""
    out = {
        # kl_at_n always reads as a subsample of at_n, even when that is the whole set.
        name: combine_kl(fits[name], n, k, parts[0].sign_invariant, exact=name != KL_AT_N_KEY)
        for name, parts in plan.items()
        if parts
    }
    out.setdefault(KL_AT_N_KEY, {"n": at_n, "value": None, "skipped": f"needs {at_n:,} molecules"})
    return out


def kl_summary(
    quaternions: np.ndarray, seed: int, k: int = 5, at_n: int = KL_AT_N, exact_limit: int = EXACT_KL_LIMIT
) -> dict:
    """``kl``, ``kl_sign_invariant`` and ``kl_at_n`` of one set of orientations (n, 4), global index = row."""
    q = np.asarray(quaternions, dtype=np.float64)
    index = np.arange(len(q))
    plan = kl_plan(len(q), exact_limit=exact_limit, at_n=at_n)
    fits = {
        name: [kl_exact(q[part_rows(p, seed, index)], k, p.sign_invariant, overwrite=True) for p in parts]
        for name, parts in plan.items()
    }
    return kl_from_fits(plan, fits, len(q), k, at_n)
