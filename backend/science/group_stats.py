"""Orientation statistics of groups of molecules (scaffold, formula, cluster).

Quaternions are scalar-last and q ≡ -q. The group mean is the principal
eigenvector of Σ q qᵀ (the chordal L2 mean, sign-free); spread is the median
geodesic angle to it; concentration is the mean over the three principal axes
of the mean resultant length of that axis' direction (1: all members share the
frame, ~1/sqrt(size) for uniformly random frames).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from backend.science.rotations import quaternion_angle

GROUP_COLUMNS = ["group", "size", "qx", "qy", "qz", "qw", "spread_deg", "concentration", "typical_index"]


def quaternion_mean(quaternions: np.ndarray) -> np.ndarray:
    """(4,) sign-invariant mean of (n, 4) unit quaternions, returned with w >= 0."""
    q = np.asarray(quaternions, dtype=np.float64).reshape(-1, 4)
    _, vecs = np.linalg.eigh(q.T @ q)
    mean = vecs[:, -1]
    return mean if mean[3] >= 0 else -mean


def _segment_reduce(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    return np.add.reduceat(values, starts, axis=0)


def group_orientation_stats(groups: np.ndarray, quaternions: np.ndarray, rotations: np.ndarray) -> pd.DataFrame:
    """Per-group orientation statistics, vectorised over all groups.

    Parameters
    ----------
    groups : (n,) int group id per molecule; negative ids are ignored
    quaternions : (n, 4) scalar-last unit quaternions of the frames
    rotations : (n, 3, 3) frames, rows = principal axes

    Returns
    -------
    DataFrame sorted by size (descending, then group id) with :data:`GROUP_COLUMNS`:
    ``typical_index`` is the row of the member closest to the group mean,
    ``spread_deg`` the median angle to the mean (degrees).
    """
    groups = np.asarray(groups, dtype=np.int64)
    rows = np.flatnonzero(groups >= 0)
    if rows.size == 0:
        return pd.DataFrame({c: [] for c in GROUP_COLUMNS})
    rows = rows[np.argsort(groups[rows], kind="stable")]
    g = groups[rows]
    ids, starts, sizes = np.unique(g, return_index=True, return_counts=True)
    q = np.asarray(quaternions, dtype=np.float64)[rows]
    scatter = _segment_reduce(np.einsum("ni,nj->nij", q, q), starts)
    _, vecs = np.linalg.eigh(scatter)
    mean = vecs[:, :, -1]
    mean *= np.where(mean[:, 3:4] < 0, -1.0, 1.0)
    member = np.repeat(np.arange(len(ids)), sizes)
    angle = quaternion_angle(q, mean[member])
    # Sort members by (group, angle): the first is the typical member, the middle the median.
    by_angle = np.lexsort((angle, member))
    sorted_angle = angle[by_angle]
    lo = starts + (sizes - 1) // 2
    hi = starts + sizes // 2
    spread = 0.5 * (sorted_angle[lo] + sorted_angle[hi])
    typical = rows[by_angle[starts]]
    axes = _segment_reduce(np.asarray(rotations, dtype=np.float64)[rows], starts)
    concentration = (np.linalg.norm(axes, axis=2) / sizes[:, None]).mean(axis=1)
    out = pd.DataFrame(
        {
            "group": ids,
            "size": sizes,
            "qx": mean[:, 0],
            "qy": mean[:, 1],
            "qz": mean[:, 2],
            "qw": mean[:, 3],
            "spread_deg": np.degrees(spread),
            "concentration": concentration,
            "typical_index": typical,
        }
    )
    return out.sort_values(["size", "group"], ascending=[False, True], kind="stable").reset_index(drop=True)
