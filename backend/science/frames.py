"""Canonical frames of molecules, vectorised over a whole dataset.

For each molecule the atoms are centred and the 3x3 second-moment tensor is
diagonalised; its eigenvectors are the rows of ``R`` (PCA: descending
variance; inertia: ascending moment, i.e. the same axis order). The signs of
axes 1 and 2 are fixed by a sign rule and axis 3 makes ``R`` right-handed.
Canonical coordinates are ``R @ (x - centroid)``. The frame is equivariant:
rotating a molecule by ``Q`` turns ``R`` into ``R @ Q.T``.

A frame is flagged ``degenerate`` where it is ill-defined:

* ``single_atom``: fewer than two distinct positions;
* ``linear``: the two smaller eigenvalues are both ~0 (relative to the largest);
* ``eigen_gap_12`` / ``eigen_gap_23``: (λ1-λ2)/λ1 or (λ2-λ3)/λ1 below
  ``gap_tol`` (default 1e-3), so the axes can swap or spin under tiny noise;
* ``sign_tie_1`` / ``sign_tie_2``: the sign rule cannot choose a direction
  (rule "max": the largest |projections| agree to within ``sign_tol`` Å but
  have opposite signs; rule "count": as many atoms on each side). Ties fall
  back to the sign of the third moment (then +1), so the frame stays
  deterministic but is flagged.

What orientation a frame carries follows from these codes (:func:`symmetry_kinds`):

* none: single atoms, and spherical tops (both gaps below ``gap_tol``, e.g.
  methane, SF6): no rotation changes them, so their frame is a constant;
* one axis: linear molecules and prolate symmetric tops (``eigen_gap_23``)
  define only axis 1, oblate symmetric tops (``eigen_gap_12``, e.g. benzene,
  NH3) only axis 3; the other two axes spin freely, so only the defined axis,
  as an axial direction (v and -v alike), is a pose;
* full: every other molecule, finite symmetries (``sign_tie_*``) included.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orientscope.core.elements import MASSES_DA
from orientscope.science.rotations import matrix_to_quaternion
from orientscope.science.segments import owner_index, segment_max, segment_sum

# One line per degeneracy code, for every surface that shows the codes.
DEGENERACY_CODES = {
    "single_atom": "fewer than two distinct atom positions: no axis is defined",
    "linear": "the atoms lie on a line: only the first axis is defined, the other two spin freely",
    "eigen_gap_12": "the first two axes have (almost) the same spread, so they can swap under tiny noise",
    "eigen_gap_23": "the second and third axes have (almost) the same spread, so they can swap or spin "
    "(e.g. methane, CH3Cl)",
    "sign_tie_1": "the sign rule cannot choose the first axis' direction (e.g. water's H···H axis); "
    "the third moment decides",
    "sign_tie_2": "the sign rule cannot choose the second axis' direction; the third moment decides",
}

# What each symmetry leaves of the orientation: its class (none, axis, full) and the one defined axis (1..3) of
# the axis class. "" is a molecule with a full frame.
SYMMETRY_KINDS = {
    "": ("full", 0),
    "single_atom": ("none", 0),
    "spherical_top": ("none", 0),
    "linear": ("axis", 1),
    "prolate_top": ("axis", 1),
    "oblate_top": ("axis", 3),
}
# What a set of molecules of each kind is called in a sentence.
SYMMETRY_TEXT = {
    "single_atom": "single atoms",
    "spherical_top": "spherical tops",
    "linear": "linear molecules",
    "prolate_top": "prolate symmetric tops",
    "oblate_top": "oblate symmetric tops",
}
ORIENTATION_CLASSES = ("none", "axis", "full")

FRAME_METHODS = ("pca", "pca-mass", "inertia")
SIGN_RULES = ("max", "count")
DEFAULT_GAP_TOL = 1e-3
DEFAULT_SIGN_TOL_ANGSTROM = 1e-3


@dataclass(frozen=True)
class Frames:
    """Per-molecule canonical frames.

    rotations : (n, 3, 3) rows = principal axes (lab coordinates)
    eigenvalues : (n, 3) Å² (PCA, descending) or Da·Å² (inertia, ascending)
    quaternions : (n, 4) scalar-last, w >= 0
    centroids : (n, 3) Å (mass-weighted where the method is)
    degenerate : (n,) bool
    reasons : (n,) str, ";"-joined codes, "" where well defined
    symmetry : (n,) str, the key of :data:`SYMMETRY_KINDS` (derived from ``reasons`` if not given)
    """

    rotations: np.ndarray
    eigenvalues: np.ndarray
    quaternions: np.ndarray
    centroids: np.ndarray
    degenerate: np.ndarray
    reasons: np.ndarray
    symmetry: np.ndarray | None = None

    def __post_init__(self):
        if self.symmetry is None:
            object.__setattr__(self, "symmetry", symmetry_kinds(self.reasons))

    def __len__(self) -> int:
        return len(self.rotations)

    @property
    def orientation(self) -> np.ndarray:
        """(n,) str: "none", "axis" or "full" (:data:`SYMMETRY_KINDS`)."""
        return orientation_of(self.symmetry)[0]

    @property
    def defined_axis(self) -> np.ndarray:
        """(n,) int8: the one defined axis (1 or 3) of an axis-only molecule, else 0."""
        return orientation_of(self.symmetry)[1]


def symmetry_kinds(reasons: np.ndarray) -> np.ndarray:
    """(n,) str key of :data:`SYMMETRY_KINDS` per molecule from its ";"-joined degeneracy codes.

    Only the distinct codes of the degenerate molecules are parsed, so 10M mostly
    well-defined frames cost one comparison each.
    """
    reasons = np.asarray(reasons).astype(str)
    out = np.full(len(reasons), "", dtype="<U13")
    flagged = np.flatnonzero(reasons != "")
    if flagged.size:
        distinct, inverse = np.unique(reasons[flagged], return_inverse=True)
        out[flagged] = np.array([_kind(set(r.split(";"))) for r in distinct], dtype="<U13")[inverse]
    return out


def _kind(codes: set[str]) -> str:
    if "single_atom" in codes:
        return "single_atom"
    if "linear" in codes:
        return "linear"
    gap12, gap23 = "eigen_gap_12" in codes, "eigen_gap_23" in codes
    if gap12 and gap23:
        return "spherical_top"
    return "prolate_top" if gap23 else "oblate_top" if gap12 else ""


def orientation_of(symmetry: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(class (n,) str, defined axis (n,) int8) of each molecule's symmetry kind (:data:`SYMMETRY_KINDS`)."""
    symmetry = np.asarray(symmetry).astype(str)
    classes = np.full(len(symmetry), "full", dtype="<U4")
    axes = np.zeros(len(symmetry), dtype=np.int8)
    flagged = symmetry != ""
    if flagged.any():
        unknown = set(np.unique(symmetry[flagged])) - set(SYMMETRY_KINDS)
        if unknown:
            raise ValueError(f"unknown symmetry kind(s) {sorted(unknown)}; expected some of {list(SYMMETRY_KINDS)}")
        for kind, (cls, axis) in SYMMETRY_KINDS.items():
            if kind:
                mask = symmetry == kind
                classes[mask], axes[mask] = cls, axis
    return classes, axes


