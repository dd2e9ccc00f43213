import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from orientscope.science import so3_stats as s
from orientscope.science.rotations import matrix_to_quaternion, random_rotations


def _concentrated(n, sigma, seed):
    """Rotations scattered around the identity by axis-angle noise of scale sigma (rad)."""
    rv = np.random.default_rng(seed).normal(scale=sigma, size=(n, 3))
    return Rotation.from_rotvec(rv).as_matrix()


def test_haar_density_integrates_to_one_and_matches_cdf():
    t = np.linspace(0, np.pi, 20001)
    assert np.trapezoid(s.haar_angle_density(t), t) == pytest.approx(1.0, abs=1e-6)
    assert s.haar_angle_cdf(np.pi) == pytest.approx(1.0)
    np.testing.assert_allclose(np.gradient(s.haar_angle_cdf(t), t)[1:-1], s.haar_angle_density(t)[1:-1], atol=1e-4)


def test_uniform_rotations_give_kl_near_zero():
    q = matrix_to_quaternion(random_rotations(20000, 0))
    kl = s.kl_to_uniform(q, n_bootstrap=200, seed=0)
    assert abs(kl.value) < 0.03
    assert kl.ci95[0] < 0.03 and kl.ci95[1] > -0.03
    assert abs(s.kl_to_uniform(q, sign_invariant=True, n_bootstrap=0).value) < 0.03


def test_concentrated_rotations_match_analytic_kl():
    # Isotropic Gaussian in the tangent space with small sigma: the density is
    # ~ N(0, sigma^2 I_3) in rotation-vector coordinates, whose volume element
    # is ~ Haar near the identity, so KL = log(8 pi^2) - 3/2 log(2 pi e sigma^2).
    sigma = 0.1
    q = matrix_to_quaternion(_concentrated(20000, sigma, 1))
    expected = np.log(8 * np.pi**2) - 1.5 * np.log(2 * np.pi * np.e * sigma**2)
    assert s.kl_to_uniform(q, n_bootstrap=0).value == pytest.approx(expected, abs=0.1)


def test_knn_matches_pairwise_baseline():
    R = _concentrated(3000, 0.6, 2)
    q = matrix_to_quaternion(R)
    assert s.kl_to_uniform(q, n_bootstrap=0).value == pytest.approx(s.kl_to_uniform_pairwise(R), abs=1e-6)


def test_knn_angles_are_true_geodesic_neighbours():
    R = random_rotations(400, 3)
    q = matrix_to_quaternion(R)
    ang = s.knn_angles(q, k=3)
    from orientscope.science.rotations import geodesic_angle

    full = geodesic_angle(R[:, None], R[None, :])
    np.fill_diagonal(full, np.inf)
    np.testing.assert_allclose(ang, np.sort(full, axis=1)[:, :3], atol=1e-6)


def test_sign_invariant_variant_ignores_axis_sign_flips():
    from orientscope.science.rotations import SIGN_FLIPS

    R = _concentrated(4000, 0.15, 4)
    flips = SIGN_FLIPS[np.random.default_rng(0).integers(0, 4, len(R))]
    scrambled = flips @ R
    q0, q1 = matrix_to_quaternion(R), matrix_to_quaternion(scrambled)
    a = s.kl_to_uniform(q0, sign_invariant=True, n_bootstrap=0).value
    b = s.kl_to_uniform(q1, sign_invariant=True, n_bootstrap=0).value
    assert a == pytest.approx(b, abs=1e-9)
    # The quotient has a quarter of the volume: its KL is the full KL minus log 4,
    # and the scrambled set (4 equal blobs) has that same full-space KL.
    full = s.kl_to_uniform(q0, n_bootstrap=0).value
    assert full - a == pytest.approx(np.log(4), abs=0.1)
    assert s.kl_to_uniform(q1, n_bootstrap=0).value == pytest.approx(a, abs=0.1)


def test_reference_orientation_finds_the_mode():
    R = np.concatenate([_concentrated(1500, 0.1, 5), random_rotations(1500, 6)])
    q = matrix_to_quaternion(R)
    ref = s.reference_orientation(q, seed=0)
    from orientscope.science.rotations import geodesic_angle

    assert geodesic_angle(R[ref], np.eye(3)) < 0.15


