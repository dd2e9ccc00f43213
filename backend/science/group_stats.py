"""Orientation statistics of groups of molecules (scaffold, formula, cluster).

Quaternions are scalar-last and q ≡ -q. The group mean is the principal
eigenvector of Σ q qᵀ (the chordal L2 mean, sign-free); spread is the median
geodesic angle to it; concentration is the mean over the three principal axes
of the mean resultant length of that axis' direction (1: all members share the
frame, ~1/sqrt(size) for uniformly random frames).

Only members with a whole SO(3) frame (``posed``; see ``science/frames.py``: not a single atom, spherical
top, linear molecule or symmetric top) enter a group's pose: the others' frames are arbitrary where their
symmetry leaves them undefined, and identical copies of one symmetric molecule would read as one shared
pose (two sulfates: spread 0.005°, concentration 1.0). They still count in ``size``; a group without a
posed member has no mean, spread, concentration or typical member (NaN, and -1 for the typical index).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from orientscope.science.rotations import quaternion_angle

GROUP_COLUMNS = ["group", "size", "n_posed", "qx", "qy", "qz", "qw", "spread_deg", "concentration", "typical_index"]


def _segment_reduce(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    return np.add.reduceat(values, starts, axis=0)


# Sums are kept in fixed point (units of 2^-36, int64): integer addition is exact, so the sums,
# and the means and concentrations from them, are the same bit for bit however the molecules are cut
# into shards. Each term is rounded by at most 2^-37 (~7e-12); 2^27 members fit without overflow.
FIXED_POINT = 2.0**36


def _fixed(values: np.ndarray) -> np.ndarray:
    return np.rint(values * FIXED_POINT).astype(np.int64)


def group_sums(
    groups: np.ndarray, quaternions: np.ndarray, rotations: np.ndarray, posed: np.ndarray | None = None
) -> dict:
    """Per-group sums that add up exactly over any cut of the molecules (negative ids ignored).

    ``posed`` (n,) bool marks the molecules with a whole frame (default: all); only they enter the pose sums.
    Returns ``{"group": (k,) ids ascending, "size": (k,) members, "n_posed": (k,) posed members,
    "scatter": (k, 4, 4) Σ q qᵀ, "axes": (k, 3, 3) Σ R}`` over the posed members, the sums in fixed point
    (int64 units of 1 / :data:`FIXED_POINT`); the sums of two cuts' entries for one group are exactly the
    sums of the whole group.
    """
    groups = np.asarray(groups, dtype=np.int64)
    posed = np.ones(len(groups), bool) if posed is None else np.asarray(posed, dtype=bool)
    rows = np.flatnonzero(groups >= 0)
    rows = rows[np.argsort(groups[rows], kind="stable")]
    ids, starts, sizes = np.unique(groups[rows], return_index=True, return_counts=True)
    if rows.size == 0:
        empty = np.zeros(0, np.int64)
        return {"group": ids, "size": sizes, "n_posed": sizes.copy(), "scatter": empty.reshape(0, 4, 4),
                "axes": empty.reshape(0, 3, 3)}  # fmt: skip
    weight = posed[rows].astype(np.float64)  # a molecule without a whole frame adds zeros to the pose sums
    q = np.asarray(quaternions, dtype=np.float64)[rows] * weight[:, None]
    R = np.asarray(rotations, dtype=np.float64)[rows] * weight[:, None, None]
    return {
        "group": ids,
        "size": sizes,
        "n_posed": np.add.reduceat(posed[rows].astype(np.int64), starts),
        "scatter": _segment_reduce(_fixed(np.einsum("ni,nj->nij", q, q)), starts),
        "axes": _segment_reduce(_fixed(R), starts),
    }


def merge_group_sums(parts: list[dict]) -> dict:
    """The :func:`group_sums` of the union of the molecules behind ``parts``."""
    ids = np.concatenate([p["group"] for p in parts])
    uniq, inverse = np.unique(ids, return_inverse=True)
    out = {"group": uniq}
    for key, shape in (("size", ()), ("n_posed", ()), ("scatter", (4, 4)), ("axes", (3, 3))):
        total = np.zeros((len(uniq), *shape), dtype=np.int64)
        np.add.at(total, inverse, np.concatenate([p[key] for p in parts]))
        out[key] = total
    return out


def means_from_scatter(scatter: np.ndarray) -> np.ndarray:
    """(k, 4) sign-invariant means (w >= 0) from (k, 4, 4) Σ q qᵀ (fixed point): each principal eigenvector;
    NaN for a group without a posed member (its scatter, whose trace counts them, is zero)."""
    if len(scatter) == 0:
        return np.zeros((0, 4))
    scatter = np.asarray(scatter, dtype=np.float64) / FIXED_POINT
    _, vecs = np.linalg.eigh(scatter)
    mean = vecs[:, :, -1]
    mean = mean * np.where(mean[:, 3:4] < 0, -1.0, 1.0)
    mean[np.trace(scatter, axis1=1, axis2=2) < 0.5] = np.nan
    return mean


def concentration_from_axes(axes: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """(k,) mean resultant length of the three principal axes from (k, 3, 3) Σ R (fixed point) and (k,) posed
    member counts; NaN where a group has none."""
    axes = np.asarray(axes, dtype=np.float64) / FIXED_POINT
    sizes = np.asarray(sizes, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (np.linalg.norm(axes, axis=2) / sizes[:, None]).mean(axis=1)
    return np.where(sizes > 0, out, np.nan)


def group_orientation_stats(
    groups: np.ndarray, quaternions: np.ndarray, rotations: np.ndarray, posed: np.ndarray | None = None
) -> pd.DataFrame:
    """Per-group orientation statistics, vectorised over all groups.

    Parameters
    ----------
    groups : (n,) int group id per molecule; negative ids are ignored
    quaternions : (n, 4) scalar-last unit quaternions of the frames
    rotations : (n, 3, 3) frames, rows = principal axes
    posed : (n,) bool, the molecules with a whole frame (default: all); only they enter the pose statistics

    Returns
    -------
    DataFrame sorted by size (descending, then group id) with :data:`GROUP_COLUMNS`:
    ``typical_index`` is the row of the posed member closest to the group mean (-1 if none),
    ``spread_deg`` the median angle of the posed members to the mean (degrees).
    """
    groups = np.asarray(groups, dtype=np.int64)
    if not (groups >= 0).any():
        return pd.DataFrame({c: [] for c in GROUP_COLUMNS})
    sums = group_sums(groups, quaternions, rotations, posed)
    ids, sizes, n_posed = sums["group"], sums["size"], sums["n_posed"]
    mean = means_from_scatter(sums["scatter"])
    spread = np.full(len(ids), np.nan)
    typical = np.full(len(ids), -1, np.int64)
    posed = np.ones(len(groups), bool) if posed is None else np.asarray(posed, dtype=bool)
    rows = np.flatnonzero((groups >= 0) & posed)
    if rows.size:
        rows = rows[np.argsort(groups[rows], kind="stable")]
        at = np.searchsorted(ids, groups[rows])
        angle = quaternion_angle(np.asarray(quaternions, dtype=np.float64)[rows], mean[at])
        # Sort members by (group, angle): the first is the typical member, the middle the median.
        by_angle = np.lexsort((angle, at))
        sorted_angle = angle[by_angle]
        has = n_posed > 0
        starts = np.concatenate([[0], np.cumsum(n_posed[has])[:-1]])
        lo = starts + (n_posed[has] - 1) // 2
        hi = starts + n_posed[has] // 2
        spread[has] = 0.5 * (sorted_angle[lo] + sorted_angle[hi])
        typical[has] = rows[by_angle[starts]]
    return group_frame(ids, sizes, mean, np.degrees(spread), concentration_from_axes(sums["axes"], n_posed), typical,
                       n_posed)  # fmt: skip


def group_frame(ids, sizes, mean, spread_deg, concentration, typical_index, n_posed) -> pd.DataFrame:
    """The :data:`GROUP_COLUMNS` table, sorted by size (descending, then group id)."""
    out = pd.DataFrame(
        {
            "group": ids,
            "size": sizes,
            "n_posed": n_posed,
            "qx": mean[:, 0],
            "qy": mean[:, 1],
            "qz": mean[:, 2],
            "qw": mean[:, 3],
            "spread_deg": spread_deg,
            "concentration": concentration,
            "typical_index": typical_index,
        }
    )
    return out.sort_values(["size", "group"], ascending=[False, True], kind="stable").reset_index(drop=True)


# ------------------------------------------------- the median spread and typical member over cuts
# The median angle of a group split over many cuts comes from merged counts in
# fine bins: the spread is a bin's midpoint, within SPREAD_BIN_DEG / 2 of the exact median.
SPREAD_BIN_DEG = 0.01
N_SPREAD_BINS = int(round(180.0 / SPREAD_BIN_DEG))


def member_angles_deg(groups: np.ndarray, quaternions: np.ndarray, group_ids: np.ndarray, means: np.ndarray):
    """(rows with a group, their angle to their group's mean in degrees); ``means`` (k, 4) align with ``group_ids``."""
    groups = np.asarray(groups, dtype=np.int64)
    rows = np.flatnonzero(groups >= 0)
    pos = np.searchsorted(group_ids, groups[rows])
    angle = quaternion_angle(np.asarray(quaternions, dtype=np.float64)[rows], means[pos])
    return rows, np.degrees(angle)


def angle_partials(groups: np.ndarray, angles_deg: np.ndarray, index: np.ndarray) -> dict:
    """Per cut: sparse (group, angle bin) counts and each group's closest member.

    Parameters
    ----------
    groups, angles_deg, index : (m,) group id, angle to the group mean (degrees)
        and global molecule index of the cut's grouped molecules
    """
    groups = np.asarray(groups, dtype=np.int64)
    bins = np.minimum((np.asarray(angles_deg) / SPREAD_BIN_DEG).astype(np.int64), N_SPREAD_BINS - 1)
    keys, counts = np.unique(groups * N_SPREAD_BINS + bins, return_counts=True)
    order = np.lexsort((index, angles_deg, groups))
    first = order[np.r_[True, groups[order][1:] != groups[order][:-1]]] if len(order) else order
    return {
        "keys": keys,
        "counts": counts,
        "typical": {"group": groups[first], "angle": np.asarray(angles_deg)[first], "index": np.asarray(index)[first]},
    }


def merge_angle_partials(parts: list[dict], group_ids: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """((k,) median spread in degrees, within SPREAD_BIN_DEG / 2; (k,) global index of the typical member).

    The typical member is the one closest to the mean, ties to the lower index,
    as in :func:`group_orientation_stats`. ``group_ids`` ascending, ``sizes`` their posed member counts (the
    members the partials hold); a group without one has NaN and -1.
    """
    keys, inverse = np.unique(np.concatenate([p["keys"] for p in parts]), return_inverse=True)
    counts = np.bincount(inverse, weights=np.concatenate([p["counts"] for p in parts])).astype(np.int64)
    cum = np.cumsum(counts)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])

    def midpoint(rank: np.ndarray) -> np.ndarray:
        """Midpoint (degrees) of the bin holding each group's ``rank``-th smallest angle."""
        return (keys[np.searchsorted(cum, starts + rank, side="right")] % N_SPREAD_BINS + 0.5) * SPREAD_BIN_DEG

    sizes = np.asarray(sizes, dtype=np.int64)
    spread = np.full(len(sizes), np.nan)
    has = sizes > 0
    starts = starts[has]
    spread[has] = 0.5 * (midpoint((sizes[has] - 1) // 2) + midpoint(sizes[has] // 2))
    typ = {k: np.concatenate([p["typical"][k] for p in parts]) for k in ("group", "angle", "index")}
    order = np.lexsort((typ["index"], typ["angle"], typ["group"]))
    g = typ["group"][order]
    first = order[np.r_[True, g[1:] != g[:-1]]] if len(order) else order
    typical = np.full(len(group_ids), -1, np.int64)
    typical[np.searchsorted(group_ids, typ["group"][first])] = typ["index"][first]
    return spread, typical
