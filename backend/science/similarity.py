"""Similarity–pose coupling: do chemical nearest neighbours share canonical frames?

For a seeded sample of molecules (counter-based draws by global index,
:func:`pair_queries`), each one's chemical nearest neighbour
(highest Tanimoto, itself excluded, searched over the whole candidate pool) is
found and the geodesic angle between the two canonical frames measured. The
fraction of neighbour pairs closer than ``threshold_deg`` is compared with the
same fraction for random pairs (enrichment). Significance comes from shuffling
the pairing (query i with the neighbour of query π(i)):

* ``pvalue_permutation`` = (1 + #shuffles with at least as many close pairs) / (1 + n_permutations);
* ``pvalue``: the one-sided binomial tail of the observed count at the
  shuffles' mean close-pair rate. A shuffled count is a sum of independent-ish
  Bernoullis with unequal rates, whose tail is lighter than the binomial one,
  so this is conservative and resolves p-values far below 1/n_permutations.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from orientscope.core.numbers import format_number, format_p
from orientscope.core.resources import scipy_stats as stats
from orientscope.science.clustering import TanimotoIndex
from orientscope.science.counter_rng import subsample
from orientscope.science.rotations import geodesic_angle
from orientscope.science.statistic import ReportField, Statistic

DEFAULT_THRESHOLD_DEG = 30.0


def neighbour_pairs(
    words: np.ndarray, n_sample: int = 2000, seed: int = 0, pool: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(queries, neighbours, tanimoto) for a seeded sample of the pool (all if fewer).

    Parameters
    ----------
    words : (n, n_words) uint64 packed fingerprints
    pool : (n,) bool, molecules that may be queries or neighbours (default: non-empty fingerprints)
    """
    words = np.asarray(words, dtype=np.uint64)
    allowed = np.bitwise_count(words).sum(axis=1) > 0
    if pool is not None:
        allowed &= np.asarray(pool, bool)
    members = np.flatnonzero(allowed)
    if len(members) < 2:
        raise ValueError(f"need at least 2 molecules with fingerprints for neighbour pairs, got {len(members)}")
    queries = pair_queries(seed, members, n_sample)
    nn, sim = TanimotoIndex(words, candidates=allowed).nearest(queries)
    return queries, nn, sim


def pair_queries(seed: int, pool_index: np.ndarray, n_sample: int) -> np.ndarray:
    """Sorted global indices of the query sample: the ``n_sample`` smallest counter-based draws of the pool."""
    return subsample(seed, "pairs", pool_index, n_sample)


def partner_pool(seed: int, pool_index: np.ndarray, n_partners: int) -> np.ndarray:
    """Sorted global indices random partners are drawn from: a seeded subsample of the pool.

    A sharded run gathers only these frames; the draws are by molecule index,
    so any cut of the set into shards gives the same random pairs.
    """
    return subsample(seed, "partners", pool_index, n_partners)


def _close_fraction(angles_deg: np.ndarray, threshold_deg: float) -> float:
    return float(np.mean(angles_deg < threshold_deg)) if angles_deg.size else float("nan")