def test_kl_and_ks_detect_alignment_and_not_uniform():
    biased = _concentrated(3000, 0.5, 7)
    assert s.reference_and_ks(biased, seed=1)["ks"]["pvalue"] < 1e-6
    assert s.kl_to_uniform(matrix_to_quaternion(biased), n_bootstrap=100, seed=1).value > 1.0
    uniform = random_rotations(3000, 8)
    assert abs(s.kl_to_uniform(matrix_to_quaternion(uniform), n_bootstrap=100, seed=1).value) < 0.06
    hist = s.reference_and_ks(uniform, seed=1)["angle_histogram"]
    assert len(hist["density"]) == len(hist["haar_density"]) == len(hist["bin_edges_rad"]) - 1


def test_ks_on_uniform_control_is_calibrated():
    # Over many seeds the control's KS p-values are ~uniform: few below 0.05.
    pvals = [s.reference_and_ks(random_rotations(600, 100 + i), seed=i)["ks"]["pvalue"] for i in range(40)]
    assert np.mean(np.array(pvals) < 0.05) <= 0.15
    assert 0.3 < np.median(pvals) < 0.7


def _signed_cluster(seed: int) -> np.ndarray:
    """Clustered unit quaternions stored with random signs, with outliers and exact duplicates."""
    rng = np.random.default_rng(seed)
    centres = Rotation.random(6, random_state=1).as_quat()
    q = centres[rng.integers(0, 6, 3000)] + rng.normal(0, 0.05, (3000, 4))
    q = np.concatenate([q, Rotation.random(300, random_state=2).as_quat(), q[:40]])
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return q * rng.choice([-1.0, 1.0], len(q))[:, None]


@pytest.mark.parametrize("k", [1, 5, 12])
def test_nearest_orientations_are_the_brute_force_nearest_with_q_and_minus_q_one(k):
    from scipy.spatial import cKDTree

    q = _signed_cluster(7)
    tree = cKDTree(s.orientation_points(q))
    rng = np.random.default_rng(8)
    rows = rng.choice(len(q), 150, replace=False)
    for probe in (q[rows], -q[rows]):  # the query's own sign does not matter
        chord, idx = s.nearest_orientations(tree, probe, k, exclude=rows)
        for j, i in enumerate(rows):
            true = np.minimum(np.linalg.norm(q - q[i], axis=1), np.linalg.norm(q + q[i], axis=1))
            true[i] = np.inf  # excluded: itself
            want = np.lexsort((np.arange(len(q)), true))[:k]  # equally near (duplicates): by row
            np.testing.assert_allclose(chord[j], true[want], atol=1e-12)
            if np.unique(true[want]).size == k and true[want[-1]] < np.sort(true)[k]:  # no tie to break
                np.testing.assert_array_equal(idx[j], want)
            assert (idx[j] != i).all() and np.all(np.diff(chord[j]) >= 0)


def test_nearest_orientations_break_ties_by_row_and_ignore_axis_flips_when_asked():
    from scipy.spatial import cKDTree

    from orientscope.science.rotations import quaternion_multiply, sign_flip_quaternions

    base = Rotation.random(1, random_state=3).as_quat()[0]
    flips = quaternion_multiply(sign_flip_quaternions(), base)  # base with its axes' signs flipped
    far = Rotation.random(50, random_state=4).as_quat()
    q = np.concatenate([far, [base, -base, flips[1], base]])  # rows 50, 51 and 53 are base itself
    tree = cKDTree(s.orientation_points(q))
    chord, idx = s.nearest_orientations(tree, base, 3)
    np.testing.assert_array_equal(idx[0], [50, 51, 53])
    np.testing.assert_allclose(chord[0], 0.0, atol=1e-15)
    # with the axis signs ignored, the flipped copy (row 52) is the same orientation
    flip_tree = cKDTree(s.orientation_points(q, sign_invariant=True))
    chord, idx = s.nearest_orientations(flip_tree, base, 4, sign_invariant=True)
    np.testing.assert_array_equal(idx[0], [50, 51, 52, 53])
    np.testing.assert_allclose(chord[0], 0.0, atol=1e-12)
