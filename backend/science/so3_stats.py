"""Statistics of orientation distributions on SO(3).

The Haar measure on SO(3) (total volume 8π²) gives the rotation angle θ the
density (2/π)·sin²(θ/2) with CDF (θ - sin θ)/π; a geodesic ball of radius θ
has volume 8π(θ - sin θ). With the axis-sign ambiguity modded out the space is
SO(3)/{diag(±1,±1,±1), det = 1}, of volume 2π².
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.spatial import cKDTree
from scipy.special import digamma

from orientscope.core.numbers import format_count, format_number, format_p
from orientscope.core.resources import scipy_stats as stats
from orientscope.science.rotations import (
    chord_to_angle,
    geodesic_angle,
    matrix_to_quaternion,
    quaternion_multiply,
    sign_flip_quaternions,
)
from orientscope.science.statistic import ReportField, Statistic

SO3_VOLUME = 8.0 * np.pi**2
SO3_MOD_SIGNS_VOLUME = SO3_VOLUME / 4.0
# A k-th neighbour at exactly zero distance (duplicate frames) would give
# log(0); clamp the ball radius to this many radians.
MIN_RADIUS_RAD = 1e-6


def haar_angle_density(theta: np.ndarray) -> np.ndarray:
    """Density of the rotation angle of a Haar-uniform rotation, (2/π)·sin²(θ/2)."""
    return (2.0 / np.pi) * np.sin(np.asarray(theta) / 2.0) ** 2


def haar_angle_cdf(theta: np.ndarray) -> np.ndarray:
    theta = np.clip(np.asarray(theta, dtype=np.float64), 0.0, np.pi)
    return (theta - np.sin(theta)) / np.pi


def ball_volume(theta: np.ndarray) -> np.ndarray:
    """Haar volume of a geodesic ball of radius θ in SO(3)."""
    return 8.0 * np.pi * (theta - np.sin(theta))


# The quaternions that send a frame to one that represents the same orientation: ±1 for q and −q, and
# with the axis signs ignored the quaternion group {±1, ±i, ±j, ±k} (the sign flips are rotations by π
# about x, y and z). Identity first. Multiplying by them only permutes and negates components: exact.
_PLUS_MINUS = np.array([[0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, -1.0]])
_FLIP_GROUP = np.concatenate([sign_flip_quaternions(), -sign_flip_quaternions()])


def _symmetry(sign_invariant: bool) -> np.ndarray:
    """(m, 4) scalar-last quaternions g, identity first: g·q is the same orientation as q."""
    return _FLIP_GROUP if sign_invariant else _PLUS_MINUS


def orientation_points(quaternions: np.ndarray, sign_invariant: bool = False, overwrite: bool = False) -> np.ndarray:
    """(n, 4) float64: each orientation's copy g·q with the largest w (ties: the first g), what an
    orientation tree holds (:func:`nearest_orientations`).

    That copy lies in the cell of the identity, {w ≥ |x|, |y|, |z|} with the
    axis signs ignored, else {w ≥ 0}. With ``overwrite`` and no flips, the caller's
    float64 array is turned in place; a C-ordered float64 array already in the cell
    is returned as it is (a memory map stays one).
    """
    q = np.asarray(quaternions, dtype=np.float64)
    if not sign_invariant and q.flags.c_contiguous and not (q[:, 3] < 0).any():
        return q
    points = q if overwrite and q.flags.c_contiguous else np.array(q, dtype=np.float64, order="C")
    if not sign_invariant:
        points[points[:, 3] < 0] *= -1.0
        return points
    best = points.copy()
    for g in _FLIP_GROUP[1:]:
        copy = quaternion_multiply(g, points)
        better = copy[:, 3] > best[:, 3]
        best[better] = copy[better]
    return best


QUERY_BLOCK = 500_000  # rows per KD-tree query: bounds the (block, k + 1) distance and index arrays


def nearest_orientations(
    tree: cKDTree, queries: np.ndarray, k: int, sign_invariant: bool = False, exclude: np.ndarray | None = None,
    workers: int = -1,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The one nearest-orientation search, where q and −q are one rotation (and, with ``sign_invariant``,
    g·q for the axis sign flips g too): (m, k) chord distances, ascending, and the (m, k) tree rows.

    tree : a cKDTree over :func:`orientation_points` (one copy per orientation, in the identity's
    cell); queries : (m, 4) unit quaternions of any sign; exclude : (m,) a tree row each query
    leaves out (itself), or None. Equally near rows come in row order (which of them take the k-th
    place is the tree's choice).

    The distance to orientation c is min over the symmetry g of |p − g·c| = |g⁻¹·p − c|. The tree holds
    each c in the identity's cell; g·c lies in g's cell, so |p − g·c| is at least p's distance to
    the face between the two cells, p·(e − g)/|e − g|. Only queries with a face nearer than the k-th
    distance found so far query g⁻¹·p as well (the few near a cell boundary), and the result is the
    neighbour list of a tree holding every copy, exactly (each copy its own neighbour, as there).
    """
    group = _symmetry(sign_invariant)
    p = orientation_points(np.atleast_2d(queries), sign_invariant)
    dist, idx = _query(tree, p, k, exclude, workers)
    for g in group[1:]:
        face = (group[0] - g) / np.linalg.norm(group[0] - g)
        near = np.flatnonzero(p @ face <= dist[:, k - 1])
        if not len(near):
            continue
        inverse = g * np.array([-1.0, -1.0, -1.0, 1.0])  # the conjugate of a unit quaternion
        mirror = quaternion_multiply(inverse, p[near])
        d2, i2 = _query(tree, mirror, k, None if exclude is None else exclude[near], workers)
        both_d, both_i = np.concatenate([dist[near], d2], axis=1), np.concatenate([idx[near], i2], axis=1)
        order = np.lexsort((both_i, both_d), axis=1)[:, :k]
        dist[near] = np.take_along_axis(both_d, order, axis=1)
        idx[near] = np.take_along_axis(both_i, order, axis=1)
    return dist, idx