def _check_options(method: str, sign_rule: str) -> None:
    if method not in FRAME_METHODS:
        raise ValueError(f"unknown frame method {method!r}; expected one of {FRAME_METHODS}")
    if sign_rule not in SIGN_RULES:
        raise ValueError(f"unknown sign rule {sign_rule!r}; expected one of {SIGN_RULES}")


def _axis_signs(proj: np.ndarray, weights: np.ndarray, offsets: np.ndarray, rule: str, tol: float):
    """Sign (+-1) per molecule for one axis, and a tie mask."""
    if rule == "max":
        a = np.abs(proj)
        top = a >= segment_max(a, offsets)[owner_index(offsets)] - tol
        pos = segment_sum((top & (proj > 0)).astype(np.int64), offsets)
        neg = segment_sum((top & (proj < 0)).astype(np.int64), offsets)
        sign = np.where(neg > 0, -1.0, 1.0)
        tie = (pos > 0) == (neg > 0)
    else:
        votes = np.where(np.abs(proj) > tol, np.sign(proj), 0.0)
        balance = segment_sum(votes, offsets)
        sign = np.where(balance < 0, -1.0, 1.0)
        tie = balance == 0
    if tie.any():
        skew = segment_sum(weights * proj**3, offsets)
        fallback = np.where(skew < 0, -1.0, 1.0)
        sign = np.where(tie, fallback, sign)
    return sign, tie


