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
  ``EXACT_KL_LIMIT``; beyond it, and for ``kl_at_n``, the mean over seeded
  disjoint subsamples with a t interval over the subsamples.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma
from scipy.stats import kstwo
from scipy.stats import t as student_t

from backend.science.counter_rng import random_bits
from backend.science.so3_stats import (
    SO3_MOD_SIGNS_VOLUME,
    SO3_VOLUME,
    haar_angle_cdf,
    haar_angle_density,
    knn_angles,
    knn_entropy_terms,
)

COARSE_BINS = 60
FINE_PER_COARSE = 4096
FINE_BINS = COARSE_BINS * FINE_PER_COARSE
EXACT_KL_LIMIT = 10_000_000
EXACT_SIGN_INVARIANT_LIMIT = 250_000  # eight copies per molecule in the tree: 250k molecules take ~6 s
SIGN_INVARIANT_SUBSAMPLES = 3
KL_AT_N = 100_000
MAX_SUBSAMPLES = 10


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
def _kl_terms(q: np.ndarray, k: int, sign_invariant: bool) -> tuple[float, np.ndarray]:
    terms = knn_entropy_terms(knn_angles(q, k, sign_invariant)[:, k - 1])
    log_vol = np.log(SO3_MOD_SIGNS_VOLUME if sign_invariant else SO3_VOLUME)
    return float(log_vol - digamma(len(terms)) + digamma(k)), terms


def kl_exact(quaternions: np.ndarray, k: int = 5, sign_invariant: bool = False) -> dict:
    """k-NN KL to Haar-uniform over every row, with a normal-approximation CI of the mean term.

    The CI is the one a bootstrap of the per-molecule terms converges to, at no extra cost.
    """
    const, terms = _kl_terms(np.asarray(quaternions, dtype=np.float64), k, sign_invariant)
    value = const - float(terms.mean())
    half = 1.96 * float(terms.std(ddof=1)) / np.sqrt(len(terms))
    return {
        "value": value,
        "ci95": [float(value - half), float(value + half)],
        "k": k,
        "n": len(terms),
        "n_used": len(terms),
        "sign_invariant": sign_invariant,
        "method": "exact k-NN (Kozachenko-Leonenko) over all molecules; CI: normal approximation of the mean term",
    }


def disjoint_subsamples(index: np.ndarray, m: int, n_subsamples: int, seed: int, stream: str) -> list[np.ndarray]:
    """Up to ``n_subsamples`` disjoint sets of ``m`` rows of ``index``, seeded per global index."""
    index = np.asarray(index, dtype=np.int64)
    order = index[np.lexsort((index, random_bits(seed, stream, index)[:, 0]))]
    count = min(n_subsamples, len(index) // m)
    return [np.sort(order[b * m : (b + 1) * m]) for b in range(count)]


def kl_subsampled(
    quaternions: np.ndarray, m: int, seed: int, stream: str, k: int = 5, sign_invariant: bool = False,
    n_subsamples: int = MAX_SUBSAMPLES,
) -> dict:  # fmt: skip
    """Mean k-NN KL over seeded disjoint subsamples of ``m`` rows, with a t interval over the subsamples.

    With a single subsample the interval is that subsample's normal-approximation CI.
    """
    q = np.asarray(quaternions, dtype=np.float64)
    blocks = disjoint_subsamples(np.arange(len(q)), m, n_subsamples, seed, stream)
    if not blocks:
        raise ValueError(f"need at least m={m} orientations, got {len(q)}")
    fits = [kl_exact(q[rows], k, sign_invariant) for rows in blocks]
    values = np.array([f["value"] for f in fits])
    value = float(values.mean())
    if len(values) > 1:
        half = float(student_t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values)))
        ci = [float(value - half), float(value + half)]
    else:
        ci = fits[0]["ci95"]
    return {
        "value": value,
        "ci95": ci,
        "k": k,
        "n": len(q),
        "n_used": m * len(blocks),
        "sign_invariant": sign_invariant,
        "subsample_size": m,
        "n_subsamples": len(blocks),
        "method": f"mean k-NN KL over {len(blocks)} seeded disjoint subsample(s) of {m:,}; "
        "CI: t interval over the subsamples",
    }


def kl_summary(quaternions: np.ndarray, seed: int, k: int = 5, at_n: int = KL_AT_N) -> dict:
    """``kl``, ``kl_sign_invariant`` and ``kl_at_n`` of one set of orientations (n, 4)."""
    q = np.asarray(quaternions, dtype=np.float64)
    n = len(q)
    if n <= EXACT_KL_LIMIT:
        kl = kl_exact(q, k)
    else:
        kl = kl_subsampled(q, EXACT_KL_LIMIT, seed, "kl", k, n_subsamples=n // EXACT_KL_LIMIT)
    if n <= EXACT_SIGN_INVARIANT_LIMIT:
        signs = kl_exact(q, k, sign_invariant=True)
    else:
        signs = kl_subsampled(
            q,
            EXACT_SIGN_INVARIANT_LIMIT,
            seed,
            "kl:signs",
            k,
            sign_invariant=True,
            n_subsamples=SIGN_INVARIANT_SUBSAMPLES,
        )
    at = kl_subsampled(q, at_n, seed, "kl:at-n", k) if n >= at_n else None
    return {
        "kl": kl,
        "kl_sign_invariant": signs,
        "kl_at_n": at or {"n": at_n, "value": None, "skipped": f"needs {at_n:,} molecules"},
    }