def _query(tree: cKDTree, points: np.ndarray, k: int, exclude: np.ndarray | None, workers: int):
    """(m, k) distances and rows of the k nearest tree points, leaving out each query's ``exclude`` row,
    equally near rows in row order."""
    extra = 0 if exclude is None else 1
    dist, idx = tree.query(points, k=k + extra, workers=workers)
    dist, idx = dist.reshape(len(points), k + extra), idx.reshape(len(points), k + extra)
    if exclude is not None:
        # The tree answers in distance order: drop the excluded row's column, or the farthest where
        # the row is not among the answers (duplicates of it came first).
        own = idx == np.asarray(exclude)[:, None]
        drop = np.where(own.any(axis=1), own.argmax(axis=1), k)
        cols = np.arange(k)[None, :]
        cols = cols + (cols >= drop[:, None])
        dist, idx = np.take_along_axis(dist, cols, axis=1), np.take_along_axis(idx, cols, axis=1)
    tied = np.flatnonzero((dist[:, 1:] == dist[:, :-1]).any(axis=1))  # the tree orders ties as it likes
    if tied.size:
        order = np.lexsort((idx[tied], dist[tied]), axis=1)
        dist[tied], idx[tied] = np.take_along_axis(dist[tied], order, 1), np.take_along_axis(idx[tied], order, 1)
    return dist, idx


def _knn_chords(points: np.ndarray, k: int, sign_invariant: bool, block: int):
    """Yield (rows, (len(rows), k) sorted chord distances) from each point to its k nearest other
    orientations (:func:`nearest_orientations`), ``block`` rows at a time."""
    n = len(points)
    tree = cKDTree(points, copy_data=False)
    for start in range(0, n, block):
        rows = np.arange(start, min(start + block, n))
        dist, _ = nearest_orientations(tree, points[rows], k, sign_invariant, exclude=rows)
        yield rows, dist


def knn_angles(
    quaternions: np.ndarray, k: int = 5, sign_invariant: bool = False, block: int = QUERY_BLOCK
) -> np.ndarray:
    """(n, k) geodesic angles (rad) from each orientation to its k nearest others.

    Uses a KD-tree over one quaternion per orientation (see :func:`_knn_chords`;
    with ``sign_invariant``, modulo the axis sign flips): the chord distance between unit quaternions is
    monotone in the rotation angle, so Euclidean neighbours are geodesic ones.
    O(n log n); queried in blocks of ``block`` rows, so the memory beyond the
    tree is O(block), and the result does not depend on ``block``.
    """
    n = len(quaternions)
    if n <= k:
        raise ValueError(f"need more than k={k} orientations, got {n}")
    points = orientation_points(quaternions, sign_invariant)
    out = np.empty((n, k))
    for rows, dist in _knn_chords(points, k, sign_invariant, block):
        out[rows] = chord_to_angle(dist)
    return out