def compute_frames(
    positions_angstrom: np.ndarray,
    offsets: np.ndarray,
    atomic_numbers: np.ndarray | None = None,
    method: str = "pca",
    sign_rule: str = "max",
    gap_tol: float = DEFAULT_GAP_TOL,
    sign_tol: float = DEFAULT_SIGN_TOL_ANGSTROM,
) -> Frames:
    """Canonical frames of all molecules at once.

    Parameters
    ----------
    positions_angstrom : (n_atoms_total, 3)
    offsets : (n_molecules + 1,) molecule ``i`` owns atoms ``offsets[i]:offsets[i+1]``
    atomic_numbers : (n_atoms_total,) needed for mass weighting
    method : "pca" (unweighted covariance), "pca-mass" (mass-weighted
        covariance) or "inertia" (mass-weighted moment-of-inertia tensor)
    sign_rule : "max" or "count" (see module docstring)
    """
    _check_options(method, sign_rule)
    pos = np.asarray(positions_angstrom, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    counts = np.diff(offsets)
    if (counts < 1).any():
        raise ValueError("every molecule needs at least one atom")
    owner = owner_index(offsets)
    if method == "pca":
        w = np.ones(len(pos))
    else:
        if atomic_numbers is None:
            raise ValueError(f"frame method {method!r} needs atomic numbers for the masses")
        w = MASSES_DA[np.asarray(atomic_numbers, dtype=np.int64)]
    wsum = segment_sum(w, offsets)
    centroids = segment_sum(w[:, None] * pos, offsets) / wsum[:, None]
    x = pos - centroids[owner]
    second = segment_sum(w[:, None, None] * x[:, :, None] * x[:, None, :], offsets)
    if method == "inertia":
        trace = np.trace(second, axis1=1, axis2=2)
        tensor = trace[:, None, None] * np.eye(3) - second
        evals, evecs = np.linalg.eigh(tensor)  # ascending moments = long axis first
        order_vals = evals
        # Largest moment sets the scale for relative gaps.
        scale = evals[:, 2]
    else:
        second /= wsum[:, None, None]
        evals, evecs = np.linalg.eigh(second)
        evals, evecs = evals[:, ::-1], evecs[:, :, ::-1]
        order_vals = evals
        scale = evals[:, 0]
    R = np.ascontiguousarray(np.transpose(evecs, (0, 2, 1)))

    tiny = scale <= 1e-12
    safe = np.where(tiny, 1.0, scale)
    gap12 = np.abs(order_vals[:, 0] - order_vals[:, 1]) / safe
    gap23 = np.abs(order_vals[:, 1] - order_vals[:, 2]) / safe
    if method == "inertia":
        linear = order_vals[:, 0] / safe < gap_tol
    else:
        linear = order_vals[:, 1] / safe < gap_tol

    ties = []
    for k in range(2):
        proj = np.einsum("ai,ai->a", x, R[owner, k])
        sign, tie = _axis_signs(proj, w, offsets, sign_rule, sign_tol)
        R[:, k] *= sign[:, None]
        ties.append(tie)
    flip = np.linalg.det(R) < 0
    R[flip, 2] *= -1.0

    codes = [
        ("single_atom", tiny),
        ("linear", linear & ~tiny),
        ("eigen_gap_12", (gap12 < gap_tol) & ~tiny),
        ("eigen_gap_23", (gap23 < gap_tol) & ~tiny & ~linear),
        ("sign_tie_1", ties[0] & ~tiny),
        ("sign_tie_2", ties[1] & ~tiny),
    ]
    reasons = np.full(len(R), "", dtype=object)
    for name, mask in codes:
        reasons[mask] = np.where(reasons[mask] == "", name, reasons[mask] + ";" + name)
    degenerate = reasons != ""
    R[tiny] = np.eye(3)
    return Frames(
        rotations=R,
        eigenvalues=order_vals,
        quaternions=matrix_to_quaternion(R),
        centroids=centroids,
        degenerate=degenerate,
        reasons=reasons.astype(str),
        symmetry=symmetry_kinds(reasons),
    )


def canonical_positions(positions_angstrom: np.ndarray, offsets: np.ndarray, frames: Frames) -> np.ndarray:
    """(n_atoms_total, 3) coordinates R @ (x - centroid) of every atom."""
    owner = owner_index(np.asarray(offsets, dtype=np.int64))
    x = np.asarray(positions_angstrom, dtype=np.float64) - frames.centroids[owner]
    return np.einsum("aij,aj->ai", frames.rotations[owner], x)


def frame_of_molecule(
    atomic_numbers, positions_angstrom, method: str = "pca", sign_rule: str = "max"
) -> tuple[Frames, np.ndarray]:
    """Frame and canonical coordinates of a single molecule (the same code path)."""
    pos = np.asarray(positions_angstrom, dtype=np.float64).reshape(-1, 3)
    offsets = np.array([0, len(pos)])
    frames = compute_frames(pos, offsets, atomic_numbers, method=method, sign_rule=sign_rule)
    return frames, canonical_positions(pos, offsets, frames)
