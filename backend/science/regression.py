"""Orientation-only regression: how much of a property does the pose alone predict?

The only input is the canonical frame R. In a dataset whose poses are
uniformly random and independent of the molecule, nothing can be predicted
and the improvement over the mean predictor is 0.

The regressor is :class:`SO3NeighborsRegressor`: the mean property of the
``k`` geodesically nearest training orientations, shrunk towards the training
mean by a factor calibrated on leave-one-out predictions. It predicts every
property at once from one neighbour search (a gradient-boosted model per
property costs far more for a few points more improvement; see
``tests/bench/bench_models.py``), and the shrinkage keeps neighbour noise from
making the improvement negative when there is no signal (plain kNN with
k = 50 scores about -2 % on a random-pose control).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from backend.science.classifiers import grouped_folds
from backend.science.rotations import matrix_to_quaternion


class SO3NeighborsRegressor:
    """k-nearest-neighbour regression on rotations (multi-output), calibrated.

    Neighbours are geodesic: a KD-tree over unit quaternions holding both q
    and -q, whose chord distance is monotone in the rotation angle.

    Parameters
    ----------
    n_neighbors : k
    n_calibration : training rows (seeded sample) whose leave-one-out kNN
        predictions calibrate the shrinkage
    seed : seed of that sample

    Each output's prediction is ``mean + shrinkage * (knn_mean - mean)``;
    ``shrinkage_`` (p,) is the least-squares slope of the training targets on
    their leave-one-out kNN deviations, clipped to [0, 1]. It is ~0 where the
    orientation carries no signal, so the model falls back to the mean
    instead of adding neighbour noise, and it stays robust to heavy tails
    (a few extreme rotational constants) that would make raw kNN far worse
    than the mean.
    """

    def __init__(self, n_neighbors: int = 50, n_calibration: int = 20000, seed: int = 0):
        self.n_neighbors = n_neighbors
        self.n_calibration = n_calibration
        self.seed = seed

    @staticmethod
    def _quaternions(rotations: np.ndarray) -> np.ndarray:
        return matrix_to_quaternion(np.asarray(rotations, dtype=np.float64).reshape(-1, 3, 3))

    def fit(self, rotations: np.ndarray, y: np.ndarray) -> SO3NeighborsRegressor:
        """rotations : (n, 3, 3) or (n, 9); y : (n,) or (n, p)."""
        q = self._quaternions(rotations)
        y = np.asarray(y, dtype=np.float64)
        if len(q) <= self.n_neighbors:
            raise ValueError(f"need more than n_neighbors={self.n_neighbors} training rotations, got {len(q)}")
        self.tree_ = cKDTree(np.concatenate([q, -q]))
        self.y_ = y.reshape(len(q), -1)
        self.mean_ = self.y_.mean(axis=0)
        self.n_outputs_ = self.y_.shape[1]
        self._squeeze = y.ndim == 1
        rng = np.random.default_rng(self.seed)
        rows = rng.choice(len(q), size=min(self.n_calibration, len(q)), replace=False)
        # Leave-one-out: query one extra neighbour and drop the row itself.
        _, idx = self.tree_.query(q[rows], k=self.n_neighbors + 1, workers=-1)
        idx = idx % len(q)
        own = idx == rows[:, None]
        # Where the row is not among its own hits (duplicates), drop the farthest.
        own[~own.any(axis=1), -1] = True
        keep = idx[~own].reshape(len(rows), self.n_neighbors)
        dev = self.y_[keep].mean(axis=1) - self.mean_
        target = self.y_[rows] - self.mean_
        denom = np.sum(dev**2, axis=0)
        slope = np.sum(dev * target, axis=0) / np.where(denom > 0, denom, np.inf)
        self.shrinkage_ = np.clip(slope, 0.0, 1.0)
        return self

    def predict(self, rotations: np.ndarray) -> np.ndarray:
        """(m,) or (m, p) predictions for (m, 3, 3) rotations."""
        q = self._quaternions(rotations)
        _, idx = self.tree_.query(q, k=self.n_neighbors, workers=-1)
        idx = idx.reshape(len(q), -1) % len(self.y_)
        pred = self.mean_ + self.shrinkage_ * (self.y_[idx].mean(axis=1) - self.mean_)
        return pred[:, 0] if self._squeeze else pred


@dataclass(frozen=True)
class RegressionSettings:
    n_neighbors: int = 50
    n_calibration: int = 20000
    n_folds: int = 5

    def as_dict(self) -> dict:
        return {"model": "SO3NeighborsRegressor", **{k: getattr(self, k) for k in self.__dataclass_fields__}}


def orientation_regression(
    rotations: np.ndarray, y: np.ndarray, settings: RegressionSettings | None = None, seed: int = 0
) -> dict[str, np.ndarray]:
    """k-fold CV of predicting each property from the frame alone.

    Parameters
    ----------
    rotations : (n, 3, 3) canonical frames
    y : (n, p) properties in natural units (rows with NaN in a column are
        left out of that column's scores; they are imputed with the training
        mean for fitting)

    Returns
    -------
    dict of (p,) arrays, means over folds unless named ``*_std``:
    ``mse``, ``baseline_mse`` (predicting the training-fold mean), both in
    unit², ``improvement`` = 1 - mse / baseline_mse and ``improvement_std``,
    and ``mse_normalised`` / ``baseline_mse_normalised`` (divided by the
    property's variance over the whole set).
    """
    settings = settings or RegressionSettings()
    y = np.asarray(y, dtype=np.float64).reshape(len(rotations), -1)
    finite = np.isfinite(y)
    fold = grouped_folds(len(y), settings.n_folds, seed)
    mse, base = [], []
    for k in range(settings.n_folds):
        train, test = fold != k, fold == k
        fill = np.nanmean(np.where(finite[train], y[train], np.nan), axis=0)
        y_train = np.where(finite[train], y[train], fill)
        model = SO3NeighborsRegressor(settings.n_neighbors, settings.n_calibration, seed + k).fit(
            rotations[train], y_train
        )
        pred = model.predict(rotations[test])
        ok = finite[test]
        n_ok = np.maximum(ok.sum(axis=0), 1)
        y_test = np.where(ok, y[test], 0.0)
        mse.append(np.sum(ok * (pred - y_test) ** 2, axis=0) / n_ok)
        base.append(np.sum(ok * (fill - y_test) ** 2, axis=0) / n_ok)
    mse, base = np.array(mse), np.array(base)
    improvement = 1.0 - mse / np.where(base > 0, base, np.inf)
    variance = np.nanvar(y, axis=0)
    variance = np.where(variance > 0, variance, 1.0)
    return {
        "mse": mse.mean(axis=0),
        "baseline_mse": base.mean(axis=0),
        "improvement": improvement.mean(axis=0),
        "improvement_std": improvement.std(axis=0),
        "mse_normalised": mse.mean(axis=0) / variance,
        "baseline_mse_normalised": base.mean(axis=0) / variance,
    }
