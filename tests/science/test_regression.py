"""Orientation-only regression: planted signals are recovered, noise is not."""

from __future__ import annotations

import numpy as np
import pytest

from orientscope.science.regression import RegressionSettings, SO3NeighborsRegressor, orientation_regression
from orientscope.science.rotations import random_rotations

SETTINGS = RegressionSettings(n_neighbors=20, n_calibration=2000, n_folds=4)


@pytest.fixture(scope="module")
def rotations():
    return random_rotations(2000, seed=0)


def test_planted_orientation_property_is_recovered(rotations):
    rng = np.random.default_rng(1)
    planted = rotations[:, 0, 2] + 0.5 * rotations[:, 1, 1] + 0.1 * rng.normal(size=len(rotations))
    noise = rng.normal(size=len(rotations)) * 3.0 + 10.0
    r = orientation_regression(rotations, np.column_stack([planted, noise]), SETTINGS, seed=0)
    assert r["improvement"][0] > 0.8
    assert abs(r["improvement"][1]) < 0.01
    assert r["improvement_std"][0] < 0.05
    # Baseline MSE is the property's variance in natural units; normalised ~1.
    assert r["baseline_mse"][1] == pytest.approx(9.0, rel=0.1)
    assert r["baseline_mse_normalised"][1] == pytest.approx(1.0, rel=0.05)
    assert r["mse_normalised"][0] < 0.2


def test_heavy_tailed_noise_does_not_hurt(rotations):
    rng = np.random.default_rng(2)
    y = rng.standard_cauchy(len(rotations))
    r = orientation_regression(rotations, y, SETTINGS, seed=0)
    assert r["improvement"][0] > -0.01


def test_shrinkage_is_calibrated(rotations):
    rng = np.random.default_rng(3)
    y = np.column_stack([np.cos(3 * rotations[:, 2, 2]), rng.normal(size=len(rotations))])
    model = SO3NeighborsRegressor(n_neighbors=20, n_calibration=2000, seed=0).fit(rotations, y)
    assert model.shrinkage_[0] > 0.8
    assert model.shrinkage_[1] < 0.2
    assert model.predict(rotations[:5]).shape == (5, 2)
    single = SO3NeighborsRegressor(n_neighbors=20).fit(rotations, y[:, 0])
    assert single.predict(rotations[:5]).shape == (5,)
    with pytest.raises(ValueError, match="n_neighbors"):
        SO3NeighborsRegressor(n_neighbors=50).fit(rotations[:10], y[:10])


def test_missing_values_are_left_out(rotations):
    y = rotations[:, 0, 0].copy()
    y[::7] = np.nan
    r = orientation_regression(rotations, y, SETTINGS, seed=0)
    assert np.isfinite(r["mse"]).all() and r["improvement"][0] > 0.8
