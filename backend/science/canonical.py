"""Canonical poses for features: the pipeline's frame, with its float noise snapped away.

The canonical pose ``R (x - centroid)`` (:mod:`orientscope.science.frames`) is rotation invariant only up to
rounding: the eigenvectors of a rotated molecule differ by ~1e-13 Å (at most 5e-13 Å over 20,000 QM9
molecules × 10 Haar rotations), and a model that splits on such noise (a decision tree) changes its prediction
with the pose. The rule here:

* every canonical coordinate is snapped to the grid ``snap`` (default 1e-5 Å): ``round(x / snap) * snap``, so
  two poses whose canonical coordinates differ by less than the noise give identical numbers;
* a molecule is **flagged**, with its reasons, where that does not hold: its frame is ill-defined
  (the frame's degeneracy codes: ``single_atom``, ``linear``, ``eigen_gap_*``, ``sign_tie_*``), a
  coordinate lies within ``tolerance`` (default 1e-10 Å, 200× the largest noise seen) of a rounding boundary
  (``rounding_boundary``), or an atom's projection lies within ``tolerance`` of the sign rule's own threshold
  (``sign_rule_boundary``), where noise could flip an axis.

For an unflagged molecule the snapped canonical coordinates are identical (bit for bit) for any rotation of
its input whose noise stays below ``tolerance``; features built from them are identical too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orientscope.science.frames import DEFAULT_SIGN_TOL_ANGSTROM, canonical_positions, compute_frames
from orientscope.science.segments import owner_index, segment_max, segment_sum

SNAP_ANGSTROM = 1e-5
TOLERANCE_ANGSTROM = 1e-10


@dataclass(frozen=True)
class CanonicalPoses:
    """Snapped canonical poses of n molecules.

    positions : (n_atoms, 3) Å, snapped to ``snap``
    rotations : (n, 3, 3), rows the principal axes (R of the frame)
    centroids : (n, 3) Å
    flagged : (n,) bool, reasons : (n,) str (";"-joined codes, "" where unflagged)
    snap, tolerance : Å, the rule's grid and noise tolerance
    """

    positions: np.ndarray
    rotations: np.ndarray
    centroids: np.ndarray
    flagged: np.ndarray
    reasons: np.ndarray
    snap: float
    tolerance: float


def _sign_rule_boundary(x: np.ndarray, rotations: np.ndarray, offsets: np.ndarray, rule: str, tol: float) -> np.ndarray:
    """(n,) bool: an atom's projection on axis 1 or 2 lies within ``tol`` of where the sign rule's choice changes."""
    owner = owner_index(offsets)
    near = np.zeros(len(offsets) - 1, dtype=bool)
    for k in range(2):
        a = np.abs(np.einsum("ai,ai->a", x, rotations[owner, k]))
        edge = (
            segment_max(a, offsets)[owner] - DEFAULT_SIGN_TOL_ANGSTROM if rule == "max" else DEFAULT_SIGN_TOL_ANGSTROM
        )
        near |= segment_sum((np.abs(a - edge) < tol).astype(np.int64), offsets) > 0
    return near


def canonical_poses(
    positions_angstrom: np.ndarray,
    offsets: np.ndarray,
    atomic_numbers: np.ndarray | None = None,
    method: str = "pca",
    sign_rule: str = "max",
    snap: float = SNAP_ANGSTROM,
    tolerance: float = TOLERANCE_ANGSTROM,
) -> CanonicalPoses:
    """Snapped canonical poses by the pipeline's frame (``method``) and sign rule, with flags (module docstring).

    positions_angstrom : (n_atoms, 3); offsets : (n + 1,); atomic_numbers : (n_atoms,), needed by mass weighting.
    """
    if not (snap > 0 and 0 < tolerance < snap / 2):
        raise ValueError(f"need snap > 0 and 0 < tolerance < snap / 2 (Å), got snap={snap}, tolerance={tolerance}")
    offsets = np.asarray(offsets, dtype=np.int64)
    frames = compute_frames(positions_angstrom, offsets, atomic_numbers, method=method, sign_rule=sign_rule)
    canonical = canonical_positions(positions_angstrom, offsets, frames)
    scaled = canonical / snap
    nearest = np.round(scaled)
    boundary = segment_sum((np.abs(scaled - nearest).max(axis=1) > 0.5 - tolerance / snap).astype(np.int64), offsets)
    x = np.asarray(positions_angstrom, dtype=np.float64) - frames.centroids[owner_index(offsets)]
    codes = [
        ("rounding_boundary", boundary > 0),
        ("sign_rule_boundary", _sign_rule_boundary(x, frames.rotations, offsets, sign_rule, tolerance)),
    ]
    reasons = frames.reasons.astype(object)
    for name, mask in codes:
        reasons[mask] = np.where(reasons[mask] == "", name, reasons[mask] + ";" + name)
    reasons = reasons.astype(str)
    return CanonicalPoses(
        positions=nearest * snap,
        rotations=frames.rotations,
        centroids=frames.centroids,
        flagged=reasons != "",
        reasons=reasons,
        snap=float(snap),
        tolerance=float(tolerance),
    )
