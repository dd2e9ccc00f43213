"""Bingham's axial test: its χ²₅ law by simulation, the merge of partial sums, and known answers."""

import numpy as np
import pytest

from orientscope.science.axial import (
    AXIS_RESOLUTION,
    MIN_AXES,
    STRONG_AXIAL_KL,
    _mean_t,
    axial_partial,
    axial_size,
    axial_terms,
    axial_test,
    bingham_test,
    defined_axes,
    merge_axial,
    size_of,
    sums_from_terms,
    watson_axes,
    watson_kl,
)
from orientscope.science.rotations import random_rotations
from orientscope.science.verdict import alignment_verdict


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
    np.testing.assert_allclose(got["quartic"], want["quartic"], atol=1e-13)
    # Sums written before the quartic terms (10 columns) still read, without them.
    assert "quartic" not in sums_from_terms(axial_terms(v).sum(axis=0)[:10])


# ----------------------------------------------------------------- the effect size: KL of the fitted Watson law
def _watson_axes(kappa: float, n: int, seed: int) -> np.ndarray:
    return watson_axes(kappa, n, np.random.default_rng(seed))


def test_the_watson_kl_is_zero_at_uniform_and_quadratic_near_it():
    assert watson_kl(1.0 / 3.0) == 0.0
    # Near uniform the KL of an exponential family is half the squared shift over the variance of t (4/45).
    for t in (0.32, 0.34, 0.35):
        assert watson_kl(t) == pytest.approx(45.0 / 8.0 * (t - 1.0 / 3.0) ** 2, rel=0.05)
    ts = np.linspace(1.0 / 3.0, 1.0, 30)
    assert np.all(np.diff([watson_kl(t) for t in ts]) > 0)  # monotone: a bound in t is a bound in KL


def test_axes_all_along_z_get_the_largest_size_and_read_strong():
    v = np.zeros((100, 3))
    v[:, 2] = np.where(np.arange(100) % 3, 1.0, -1.0)  # either sign: one axis
    size = axial_test(v)["size"]
    assert size["shape"] == "bipolar"
    assert size["value"] == pytest.approx(watson_kl(1.0 - AXIS_RESOLUTION)) and size["value"] > 8.5
    assert size["ci95"][0] == pytest.approx(size["value"]) and size["ci95"][0] > STRONG_AXIAL_KL
    # Every axis in the xy-plane: the other extreme, a girdle.
    flat = _uniform_axes(1, 200, seed=9)[0] * [1.0, 1.0, 0.0]
    flat = axial_test(flat / np.linalg.norm(flat, axis=1, keepdims=True))
    assert flat["size"]["shape"] == "girdle" and flat["size"]["value"] == pytest.approx(watson_kl(0.0))


def test_uniform_axes_size_about_zero_and_their_interval_reaches_zero():
    covered = 0
    for v in _uniform_axes(200, 100, seed=12):
        size = axial_test(v)["size"]
        covered += size["ci95"][0] == 0.0
        assert size["ci95"][0] <= size["value"] <= size["ci95"][1]
    # The interval reaches 0 exactly when Bingham's p >= 0.05: 95 % of uniform sets, 200 draws ± 4 se.
    assert covered >= 0.95 * 200 - 4 * np.sqrt(200 * 0.05 * 0.95)
    assert axial_test(_uniform_axes(1, 5000, seed=13)[0])["size"]["value"] < 0.005


@pytest.mark.parametrize("kappa", [3.0, 10.0, -5.0])
def test_a_watson_sample_of_known_kappa_holds_its_kl_in_the_interval(kappa):
    truth = watson_kl(_mean_t(kappa))
    intervals = [
        axial_size(axial_test(_watson_axes(kappa, 200, seed))["eigenvalues"], 200)["ci95"] for seed in range(40)
    ]
    hits = sum(low <= truth <= high for low, high in intervals)
    assert hits >= 34  # 95 % coverage: 40 draws put at least 34 inside (P(fewer) < 0.5 %)
    size = axial_test(_watson_axes(kappa, 2000, seed=99))["size"]
    assert size["shape"] == ("bipolar" if kappa > 0 else "girdle")
    assert size["value"] == pytest.approx(truth, rel=0.1)


def test_the_size_is_rotation_invariant_and_antipodally_symmetric():
    v = _watson_axes(4.0, 150, seed=21)
    base = axial_test(v)["size"]
    for q in random_rotations(3, seed=22):
        turned = axial_test(v @ q.T)["size"]
        assert turned["value"] == pytest.approx(base["value"], rel=1e-9)
        np.testing.assert_allclose(turned["ci95"], base["ci95"], rtol=1e-7)
    flips = np.where(np.random.default_rng(23).random(150) < 0.5, -1.0, 1.0)[:, None]
    flipped = axial_test(v * flips)["size"]
    assert flipped["value"] == pytest.approx(base["value"], rel=1e-12)
    np.testing.assert_allclose(flipped["ci95"], base["ci95"], rtol=1e-9)


def test_a_result_stored_without_a_size_gets_it_from_its_eigenvalues():
    test = axial_test(_watson_axes(4.0, 150, seed=31))
    old = {k: v for k, v in test.items() if k != "size"}
    assert size_of(old) == axial_size(test["eigenvalues"], 150, test["pvalue"])  # the fitted law's spread only
    assert size_of(old)["value"] == test["size"]["value"] and size_of(test) == test["size"]


def test_a_mixture_of_aligned_and_uniform_axes_gets_its_own_wider_spread():
    """Half the axes along z, half uniform: not a Watson law, and (μ·v)² spreads more than the fitted law says.
    The set's own fourth moments widen the interval, so it holds the population's Watson KL."""
    truth = watson_kl(0.5 + 0.5 / 3)  # the population T's largest eigenvalue
    hits = 0
    for seed in range(40):
        v = _uniform_axes(1, 200, seed=100 + seed)[0]
        v[:100] = [0.0, 0.0, 1.0]
        test = axial_test(v)
        fitted_only = axial_size(test["eigenvalues"], 200, test["pvalue"])["ci95"]
        low, high = test["size"]["ci95"]
        assert low <= fitted_only[0] and high >= fitted_only[1]  # only ever wider
        hits += low <= truth <= high
    assert hits >= 34


def test_the_verdict_of_axes_along_z_is_aligned_strong_citing_the_axial_size():
    """The re-check's repro: only Bingham's test can reject (100 symmetric tops along z), and T's eigenvalues
    are 0.99, 0.00, 0.00: the verdict reads strong, not uncertain, and cites the axes' KL against its bar."""
    tilt = np.random.default_rng(41).normal(scale=0.05, size=(100, 2))
    v = np.column_stack([tilt, np.ones(100)])
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    axial = axial_test(v)
    assert axial["eigenvalues"][0] > 0.99
    verdict = alignment_verdict(100, axial=axial)
    assert verdict["code"] == "aligned" and verdict["effect"] == "strong"
    assert verdict["badge"] == "Aligned — strong effect"
    row = verdict["evidence"][0]
    assert row["size"]["measure"] == "axial KL" and row["size"]["reading"] == "strong"
    assert "The effect is strong: axial KL " in verdict["text"] and "lies above its bar of 0.20" in verdict["text"]
    # Haar-rotated copies of the same axes: not detected, and their size's interval reaches 0.
    control = axial_test(np.einsum("nij,nj->ni", random_rotations(100, seed=42), v))
    assert alignment_verdict(100, axial=control)["code"] == "not_detected"
    assert control["size"]["value"] < STRONG_AXIAL_KL
