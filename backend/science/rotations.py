"""Rotations on SO(3): sampling, conversions and geodesic distances.

Conventions: a frame ``R`` is a (3, 3) rotation whose rows are the molecule's
principal axes in lab coordinates. Quaternions are scalar-last ``(x, y, z, w)``
(SciPy's convention), returned with ``w >= 0``.
"""

from __future__ import annotations

import hashlib

import numpy as np
from scipy.spatial.transform import Rotation

from orientscope.science.segments import owner_index, segment_sum

# Proper diagonal sign flips diag(s0, s1, s0*s1): the ambiguity of PCA axes signs.
SIGN_FLIPS = np.array(
    [np.diag([1.0, 1.0, 1.0]), np.diag([1.0, -1.0, -1.0]),
     np.diag([-1.0, 1.0, -1.0]), np.diag([-1.0, -1.0, 1.0])]
)  # fmt: skip


def derived_seed(seed: int, purpose: str) -> int:
    """A stable sub-seed for one purpose, so one recorded seed reproduces everything."""
    digest = hashlib.sha256(f"{int(seed)}:{purpose}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def random_rotations(n: int, seed: int) -> np.ndarray:
    """(n, 3, 3) Haar-uniform rotation matrices from a seeded generator."""
    return Rotation.random(n, random_state=np.random.default_rng(seed)).as_matrix()


def matrix_to_quaternion(R: np.ndarray) -> np.ndarray:
    """(n, 3, 3) -> (n, 4) unit quaternions (x, y, z, w) with w >= 0."""
    q = Rotation.from_matrix(np.asarray(R).reshape(-1, 3, 3)).as_quat()
    q *= np.where(q[:, 3:4] < 0, -1.0, 1.0)
    return q


def quaternion_to_matrix(q: np.ndarray) -> np.ndarray:
    return Rotation.from_quat(np.asarray(q).reshape(-1, 4)).as_matrix()


def geodesic_angle(R1: np.ndarray, R2: np.ndarray) -> np.ndarray:
    """Angle (rad) of R1 R2ᵀ: arccos((tr(R1 R2ᵀ) - 1) / 2); broadcasts over leading axes."""
    tr = np.einsum("...ij,...ij->...", R1, R2)
    return np.arccos(np.clip((tr - 1.0) / 2.0, -1.0, 1.0))


def quaternion_angle(q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """Geodesic angle (rad) between unit quaternions, treating q and -q as equal."""
    dot = np.abs(np.sum(q1 * q2, axis=-1))
    return 2.0 * np.arccos(np.clip(dot, 0.0, 1.0))


def chord_to_angle(chord: np.ndarray) -> np.ndarray:
    """Euclidean distance between unit quaternions (nearest sign) -> rotation angle."""
    return 4.0 * np.arcsin(np.clip(chord / 2.0, 0.0, 1.0))


def sign_flip_quaternions() -> np.ndarray:
    """(4, 4) quaternions of :data:`SIGN_FLIPS`."""
    return matrix_to_quaternion(SIGN_FLIPS)


def quaternion_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a*b for scalar-last quaternions; broadcasts."""
    ax, ay, az, aw = np.moveaxis(a, -1, 0)
    bx, by, bz, bw = np.moveaxis(b, -1, 0)
    return np.stack(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ],
        axis=-1,
    )


def rotate_molecules(positions: np.ndarray, offsets: np.ndarray, rotations: np.ndarray) -> np.ndarray:
    """Rotate each molecule about its own centroid by ``rotations[i]`` ((n, 3, 3))."""
    owner = owner_index(offsets)
    centroid = segment_sum(positions, offsets) / np.diff(offsets)[:, None]
    centred = positions - centroid[owner]
    return np.einsum("aij,aj->ai", rotations[owner], centred) + centroid[owner]
