import numpy as np
import pytest

from backend.science.counter_rng import haar_quaternions
from backend.science.rotations import geodesic_angle, quaternion_to_matrix
from backend.science.so3_partial import (
    FINE_BINS,
    disjoint_subsamples,
    fine_angle_counts,
    histogram_from_counts,
    kl_exact,
    kl_subsampled,
    kl_summary,
    ks_from_counts,
)
from backend.science.so3_stats import angle_histogram, kl_to_uniform, ks_against_haar


def _angles(n: int, concentrated: bool) -> np.ndarray:
    R = quaternion_to_matrix(haar_quaternions(0, "t", np.arange(n)))
    angles = geodesic_angle(R, np.eye(3)[None])
    return angles * 0.8 if concentrated else angles


@pytest.mark.parametrize("concentrated", [False, True])
def test_ks_from_merged_fine_counts_is_within_1e_4_of_the_exact_test(concentrated):
    angles = _angles(50_000, concentrated)
    exact = ks_against_haar(angles)
    merged = ks_from_counts(sum(fine_angle_counts(part) for part in np.array_split(angles, 7)))
    assert merged["n"] == exact["n"]
    assert merged["statistic"] == pytest.approx(exact["statistic"], abs=1e-4)
    assert merged["statistic"] >= exact["statistic"] - 1e-12  # the bin bracket only overstates
    if exact["pvalue"] > 1e-10:
        assert merged["pvalue"] == pytest.approx(exact["pvalue"], rel=0.05)


def test_histogram_from_fine_counts_matches_the_direct_histogram():
    angles = _angles(10_000, True)
    counts = fine_angle_counts(angles)
    assert counts.shape == (FINE_BINS,) and counts.sum() == len(angles)
    np.testing.assert_allclose(histogram_from_counts(counts)["density"], angle_histogram(angles)["density"], atol=1e-9)


def test_exact_kl_agrees_with_the_bootstrap_estimator_and_its_ci():
    q = haar_quaternions(1, "q", np.arange(5000))
    q[:2500, :3] *= 0.3  # half the set crowds towards the identity
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    exact = kl_exact(q)
    boot = kl_to_uniform(q, n_bootstrap=300, seed=0)
    assert exact["value"] == pytest.approx(boot.value, abs=1e-12)
    assert exact["ci95"][0] == pytest.approx(boot.ci95[0], abs=0.02)
    assert exact["ci95"][1] == pytest.approx(boot.ci95[1], abs=0.02)


def test_subsamples_are_disjoint_seeded_and_their_mean_is_stated():
    blocks = disjoint_subsamples(np.arange(1000), 300, 10, seed=0, stream="s")
    assert len(blocks) == 3 and len(np.unique(np.concatenate(blocks))) == 900
    again = disjoint_subsamples(np.arange(1000), 300, 10, seed=0, stream="s")
    assert all(np.array_equal(a, b) for a, b in zip(blocks, again, strict=True))
    q = haar_quaternions(2, "q", np.arange(4000))
    kl = kl_subsampled(q, 1000, seed=0, stream="s")
    assert kl["n_subsamples"] == 4 and kl["n_used"] == 4000 and "disjoint" in kl["method"]
    assert kl["ci95"][0] < kl["value"] < kl["ci95"][1] and abs(kl["value"]) < 0.1


def test_kl_summary_states_kl_at_n_or_why_not():
    q = haar_quaternions(3, "q", np.arange(3000))
    summary = kl_summary(q, seed=0, at_n=1000)
    assert summary["kl_at_n"]["n_used"] == 3000 and summary["kl_sign_invariant"]["sign_invariant"]
    assert kl_summary(q, seed=0, at_n=5000)["kl_at_n"]["value"] is None


def test_knn_angles_do_not_depend_on_the_query_block():
    from backend.science.so3_stats import knn_angles

    q = haar_quaternions(4, "q", np.arange(3000))
    for signs in (False, True):
        np.testing.assert_array_equal(knn_angles(q, 5, signs, block=10**6), knn_angles(q, 5, signs, block=701))