def kth_neighbour_angles(
    quaternions: np.ndarray, k: int = 5, sign_invariant: bool = False, overwrite: bool = False,
    block: int = QUERY_BLOCK,
) -> np.ndarray:  # fmt: skip
    """(n,) geodesic angle (rad) to the k-th nearest other orientation: the k-NN KL's only input.

    Memory: the (n, 4) float64 points (shared with the tree; with ``overwrite``
    and no flips the caller's array itself, turned to w ≥ 0), the tree's index
    and nodes (≈ 16 B per point) and the (n,) result: ≈ 56 B per molecule,
    ≈ 0.56 GB at 10M, plus O(block) per query. The same with the flips.
    """
    n = len(quaternions)
    if n <= k:
        raise ValueError(f"need more than k={k} orientations, got {n}")
    points = orientation_points(quaternions, sign_invariant, overwrite)
    out = np.empty(n)
    for rows, dist in _knn_chords(points, k, sign_invariant, block):
        out[rows] = chord_to_angle(dist[:, k - 1])
    return out


def knn_entropy_terms(kth_angle: np.ndarray) -> np.ndarray:
    """Per-sample log ball volume at the k-th neighbour (Kozachenko–Leonenko)."""
    theta = np.maximum(np.asarray(kth_angle, dtype=np.float64), MIN_RADIUS_RAD)
    return np.log(ball_volume(theta))


@dataclass(frozen=True)
class KLEstimate:
    value: float
    ci95: tuple[float, float]
    k: int
    n: int
    sign_invariant: bool
    n_bootstrap: int
    seed: int

    def to_dict(self) -> dict:
        return {
            "value": self.value,
            "ci95": list(self.ci95),
            "k": self.k,
            "n": self.n,
            "sign_invariant": self.sign_invariant,
            "n_bootstrap": self.n_bootstrap,
            "seed": self.seed,
        }


def _bootstrap_means(values: np.ndarray, n_bootstrap: int, seed: int, batch: int = 25) -> np.ndarray:
    """Means of ``n_bootstrap`` seeded resamples (with replacement) of ``values``."""
    rng = np.random.default_rng(seed)
    n = len(values)
    vals = values.astype(np.float32)
    means = np.empty(n_bootstrap)
    for start in range(0, n_bootstrap, batch):
        b = min(batch, n_bootstrap - start)
        idx = rng.integers(0, n, size=(b, n), dtype=np.int32)
        means[start : start + b] = vals[idx].mean(axis=1, dtype=np.float64)
    return means


def kl_to_uniform(
    quaternions: np.ndarray,
    k: int = 5,
    sign_invariant: bool = False,
    n_bootstrap: int = 1000,
    seed: int = 0,
) -> KLEstimate:
    """KL divergence from Haar-uniform: log(volume) - entropy, with a bootstrap CI.

    The CI resamples molecules' k-NN terms (neighbour radii held fixed), which
    captures the sampling spread of the mean without creating duplicate points.
    """
    q = np.asarray(quaternions, dtype=np.float64)
    terms = knn_entropy_terms(knn_angles(q, k, sign_invariant)[:, k - 1])
    n = len(terms)
    log_vol = np.log(SO3_MOD_SIGNS_VOLUME if sign_invariant else SO3_VOLUME)
    const = log_vol - digamma(n) + digamma(k)
    value = float(const - terms.mean())
    means = _bootstrap_means(terms, n_bootstrap, seed)
    lo, hi = np.percentile(const - means, [2.5, 97.5]) if n_bootstrap else (value, value)
    return KLEstimate(value, (float(lo), float(hi)), k, n, sign_invariant, n_bootstrap, seed)


