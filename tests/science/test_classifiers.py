"""Rotation detection on constructed sets with known answers."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from orientscope.core.dataset import from_molecules
from orientscope.science.classifiers import (
    ORDER_PAIRS,
    ClassifierSettings,
    _BootstrapAUC,
    atom_order_directions,
    composition_features,
    detect_rotation,
    detection_metrics,
    grouped_folds,
    held_out_pvalue,
    pose_features,
)
from orientscope.science.frames import canonical_positions, compute_frames
from orientscope.science.rotations import random_rotations, rotate_molecules

FAST = ClassifierSettings(max_iter=40, max_leaf_nodes=15, n_folds=3, n_bootstrap=200)


def _random_molecules(n: int, seed: int):
    """Asymmetric random molecules (5-8 atoms), put into their canonical pose."""
    rng = np.random.default_rng(seed)
    mols = []
    for _ in range(n):
        k = int(rng.integers(5, 9))
        pos = rng.normal(size=(k, 3)) * [2.0, 1.2, 0.6]
        mols.append((rng.choice([1, 6, 7, 8], size=k), pos))
    ms = from_molecules(mols)
    frames = compute_frames(ms.positions_angstrom, ms.offsets)
    return ms.with_positions(canonical_positions(ms.positions_angstrom, ms.offsets, frames))


def _detect(ms, seed: int, feature_sets=("frame",)):
    frames = compute_frames(ms.positions_angstrom, ms.offsets, ms.atomic_numbers)
    negatives = random_rotations(ms.n_molecules, seed + 1)
    return detect_rotation(
        ms.positions_angstrom, ms.offsets, ms.atomic_numbers, frames, negatives,
        feature_sets=feature_sets, settings=FAST, seed=seed,
    )  # fmt: skip


def test_identical_poses_are_detected():
    ms = _random_molecules(150, seed=0)
    result = _detect(ms, seed=3, feature_sets=("frame", "atom-order"))
    for m in result.metrics:
        assert m["accuracy"] > 0.95, m
        assert m["auc"] > 0.97
        assert m["pvalue"] < 1e-10
        assert m["n_test"] == 300
        assert m["ci95"]["accuracy"][0] <= m["accuracy"] <= m["ci95"]["accuracy"][1]
    assert result.scores["frame"].shape == (150,)
    assert np.mean(result.scores["frame"] > 0.5) > 0.9


def test_uniformly_rotated_set_is_at_chance():
    ms = _random_molecules(300, seed=1)
    ms = ms.with_positions(rotate_molecules(ms.positions_angstrom, ms.offsets, random_rotations(300, 11)))
    result = _detect(ms, seed=5, feature_sets=("frame", "frame+composition", "atom-order"))
    for m in result.metrics:
        assert abs(m["accuracy"] - 0.5) < 0.07, m
        assert m["pvalue"] > 0.05 / 3, m  # not significant, Bonferroni over 3 feature sets


def test_the_pvalue_counts_only_the_given_fold():
    p1, p0 = np.r_[np.full(30, 0.9), np.full(60, 0.4)], np.full(90, 0.1)
    pooled = detection_metrics(p1, p0, n_bootstrap=10, seed=0)
    first = detection_metrics(p1, p0, n_bootstrap=10, seed=0, test_rows=np.arange(90) < 30)
    assert pooled["accuracy"] == first["accuracy"] and pooled["n_pvalue"] == 180 and first["n_pvalue"] == 60
    assert first["pvalue"] == pytest.approx(0.5**60)  # the first 30 molecules: every row right


def test_detection_metrics_known_answers():
    perfect = detection_metrics(np.full(50, 0.9), np.full(50, 0.1), n_bootstrap=100, seed=0)
    assert perfect["accuracy"] == 1.0 and perfect["auc"] == 1.0
    assert perfect["ci95"]["auc"] == [1.0, 1.0]
    tied = detection_metrics(np.full(50, 0.7), np.full(50, 0.7), n_bootstrap=100, seed=0)
    assert tied["accuracy"] == 0.5 and tied["auc"] == 0.5
    assert tied["pvalue"] > 0.5
    rng = np.random.default_rng(0)
    p1, p0 = rng.random(400) ** 0.7, rng.random(400)
    m = detection_metrics(p1, p0, n_bootstrap=300, seed=0)
    expected = roc_auc_score(np.r_[np.ones(400), np.zeros(400)], np.r_[p1, p0])
    assert m["auc"] == pytest.approx(expected)
    lo, hi = m["ci95"]["auc"]
    assert lo < expected < hi and hi - lo < 0.15


def test_bootstrap_auc_is_the_auc_of_the_resampled_rows():
    # Scores rounded to 0.05 so that stored and rotated copies tie often.
    rng = np.random.default_rng(1)
    p1, p0 = np.round(rng.random(300) ** 0.6 / 0.05) * 0.05, np.round(rng.random(300) / 0.05) * 0.05
    auc_of = _BootstrapAUC(p1, p0)
    labels = np.r_[np.ones(300), np.zeros(300)]
    assert auc_of(np.arange(300)) == pytest.approx(roc_auc_score(labels, np.r_[p1, p0]), abs=1e-12)
    for _ in range(5):
        draws = rng.integers(0, 300, 300)
        expected = roc_auc_score(labels, np.r_[p1[draws], p0[draws]])
        assert auc_of(draws) == pytest.approx(expected, abs=1e-12)


def test_composition_and_atom_order_features():
    water = ([8, 1, 1], [[0, 0, 0], [0.96, 0, 0], [0, 0.96, 0]])
    methane = ([6, 1, 1, 1, 1], [[0, 0, 0], [1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]])
    ms = from_molecules([water, methane, ([17, 1], [[0, 0, 0], [0, 0, 1.3]])])
    comp = composition_features(ms.atomic_numbers, ms.offsets)
    np.testing.assert_array_equal(comp, [[2, 0, 0, 1, 0, 0, 3], [4, 1, 0, 0, 0, 0, 5], [1, 0, 0, 0, 0, 1, 2]])
    d = atom_order_directions(ms.positions_angstrom, ms.offsets)
    assert d.shape == (3, 3 * len(ORDER_PAIRS))
    np.testing.assert_allclose(d[0, :3], [1, 0, 0])  # O -> H1
    assert ORDER_PAIRS[3] == (1, 2)
    np.testing.assert_allclose(d[0, 9:12], [-np.sqrt(0.5), np.sqrt(0.5), 0])  # H1 -> H2
    assert np.isnan(d[0, 6:9]).all() and np.isnan(d[0, 12:]).all()  # water has no 4th atom
    np.testing.assert_allclose(d[1, :3], np.ones(3) / np.sqrt(3))
    np.testing.assert_allclose(d[2, :3], [0, 0, 1])
    assert np.isnan(d[2, 3:]).all()


def test_features_of_a_rotated_pose_follow_the_rotation():
    ms = _random_molecules(20, seed=2)
    Q = random_rotations(20, 4)
    rotated = rotate_molecules(ms.positions_angstrom, ms.offsets, Q)
    comp = composition_features(ms.atomic_numbers, ms.offsets)
    f0 = compute_frames(ms.positions_angstrom, ms.offsets)
    f1 = compute_frames(rotated, ms.offsets)
    x0 = pose_features("atom-order", f0, comp, ms.positions_angstrom, ms.offsets)
    x1 = pose_features("atom-order", f1, comp, rotated, ms.offsets)
    np.testing.assert_allclose(x1[:, :9].reshape(-1, 3, 3), np.einsum("nij,nkj->nik", f0.rotations, Q), atol=1e-8)
    np.testing.assert_allclose(x1[:, 9:19], x0[:, 9:19])  # invariants unchanged
    np.testing.assert_allclose(x1[:, 19:22], np.einsum("nij,nj->ni", Q, x0[:, 19:22]), atol=1e-12)
    with pytest.raises(ValueError, match="feature set"):
        pose_features("bonds", f0, comp, ms.positions_angstrom, ms.offsets)


def test_grouped_folds_are_balanced_and_seeded():
    fold = grouped_folds(100, 3, seed=7)
    assert sorted(np.bincount(fold)) == [33, 33, 34]
    np.testing.assert_array_equal(fold, grouped_folds(100, 3, seed=7))
    assert (fold != grouped_folds(100, 3, seed=8)).any()


def test_a_feature_column_with_no_value_in_training_is_ignored_not_fatal():
    """Triatomics have no fourth atom, so their atom-order directions to it are all NaN: still a model."""
    from orientscope.science.classifiers import ClassifierSettings, fold_model

    rng = np.random.default_rng(0)
    empty = np.full((90, 1), np.nan)
    X_stored = np.hstack([rng.normal(1.0, 0.5, (90, 2)), empty])
    X_rotated = np.hstack([rng.normal(-1.0, 0.5, (90, 2)), empty])
    fold = np.arange(90) % 3
    model = fold_model(X_stored, X_rotated, fold, 0, ClassifierSettings(), seed=0)
    held_out = fold == 0
    assert model.predict_proba(X_stored[held_out])[:, 1].mean() > 0.8
    assert model.predict_proba(X_rotated[held_out])[:, 1].mean() < 0.2
    assert np.isnan(X_stored[:, 2]).all()  # the caller's arrays are left as they were


def test_a_model_too_small_to_split_is_flagged_constant():
    # min_samples_leaf = 20 of the shipped settings: 20 molecules (26 training rows in a fold) grow no split,
    # even on identical poses, so every held-out row gets one class; 200 identical poses are learned.
    settings = ClassifierSettings(n_bootstrap=50)
    for n, constant in ((20, True), (200, False)):
        ms = _random_molecules(n, 3)
        frames = compute_frames(ms.positions_angstrom, ms.offsets)
        rot = random_rotations(n, 9)
        (m,) = detect_rotation(
            ms.positions_angstrom,
            ms.offsets,
            ms.atomic_numbers,
            frames,
            rot,
            feature_sets=("frame",),
            settings=settings,
            seed=1,
        ).metrics
        assert m["constant"] is constant
        if constant:
            assert m["accuracy"] == 0.5


def test_the_held_out_pvalue_is_exact_under_the_null_and_reproducible():
    from scipy.stats import binom, binomtest

    rows, rng = 34, np.random.default_rng(0)
    counts = rng.binomial(rows, 0.5, size=20_000)
    p = np.array([held_out_pvalue(int(c), rows, seed) for seed, c in enumerate(counts)])
    # The plain test's size at 5 % is far below it with 34 rows; the randomised one holds it (binomial sd 0.15 %).
    plain = np.array([binomtest(int(c), rows, 0.5, alternative="greater").pvalue for c in counts[:2000]])
    assert np.mean(plain < 0.05) < 0.035
    assert abs(np.mean(p < 0.05) - 0.05) < 0.006 and abs(np.mean(p < 0.01) - 0.01) < 0.003
    c = 25
    assert binom.sf(c, rows, 0.5) <= held_out_pvalue(c, rows, 7) <= binom.sf(c - 1, rows, 0.5)
    assert held_out_pvalue(c, rows, 7) == held_out_pvalue(c, rows, 7)