def pair_angles_deg(rotations: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Geodesic angle (degrees) between the frames of rows ``a`` and ``b``."""
    return np.degrees(geodesic_angle(rotations[a], rotations[b]))


def coupling(
    rotations: np.ndarray,
    queries: np.ndarray,
    neighbours: np.ndarray,
    pool: np.ndarray | None = None,
    seed: int = 0,
    threshold_deg: float = DEFAULT_THRESHOLD_DEG,
    n_random: int = 10,
    n_permutations: int = 2000,
    bins: int = 36,
) -> dict:
    """Close-pair fractions of neighbour pairs vs random pairs, with p-values and histograms.

    Parameters
    ----------
    rotations : (n, 3, 3) canonical frames
    queries, neighbours : (m,) row indices of the pairs
    pool : (n,) bool, molecules random partners are drawn from (default all)
    n_random : random partners per query
    """
    rotations = np.asarray(rotations, dtype=np.float64)
    rng = np.random.default_rng(seed)
    members = np.flatnonzero(np.ones(len(rotations), bool) if pool is None else np.asarray(pool, bool))
    m = len(queries)
    nn_angle = pair_angles_deg(rotations, queries, neighbours)
    rand_q = np.repeat(queries, n_random)
    rand_partner = members[rng.integers(0, len(members), len(rand_q))]
    distinct = rand_partner != rand_q
    rand_angle = pair_angles_deg(rotations, rand_q[distinct], rand_partner[distinct])
    nn_frac = _close_fraction(nn_angle, threshold_deg)
    rand_frac = _close_fraction(rand_angle, threshold_deg)
    observed = int((nn_angle < threshold_deg).sum())
    shuffled = np.empty(n_permutations, np.int64)
    for k in range(n_permutations):
        shuffled[k] = int((pair_angles_deg(rotations, queries, neighbours[rng.permutation(m)]) < threshold_deg).sum())
    null_rate = float(shuffled.mean() / m) if n_permutations else rand_frac
    edges = np.linspace(0.0, 180.0, bins + 1)
    return {
        "n_pairs": int(m),
        "threshold_deg": float(threshold_deg),
        "nn_within_30deg": nn_frac,
        "random_within_30deg": rand_frac,
        "enrichment": nn_frac / rand_frac if rand_frac > 0 else float("nan"),
        "pvalue": float(stats.binom.sf(observed - 1, m, null_rate)) if m else float("nan"),
        "pvalue_permutation": float((1 + (shuffled >= observed).sum()) / (1 + n_permutations)),
        "n_permutations": int(n_permutations),
        "permutation_within_30deg": null_rate,
        "n_random_pairs": int(len(rand_angle)),
        "median_angle_nn_deg": float(np.median(nn_angle)) if m else float("nan"),
        "median_angle_random_deg": float(np.median(rand_angle)) if rand_angle.size else float("nan"),
        "histograms": {
            "bin_edges_deg": edges.tolist(),
            "nn": (np.histogram(nn_angle, edges)[0] / max(m, 1)).tolist(),
            "random": (np.histogram(rand_angle, edges)[0] / max(len(rand_angle), 1)).tolist(),
        },
        "seed": int(seed),
    }


# ----------------------------------------------------------------- the statistic this module declares
SIMILARITY_KEY = "similarity"


def similarity_rows(report: dict) -> list[tuple[str, str, str]]:
    """Neighbour pairs vs random pairs within 30°, and the enrichment with its p, dataset vs control."""
    s = report.get(SIMILARITY_KEY) or {}
    c = (report.get("control") or {}).get(SIMILARITY_KEY) or {}
    if not s:
        return []

    def both(label: str, key: str) -> tuple[str, str, str]:
        return label, format_number(s.get(key), ".3f"), format_number(c.get(key), ".3f")

    return [
        ("pairs sampled", str(s.get("n_pairs", "–")), str(c.get("n_pairs", "–"))),
        both("chemical neighbours within 30°", "nn_within_30deg"),
        both("random pairs within 30°", "random_within_30deg"),
        (
            "enrichment (neighbours / random)",
            f"{format_number(s.get('enrichment'), '.2f')}, p {format_p(s.get('pvalue'))}",
            f"{format_number(c.get('enrichment'), '.2f')}, p {format_p(c.get('pvalue'))}" if c else "–",
        ),
    ]


STATISTIC = Statistic(
    key=SIMILARITY_KEY,
    title="similarity–pose coupling: do chemical neighbours share a pose?",
    stage="chemistry",
    inputs=("fingerprints and full frames of a seeded sample of molecules and their nearest chemical neighbours",),
    per_shard="pipeline.shard_chemistry:angles_shard",
    merge="pipeline.chemistry_report:coupling_sections",
    fields=(
        ReportField(
            SIMILARITY_KEY,
            dict[str, Any],
            "Similarity–pose coupling: n_pairs, nn_within_30deg, random_within_30deg, enrichment, pvalue, "
            "pvalue_permutation.",
        ),
    ),
    table="similarity",
    rows=similarity_rows,
    tooltip="Whether chemically similar molecules (nearest Tanimoto neighbours) share a pose more often "
    "than random pairs.",
)
