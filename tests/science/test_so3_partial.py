import numpy as np
import pytest

from orientscope.science.counter_rng import haar_quaternions
from orientscope.science.rotations import (
    chord_to_angle,
    geodesic_angle,
    quaternion_multiply,
    quaternion_to_matrix,
    sign_flip_quaternions,
)
from orientscope.science.so3_partial import (
    FINE_BINS,
    fine_angle_counts,
    histogram_from_counts,
    kl_exact,
    kl_plan,
    kl_summary,
    ks_from_counts,
    part_rows,
)
from orientscope.science.so3_stats import (
    angle_histogram,
    kl_to_uniform,
    knn_angles,
    ks_against_haar,
    kth_neighbour_angles,
)


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


def test_kl_parts_split_the_set_disjointly_and_do_not_depend_on_the_cut():
    plan = kl_plan(10_000, exact_limit=3000, sign_limit=500, at_n=1000)
    index = np.arange(10_000)
    groups = [part_rows(p, 0, index) for p in plan["kl"]]
    assert len(groups) == 4 and np.array_equal(np.sort(np.concatenate(groups)), index)  # every molecule, once
    assert all(2000 < len(g) < 3000 for g in groups)
    at_n = [part_rows(p, 0, index) for p in plan["kl_at_n"]]
    assert len(at_n) == 8 and all(len(g) == 1000 for g in at_n)  # 8 groups of ~1126, trimmed to 1000
    assert len(np.unique(np.concatenate(at_n))) == 8000
    assert [len(part_rows(p, 0, index)) for p in plan["kl_sign_invariant"]] == [500] * 3
    # Membership is per global index: picked shard by shard, the same molecules.
    for part in plan["kl"] + plan["kl_at_n"]:
        by_shard = np.concatenate([c[part.members(0, c)] for c in np.array_split(index, 7)])
        np.testing.assert_array_equal(by_shard[part.trim(0, by_shard)], part_rows(part, 0, index))
    assert not np.array_equal(part_rows(plan["kl_at_n"][0], 1, index), at_n[0])  # another seed, another draw


def test_kl_beyond_the_exact_limit_is_the_stated_mean_of_subsamples():
    q = haar_quaternions(2, "q", np.arange(4000))
    summary = kl_summary(q, seed=0, at_n=1000, exact_limit=1500)
    kl = summary["kl"]
    assert kl["n_subsamples"] == 3 and kl["n_used"] == 4000 and kl["n"] == 4000 and "disjoint" in kl["method"]
    assert kl["ci95"][0] < kl["value"] < kl["ci95"][1] and abs(kl["value"]) < 0.1
    assert kl_summary(q, seed=0, at_n=1000)["kl"]["method"].startswith("exact")


def test_kl_summary_states_kl_at_n_or_why_not():
    q = haar_quaternions(3, "q", np.arange(3000))
    summary = kl_summary(q, seed=0, at_n=1000)
    assert summary["kl_at_n"]["n_used"] == 2000 and summary["kl_at_n"]["subsample_size"] == 1000
    assert summary["kl_sign_invariant"]["sign_invariant"]
    assert kl_summary(q, seed=0, at_n=5000)["kl_at_n"]["value"] is None


def test_knn_angles_do_not_depend_on_the_query_block():
    from orientscope.science.so3_stats import knn_angles

    q = haar_quaternions(4, "q", np.arange(3000))
    for signs in (False, True):
        np.testing.assert_array_equal(knn_angles(q, 5, signs, block=10**6), knn_angles(q, 5, signs, block=701))


def _brute_kth_angle(q: np.ndarray, k: int, sign_invariant: bool) -> np.ndarray:
    copies = quaternion_multiply(sign_flip_quaternions()[:, None, :], q[None]) if sign_invariant else q[None]
    dots = np.abs(np.einsum("ni,cmi->nmc", q, copies)).max(axis=2)  # |q·c| over the copies: the nearest one
    np.fill_diagonal(dots, -np.inf)
    chord = np.sqrt(np.maximum(2.0 - 2.0 * np.sort(dots, axis=1)[:, ::-1][:, k - 1], 0.0))
    return chord_to_angle(chord)


@pytest.mark.parametrize("sign_invariant", [False, True])
def test_kth_neighbour_angles_are_exact_near_the_w_zero_boundary(sign_invariant):
    q = haar_quaternions(5, "q", np.arange(1500))
    q[:700, 3] *= 0.01  # many molecules whose nearest copies sit across w = 0 (q and -q are one pose)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    got = kth_neighbour_angles(q.copy(), 5, sign_invariant, overwrite=True)
    np.testing.assert_allclose(got, _brute_kth_angle(q, 5, sign_invariant), atol=1e-6)
    np.testing.assert_array_equal(got, knn_angles(q, 5, sign_invariant)[:, 4])
