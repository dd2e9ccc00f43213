import numpy as np
import pytest

from orientscope.science.rotations import (
    derived_seed,
    geodesic_angle,
    matrix_to_quaternion,
    quaternion_angle,
    quaternion_multiply,
    quaternion_to_matrix,
    random_rotations,
    rotate_molecules,
)


def test_random_rotations_are_seeded_and_proper():
    a, b = random_rotations(50, 1), random_rotations(50, 1)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, random_rotations(50, 2))
    np.testing.assert_allclose(np.linalg.det(a), 1.0)


def test_derived_seeds_differ_by_purpose():
    assert derived_seed(0, "control") == derived_seed(0, "control")
    assert derived_seed(0, "control") != derived_seed(0, "split")
    assert derived_seed(0, "control") != derived_seed(1, "control")


def test_geodesic_angle_known_values():
    Rz = lambda t: np.array([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0], [0, 0, 1]])  # noqa: E731
    assert geodesic_angle(Rz(0.3), np.eye(3)) == pytest.approx(0.3)
    assert geodesic_angle(Rz(np.pi), np.eye(3)) == pytest.approx(np.pi)


def test_quaternion_round_trip_and_angle_agree():
    R = random_rotations(20, 0)
    q = matrix_to_quaternion(R)
    assert (q[:, 3] >= 0).all()
    np.testing.assert_allclose(quaternion_to_matrix(q), R, atol=1e-12)
    np.testing.assert_allclose(quaternion_angle(q[:-1], q[1:]), geodesic_angle(R[:-1], R[1:]), atol=1e-7)
    # Hamilton product composes rotations.
    prod = quaternion_multiply(q[0], q[1])
    np.testing.assert_allclose(quaternion_to_matrix(prod)[0], R[0] @ R[1], atol=1e-12)


def test_rotate_molecules_keeps_centroid_and_shape():
    pos = np.random.default_rng(0).normal(size=(7, 3))
    off = np.array([0, 3, 7])
    Q = random_rotations(2, 5)
    out = rotate_molecules(pos, off, Q)
    for i in range(2):
        a, b = pos[off[i] : off[i + 1]], out[off[i] : off[i + 1]]
        np.testing.assert_allclose(b.mean(0), a.mean(0), atol=1e-12)
        np.testing.assert_allclose(b - b.mean(0), (a - a.mean(0)) @ Q[i].T, atol=1e-12)