def kl_to_uniform_pairwise(rotations: np.ndarray, k: int = 5, block: int = 2000) -> float:
    """Baseline: the same estimator from the full O(n²) pairwise angle matrix (blocked)."""
    R = np.asarray(rotations, dtype=np.float64)
    n = len(R)
    flat = R.reshape(n, 9)
    kth = np.empty(n)
    for start in range(0, n, block):
        tr = flat[start : start + block] @ flat.T  # tr(Ri Rjᵀ)
        ang = np.arccos(np.clip((tr - 1.0) / 2.0, -1.0, 1.0))
        ang[np.arange(len(ang)), np.arange(start, start + len(ang))] = np.inf
        kth[start : start + block] = np.partition(ang, k - 1, axis=1)[:, k - 1]
    terms = knn_entropy_terms(kth)
    return float(np.log(SO3_VOLUME) - digamma(n) + digamma(k) - terms.mean())


def kernel_sums(candidates: np.ndarray, quaternions: np.ndarray, bandwidth_rad: float = 0.5, chunk: int = 128):
    """(n_candidates,) Σ_j exp(-θ_ij² / 2h²) over the rows of ``quaternions`` (n, 4).

    cos(θ/2) = |q_i · q_j| comes from one float32 matrix product per block of
    candidates; sums over a set's parts add up to the sum over the set.
    """
    q = np.asarray(candidates, dtype=np.float64).astype(np.float32)
    qt = np.ascontiguousarray(np.asarray(quaternions, dtype=np.float64).T.astype(np.float32))
    inv = np.float32(-0.5 / bandwidth_rad**2)
    scores = np.zeros(len(q))
    if qt.shape[1] == 0:
        return scores
    for s in range(0, len(q), chunk):
        half = np.abs(q[s : s + chunk] @ qt)
        np.clip(half, 0.0, 1.0, out=half)
        theta = np.arccos(half, out=half)
        theta *= 2.0
        np.square(theta, out=theta)
        theta *= inv
        scores[s : s + chunk] = np.exp(theta, out=theta).sum(axis=1, dtype=np.float64)
    return scores


def reference_orientation(
    quaternions: np.ndarray,
    bandwidth_rad: float = 0.5,
    n_candidates: int = 2000,
    seed: int = 0,
    chunk: int = 128,
) -> int:
    """Index of the densest orientation by a Gaussian kernel on geodesic angle.

    Candidates are a seeded sample of ``n_candidates`` rows; each is scored by
    :func:`kernel_sums` over all rows (O(n_candidates · n)).
    """
    q = np.asarray(quaternions, dtype=np.float64)
    rng = np.random.default_rng(seed)
    cand = np.sort(rng.choice(len(q), size=min(n_candidates, len(q)), replace=False))
    scores = kernel_sums(q[cand], q, bandwidth_rad, chunk)
    return int(cand[int(np.argmax(scores))])


def angle_histogram(angles: np.ndarray, bins: int = 60) -> dict:
    """Density histogram of angles on [0, π] next to the Haar density at bin centres."""
    counts, edges = np.histogram(angles, bins=bins, range=(0.0, np.pi), density=True)
    centres = 0.5 * (edges[:-1] + edges[1:])
    return {
        "bin_edges_rad": edges.tolist(),
        "density": counts.tolist(),
        "haar_density": haar_angle_density(centres).tolist(),
    }


MIN_RATIO_BINS = 12  # 15° bins: the coarsest equal width the ratio histogram merges to
MIN_EXPECTED_PER_BIN = 5.0  # uniform poses expect at least this many angles in every bin drawn (Cochran's rule)
RATIO_BAND_LEVEL = 0.95  # the share of uniform sets whose every bin lies inside the band


