"""Bingham's axial test: its χ²₅ law by simulation, the merge of partial sums, and known answers."""

import numpy as np
import pytest

from orientscope.science.axial import (
    MIN_AXES,
    axial_partial,
    axial_terms,
    axial_test,
    bingham_test,
    defined_axes,
    merge_axial,
    sums_from_terms,
)
from orientscope.science.rotations import random_rotations


def _uniform_axes(draws: int, n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(draws, n, 3))
    return v / np.linalg.norm(v, axis=2, keepdims=True)


@pytest.mark.parametrize("n", [30, 100, 1000])
def test_the_statistic_on_uniform_axes_follows_chi2_with_5_degrees_of_freedom(n):
    draws = 4000
    s = np.array([axial_test(v)["statistic"] for v in _uniform_axes(draws, n, seed=n)])
    p = np.array([axial_test(v)["pvalue"] for v in _uniform_axes(200, n, seed=n + 1)])
    # χ²₅ has mean 5 and sd √10: the mean of 4,000 draws is within 5 ± 0.2 (4 standard errors).
    assert abs(s.mean() - 5.0) < 0.2
    # Its 5 % tail: 4,000 draws put the share within 5 % ± 1.4 % (4 binomial standard errors).
    assert abs(np.mean(s > 11.0705) - 0.05) < 0.014  # 11.0705 = χ²₅'s 95th percentile
    assert 0 < p.min() and p.max() < 1


def test_partial_sums_merge_in_any_order_to_the_whole():
    v = _uniform_axes(1, 300, seed=3)[0]
    whole = axial_test(v)
    parts = [axial_partial(v[a:b]) for a, b in ((0, 7), (7, 150), (150, 300))]
    for merged in (merge_axial(parts), merge_axial(parts[::-1])):
        got = bingham_test(merged)
        assert got["n"] == 300
        assert got["statistic"] == pytest.approx(whole["statistic"], rel=1e-12)
        np.testing.assert_allclose(got["eigenvalues"], whole["eigenvalues"], atol=1e-14)


def test_axes_along_z_of_either_sign_reject_and_point_to_z():
    rng = np.random.default_rng(0)
    v = np.tile([0.0, 0.0, 1.0], (40, 1)) * rng.choice([-1.0, 1.0], size=(40, 1))  # axial: v and -v alike
    v[:, :2] += rng.normal(scale=0.05, size=(40, 2))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    out = axial_test(v)
    assert out["pvalue"] < 1e-20 and "skipped" not in out
    np.testing.assert_allclose(np.abs(out["preferred_direction"]), [0, 0, 1], atol=0.05)
    assert out["preferred_direction"][2] > 0  # signed: the largest component is positive
    assert out["eigenvalues"][0] > 0.99 and out["eigenvalues"] == sorted(out["eigenvalues"], reverse=True)


def test_the_statistic_is_rotation_invariant():
    v = _uniform_axes(1, 50, seed=4)[0]
    Q = random_rotations(1, 9)[0]
    assert axial_test(v @ Q.T)["statistic"] == pytest.approx(axial_test(v)["statistic"], rel=1e-10)


def test_too_few_axes_are_reported_but_marked_and_none_have_no_figures():
    few = axial_test(_uniform_axes(1, MIN_AXES - 1, seed=5)[0])
    assert few["n"] == MIN_AXES - 1 and few["statistic"] is not None and "needs at least" in few["skipped"]
    empty = bingham_test(merge_axial([]))
    assert empty["n"] == 0 and empty["pvalue"] is None and "no molecule" in empty["skipped"]


def test_defined_axes_take_the_named_row_of_each_frame():
    R = random_rotations(4, 1)
    out = defined_axes(R, np.array([1, 0, 3, 0], dtype=np.int8))
    np.testing.assert_array_equal(out, np.stack([R[0, 0], R[2, 2]]))


def test_terms_sum_to_the_partial_sums():
    v = _uniform_axes(1, 25, seed=6)[0]
    got = sums_from_terms(axial_terms(v).sum(axis=0))
    want = axial_partial(v)
    assert got["n"] == want["n"] == 25 and np.allclose(got["outer"], want["outer"], atol=1e-13)
