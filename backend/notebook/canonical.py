"""``orientscope.canonicalize``: the pipeline's canonical frame, for features that do not move with the pose.

The same frame and sign rule as the report's (``science/frames.py``), and the result of ``POST
/api/canonicalize`` (canonical positions, R, centroid), with numerical noise snapped away by the rule of
:mod:`orientscope.science.canonical` and the molecules where that rule cannot promise identical numbers flagged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orientscope.notebook.datasets import _as_numpy
from orientscope.notebook.progress import checked_options
from orientscope.science.canonical import SNAP_ANGSTROM, TOLERANCE_ANGSTROM, canonical_poses


@dataclass(frozen=True)
class Canonical:
    """Canonical poses, as ``POST /api/canonicalize`` gives them, with their flags.

    Attributes
    ----------
    positions : (n_atoms, 3) Å, ``R (x - centroid)`` snapped to a grid of ``snap`` Å
    rotations : (n_molecules, 3, 3), rows the principal axes (R); (3, 3) for one molecule (``offsets`` None)
    centroids : (n_molecules, 3) Å; (3,) for one molecule
    flagged : (n_molecules,) bool (a bool for one molecule): the snapped pose may differ between rotations
    reasons : (n_molecules,) str (a str for one molecule): why, ";"-joined (``single_atom``, ``linear``,
        ``eigen_gap_12``, ``eigen_gap_23``, ``sign_tie_1``, ``sign_tie_2``, ``rounding_boundary``,
        ``sign_rule_boundary``), "" where unflagged
    snap, tolerance : Å, the grid and the noise tolerance of the rule
    """

    positions: np.ndarray
    rotations: np.ndarray
    centroids: np.ndarray
    flagged: np.ndarray | bool
    reasons: np.ndarray | str
    snap: float
    tolerance: float


@checked_options
def canonicalize(
    numbers,
    positions,
    offsets=None,
    frame: str = "pca",
    sign: str = "max",
    snap: float = SNAP_ANGSTROM,
    tolerance: float = TOLERANCE_ANGSTROM,
) -> Canonical:
    """The canonical poses of molecules given as flat arrays (one molecule when ``offsets`` is None).

    Parameters
    ----------
    numbers : (n_atoms,) int atomic numbers
    positions : (n_atoms, 3) float positions in ångström
    offsets : (n_molecules + 1,) int, molecule ``i`` owns atoms ``offsets[i]:offsets[i+1]`` (a :class:`Batch`'s)
    frame : ``pca``, ``pca-mass`` or ``inertia``; sign : ``max`` or ``count`` (the pipeline's rules)
    snap, tolerance : the grid the coordinates are snapped to and the noise tolerance, in Å

    Within ``tolerance``, an unflagged molecule's snapped positions are identical for every rotation of its
    input, so features built from them are too: e.g. ``model.predict(f(canonicalize(b.numbers, b.positions,
    b.offsets).positions))``.
    """
    z = _as_numpy(numbers).reshape(-1)
    pos = _as_numpy(positions).astype(np.float64)
    if pos.ndim != 2 or pos.shape != (len(z), 3):
        raise ValueError(f"positions must have shape (n_atoms, 3) = ({len(z)}, 3), got {pos.shape}")
    if not np.isfinite(pos).all():
        raise ValueError("positions must be finite (a NaN or infinite coordinate was given)")
    single = offsets is None
    off = np.array([0, len(z)]) if single else _as_numpy(offsets).astype(np.int64).reshape(-1)
    if off[0] != 0 or off[-1] != len(z) or (np.diff(off) < 1).any():
        raise ValueError(
            f"offsets must start at 0, end at the atom count {len(z)} and increase (every molecule needs an atom)"
        )
    poses = canonical_poses(pos, off, z, method=frame, sign_rule=sign, snap=snap, tolerance=tolerance)
    if single:
        return Canonical(poses.positions, poses.rotations[0], poses.centroids[0], bool(poses.flagged[0]),
                         str(poses.reasons[0]), poses.snap, poses.tolerance)  # fmt: skip
    return Canonical(poses.positions, poses.rotations, poses.centroids, poses.flagged, poses.reasons, poses.snap,
                     poses.tolerance)  # fmt: skip