def merged_ratio_edges(bin_edges_rad, n: int, min_expected: float = MIN_EXPECTED_PER_BIN) -> np.ndarray:
    """Indices into the stored edges of the ratio histogram's bins, each expecting ``min_expected`` angles.

    The stored equal bins are first merged into the largest number of equal bins that divides their count
    and is at most max(:data:`MIN_RATIO_BINS`, 2√n): 15° bins for 50 angles, the stored 3° from about 900.
    Then, from 0°, neighbours are merged until uniform poses expect at least ``min_expected`` angles in
    each (a short last bin joins the one before). The Haar density (2/π)·sin²(θ/2) vanishes like θ² at 0,
    so a narrow bin there expects a few hundredths of an angle, and one angle in it drew as a 40× bar; here
    the first bin widens instead (0–9° for QM9's 65,000 angles, 0–90° for 35).

    Returns
    -------
    (bins + 1,) int indices into ``bin_edges_rad``, from 0 to its last
    """
    edges = np.asarray(bin_edges_rad, dtype=np.float64)
    stored = len(edges) - 1
    target = max(MIN_RATIO_BINS, 2.0 * np.sqrt(n))
    step = stored // max(b for b in range(1, stored + 1) if stored % b == 0 and (b <= target or b == 1))
    equal = np.arange(0, stored + 1, step)
    cdf = n * haar_angle_cdf(edges[equal])
    keep = [0]
    for i in range(1, len(equal)):
        if cdf[i] - cdf[keep[-1]] >= min_expected:
            keep.append(i)
    if len(keep) > 1:
        keep[-1] = len(equal) - 1  # the last bin short of min_expected joins the one before
    else:  # fewer angles than one bin expects: one bin, 0-180° (keep[-1] = … had dropped the 0 and left no bin)
        keep.append(len(equal) - 1)
    return equal[np.unique(keep)]


def uniform_count_band(n: int, probability: np.ndarray, level: float = RATIO_BAND_LEVEL) -> np.ndarray:
    """Counts per bin that uniform poses stay within, in every bin at once with probability ≥ ``level``.

    Each bin's count is Binomial(n, p); its two-sided band holds it with probability 1 − (1 − level)/bins
    (Bonferroni), so a uniform set puts any bin outside its band in at most 1 − ``level`` of sets.

    Returns
    -------
    (bins, 2) the lowest and highest count inside the band
    """
    p = np.clip(np.asarray(probability, dtype=np.float64), 0.0, 1.0)
    tail = (1.0 - level) / (2.0 * len(p))
    return np.column_stack([stats.binom.ppf(tail, n, p), stats.binom.isf(tail, n, p)])


def haar_ratio_histogram(
    bin_edges_rad, density, n: int, min_expected: float = MIN_EXPECTED_PER_BIN, level: float = RATIO_BAND_LEVEL
) -> dict:
    """Observed over Haar-expected counts per bin, with the band uniform poses stay within.

    The bins are :func:`merged_ratio_edges`'s: every one expects at least ``min_expected`` angles, so
    one angle never makes a tall bar. ``band`` is :func:`uniform_count_band` as a ratio: a uniform set
    has every bar inside it in at least ``level`` of sets, so a bar above it is an excess that chance
    explains in under 1 − ``level`` of uniform sets (an aligned set's first bins: 10 to 60 times the
    uniform count on QM9 subsets). A bin with no angle has ratio None (nothing to draw on a log scale).

    Parameters
    ----------
    bin_edges_rad : (bins + 1,) equal bins on [0, π]
    density : (bins,) the histogram's density (per radian), as :func:`angle_histogram` writes it
    n : angles behind the histogram
    """
    edges = np.asarray(bin_edges_rad, dtype=np.float64)
    counts = np.asarray(density, dtype=np.float64) * n * np.diff(edges)
    index = merged_ratio_edges(edges, n, min_expected)
    observed = np.add.reduceat(counts, index[:-1])
    merged = edges[index]
    probability = np.diff(haar_angle_cdf(merged))
    expected = n * probability
    band = uniform_count_band(n, probability, level)
    return {
        "bin_edges_rad": merged.tolist(),
        "observed": np.round(observed, 6).tolist(),
        "expected": expected.tolist(),
        "ratio": [float(o / x) if o > 0.5 and x > 0 else None for o, x in zip(observed, expected, strict=True)],
        "band_count": band.tolist(),
        "band": (band / expected[:, None]).tolist(),
        "band_level": float(level),
        "min_expected": float(min_expected),
        "n": int(n),
    }


def ks_against_haar(angles: np.ndarray) -> dict:
    """One-sample KS test of rotation angles against the Haar angle CDF."""
    res = stats.kstest(np.asarray(angles), haar_angle_cdf)
    return {"statistic": float(res.statistic), "pvalue": float(res.pvalue), "n": int(len(angles))}


def split_halves(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded random split of range(n) into two halves (A, B)."""
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[: n // 2]), np.sort(perm[n // 2 :])


def reference_and_ks(rotations: np.ndarray, seed: int = 0, bins: int = 60) -> dict:
    """Reference orientation (kernel density on half A) and the KS test and histogram of half B's angles to it.

    Using half B only keeps the test unbiased by the choice of reference.
    """
    R = np.asarray(rotations, dtype=np.float64)
    q = matrix_to_quaternion(R)
    half_a, half_b = split_halves(len(R), seed)
    ref = half_a[reference_orientation(q[half_a], seed=seed)]
    angles_b = geodesic_angle(R[ref][None], R[half_b])
    return {
        REFERENCE_INDEX_KEY: int(ref),
        REFERENCE_KEY: R[ref].tolist(),
        KS_KEY: ks_against_haar(angles_b),
        ANGLE_HISTOGRAM_KEY: angle_histogram(angles_b, bins),
    }


# ----------------------------------------------------------------- the statistics this module declares
# Their report keys; every other module reads them from here (or from science/statistics_registry.py).
KL_KEY = "kl"
KL_SIGN_INVARIANT_KEY = "kl_sign_invariant"
KL_AT_N_KEY = "kl_at_n"
KS_KEY = "ks"
ANGLE_HISTOGRAM_KEY = "angle_histogram"
REFERENCE_KEY = "reference_orientation"
REFERENCE_MOLECULE_KEY = "reference_molecule"
REFERENCE_INDEX_KEY = "reference_index"
SO3_MOLECULES_KEY = "so3_molecules"

_KL_FIELDS = "value, ci95 [low, high], k, n, n_used, sign_invariant, method"
_STAGE = "pipeline.shard_stages"  # the statistics stage's own tasks, relative to orientscope


def format_kl(section: dict | None, missing: str = "–") -> str:
    """A KL section (``value``, ``ci95``) as ``value [low, high]`` with 3 decimals; ``missing`` for absent numbers."""
    if not section:
        return missing
    ci = section.get("ci95") or [None, None]

    def num(x) -> str:
        return missing if x is None or not math.isfinite(x) else format_number(x)

    return f"{num(section.get('value'))} [{num(ci[0])}, {num(ci[1])}]"


def _kl_rows(key: str, label: str):
    def rows(report: dict) -> list[tuple[str, str, str]]:
        if key not in report:
            return []
        return [(label, format_kl(report.get(key)), format_kl((report.get("control") or {}).get(key)))]

    return rows


def _kl_at_n_rows(report: dict) -> list[tuple[str, str, str]]:
    at = report.get(KL_AT_N_KEY) or {}
    if at.get("value") is None:
        return []
    label = f"KL at n = {format_count(at['subsample_size'])} (comparable across sizes)"
    return [(label, format_kl(at), format_kl((report.get("control") or {}).get(KL_AT_N_KEY)))]


def _ks_rows(report: dict) -> list[tuple[str, str, str]]:
    if KS_KEY not in report:
        return []
    ks, cks = report[KS_KEY] or {}, (report.get("control") or {}).get(KS_KEY) or {}
    return [
        (
            "KS vs Haar angle law: D",
            format_number(ks.get("statistic"), ".4f"),
            format_number(cks.get("statistic"), ".4f"),
        ),
        ("KS p-value", format_p(ks.get("pvalue")), format_p(cks.get("pvalue"))),
    ]


def _kl_statistic(key: str, title: str, description: str, rows, **kw) -> Statistic:
    """One of the three k-NN KL estimates: the statistics stage's KL tasks fit all three (``merge_kl``)."""
    return Statistic(
        key=key,
        title=title,
        stage="statistics",
        inputs=("the full frames' quaternions of every shard, the rows of one fit",),
        per_shard=f"{_STAGE}:kl_part_task",
        merge=f"{_STAGE}:merge_kl",
        fields=(ReportField(key, dict[str, Any], description),),
        table="statistics",
        rows=rows,
        **kw,
    )


KL_STATISTIC = _kl_statistic(
    KL_KEY,
    "k-NN KL divergence of the frames from the uniform law on SO(3)",
    f"k-NN KL to uniform SO(3) over the full frames: {_KL_FIELDS}.",
    _kl_rows(KL_KEY, "KL to uniform SO(3), 95% CI"),
    in_verdict=True,
    tooltip="Kullback–Leibler divergence of the orientations from a uniform distribution over rotations (SO(3)), "
    "k-nearest-neighbour estimate. 0 = uniform. The estimate grows with N (QM9 subsets: 0.31 at 100 molecules, "
    "0.54 at 1,000, 0.91 for all 130,831), so its 95% interval is for the expected estimate at this N, and "
    "sets of different sizes compare through 'KL at n' (shown for sets of 100,000 molecules or more), else only "
    "at an equal N.",
)
KL_SIGN_INVARIANT_STATISTIC = _kl_statistic(
    KL_SIGN_INVARIANT_KEY,
    "the same KL with each axis' sign ignored",
    f"KL with the axis signs modded out: {_KL_FIELDS}.",
    _kl_rows(KL_SIGN_INVARIANT_KEY, "KL, axis signs ignored"),
    tooltip="The same divergence with the sign of each axis ignored: what is left when a frame's axis "
    "directions are only defined up to sign.",
)
KL_AT_N_STATISTIC = _kl_statistic(
    KL_AT_N_KEY,
    "KL at a fixed subsample size n, comparable across set sizes",
    "KL over seeded subsamples of n molecules (value null and skipped when the set is smaller): "
    "value, ci95, n, subsample_size.",
    _kl_at_n_rows,
    in_verdict=True,
)
REFERENCE_STATISTIC = Statistic(
    key=REFERENCE_KEY,
    title="the reference orientation: the densest candidate pose of half A",
    stage="statistics",
    inputs=("the full frames of half A: seeded candidates, scored by kernel sums",),
    per_shard=f"{_STAGE}:kernel_partial",
    merge=f"{_STAGE}:merge_candidates",
    fields=(
        ReportField(REFERENCE_KEY, list[list[float]], "The reference orientation (3×3, rows = axes)."),
        ReportField(REFERENCE_MOLECULE_KEY, str, "Id of the molecule whose frame is the reference."),
        ReportField(REFERENCE_INDEX_KEY, int, "Global index of that molecule (kept in the stored section).", False),
    ),
)
KS_STATISTIC = Statistic(
    key=KS_KEY,
    title="KS test of half B's angles to the reference against the Haar angle law",
    stage="statistics",
    inputs=("the full frames of half B, their angle to the reference",),
    per_shard=f"{_STAGE}:angle_partial",
    merge="science.so3_partial:ks_from_counts",
    fields=(ReportField(KS_KEY, dict[str, Any], "Kolmogorov–Smirnov test: statistic (D), pvalue, n."),),
    table="statistics",
    rows=_ks_rows,
    in_verdict=True,
    tooltip="Kolmogorov–Smirnov test of the angles to the reference orientation against the law of uniform rotations "
    "(Haar). A small p says the angles are not those of random poses.",
)
ANGLE_HISTOGRAM_STATISTIC = Statistic(
    key=ANGLE_HISTOGRAM_KEY,
    title="histogram of half B's angles to the reference",
    stage="statistics",
    inputs=KS_STATISTIC.inputs,
    per_shard=f"{_STAGE}:angle_partial",
    merge="science.so3_partial:histogram_from_counts",
    fields=(
        ReportField(
            ANGLE_HISTOGRAM_KEY,
            dict[str, Any],
            "Angles to the reference: bin_edges_rad, density, the Haar density and haar_ratio (observed/Haar "
            "in bins that each expect at least min_expected angles, with the band where band_level of uniform "
            "sets keep every bin).",
        ),
    ),
)
SO3_MOLECULES_STATISTIC = Statistic(
    key=SO3_MOLECULES_KEY,
    title="the molecules the SO(3) statistics read: those with a full frame",
    stage="statistics",
    inputs=("each shard's orientation classes",),
    per_shard=f"{_STAGE}:orientation_partial",
    merge=f"{_STAGE}:merge_orientation",
    fields=(
        ReportField(
            SO3_MOLECULES_KEY,
            int,
            "Molecules with a full frame: the only ones KL, KS, the reference and the classifiers read.",
        ),
    ),
)
STATISTICS = (
    SO3_MOLECULES_STATISTIC,
    KL_STATISTIC,
    KL_SIGN_INVARIANT_STATISTIC,
    KL_AT_N_STATISTIC,
    REFERENCE_STATISTIC,
    KS_STATISTIC,
    ANGLE_HISTOGRAM_STATISTIC,
)
