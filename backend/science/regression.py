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
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from orientscope.core.numbers import format_number, format_percent, is_number
from orientscope.science.classifiers import grouped_folds
from orientscope.science.ordered_sums import ordered_sums
from orientscope.science.rotations import matrix_to_quaternion
from orientscope.science.so3_stats import nearest_orientations, orientation_points
from orientscope.science.statistic import ReportField, Statistic


class SO3NeighborsRegressor:
    """k-nearest-neighbour regression on rotations (multi-output), calibrated.

    Neighbours are geodesic, q and -q one rotation
    (:func:`orientscope.science.so3_stats.nearest_orientations`): the chord
    distance between unit quaternions is monotone in the rotation angle.

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

    def __init__(self, n_neighbors: int = 50, n_calibration: int = 20000, seed: int = 0, workers: int = -1):
        self.n_neighbors = n_neighbors
        self.n_calibration = n_calibration
        self.seed = seed
        self.workers = workers  # threads of the neighbour search (-1: all cores; 1 on a Dask worker)

    @staticmethod
    def _quaternions(rotations: np.ndarray) -> np.ndarray:
        return matrix_to_quaternion(np.asarray(rotations, dtype=np.float64).reshape(-1, 3, 3))

    def fit(self, rotations: np.ndarray, y: np.ndarray) -> SO3NeighborsRegressor:
        """rotations : (n, 3, 3) or (n, 9); y : (n,) or (n, p)."""
        q = self._quaternions(rotations)
        y = np.asarray(y, dtype=np.float64)
        if len(q) <= self.n_neighbors:
            raise ValueError(f"need more than n_neighbors={self.n_neighbors} training rotations, got {len(q)}")
        self.tree_ = cKDTree(orientation_points(q))
        self.y_ = y.reshape(len(q), -1)
        self.mean_ = self.y_.mean(axis=0)
        self.n_outputs_ = self.y_.shape[1]
        self._squeeze = y.ndim == 1
        rng = np.random.default_rng(self.seed)
        rows = rng.choice(len(q), size=min(self.n_calibration, len(q)), replace=False)
        # Leave-one-out: query one extra neighbour and drop the row itself.
        _, idx = nearest_orientations(self.tree_, q[rows], self.n_neighbors + 1, workers=self.workers)
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

    def predict(self, rotations: np.ndarray, chunk: int = 20000) -> np.ndarray:
        """(m,) or (m, p) predictions for (m, 3, 3) rotations, ``chunk`` rows at a time
        (the neighbours' targets take chunk * k * p floats)."""
        q = self._quaternions(rotations)
        pred = np.empty((len(q), self.n_outputs_))
        for lo in range(0, len(q), chunk):
            _, idx = nearest_orientations(self.tree_, q[lo : lo + chunk], self.n_neighbors, workers=self.workers)
            pred[lo : lo + chunk] = self.mean_ + self.shrinkage_ * (self.y_[idx].mean(axis=1) - self.mean_)
        return pred[:, 0] if self._squeeze else pred


@dataclass(frozen=True)
class RegressionSettings:
    n_neighbors: int = 50
    n_calibration: int = 20000
    n_folds: int = 5

    def as_dict(self) -> dict:
        return {"model": "SO3NeighborsRegressor", **{k: getattr(self, k) for k in self.__dataclass_fields__}}


def column_ranges(y: np.ndarray) -> np.ndarray:
    """(3, p) per property column: the count of finite values, their minimum and maximum (NaN if none).

    Partial results of row blocks merge with :func:`merge_column_ranges`, in any order.
    """
    y = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
    finite = np.isfinite(y)
    count = finite.sum(axis=0).astype(np.float64)
    with np.errstate(invalid="ignore"):
        low = np.where(count > 0, np.where(finite, y, np.inf).min(axis=0, initial=np.inf), np.nan)
        high = np.where(count > 0, np.where(finite, y, -np.inf).max(axis=0, initial=-np.inf), np.nan)
    return np.vstack([count, low, high])


def merge_column_ranges(parts: list[np.ndarray]) -> np.ndarray:
    """The :func:`column_ranges` of all rows from those of row blocks (associative and commutative)."""
    stacked = np.stack([np.asarray(p, dtype=np.float64) for p in parts])
    return np.vstack([stacked[:, 0].sum(axis=0), np.fmin.reduce(stacked[:, 1]), np.fmax.reduce(stacked[:, 2])])


def left_out_properties(names: list[str], ranges: np.ndarray) -> list[dict]:
    """The properties the orientation-only regression leaves out, and why: ``missing`` (no finite value) or
    ``constant`` (one value for every molecule that has one: nothing to predict, and a zero-variance
    baseline would read as a 100 % gain).

    ``ranges`` is (3, p) from :func:`column_ranges`. Each entry: ``property``, ``reason``, and ``value``
    (the constant's value, None when missing).
    """
    out = []
    for name, (count, low, high) in zip(names, np.asarray(ranges).T, strict=True):
        if count == 0:
            out.append({"property": str(name), "reason": "missing", "value": None})
        elif low == high:
            out.append({"property": str(name), "reason": "constant", "value": float(low)})
    return out


def column_means(y: np.ndarray) -> np.ndarray:
    """(p,) each column's mean over its finite values: the mean predictor's value, and the NaN fill."""
    return np.nanmean(np.where(np.isfinite(y), y, np.nan), axis=0)


def fit_regressor(
    rotations: np.ndarray, y: np.ndarray, settings: RegressionSettings, seed: int, workers: int = -1
) -> tuple[SO3NeighborsRegressor, np.ndarray]:
    """The regressor fitted on ``rotations`` (n, 3, 3) and ``y`` (n, p), NaNs imputed with the
    column mean, and that mean (p,) (the mean predictor's value)."""
    finite = np.isfinite(y)
    fill = column_means(y)
    model = SO3NeighborsRegressor(settings.n_neighbors, settings.n_calibration, seed, workers)
    return model.fit(rotations, np.where(finite, y, fill)), fill


def cross_fit_predictions(
    rotations: np.ndarray, y: np.ndarray, settings: RegressionSettings, seed: int, workers: int = -1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """k-fold out-of-fold predictions of each property from the frame alone.

    Parameters
    ----------
    rotations : (n, 3, 3) canonical frames
    y : (n, p) properties

    Returns
    -------
    pred : (n, p) each row predicted by the model of the folds it is not in
    baseline : (n, p) the mean predictor's value for the row (its training folds' mean)
    fold : (n,) the row's fold, from :func:`grouped_folds` (seed)
    """
    fold = grouped_folds(len(y), settings.n_folds, seed)
    pred, baseline = np.empty(y.shape), np.empty(y.shape)
    for k in range(settings.n_folds):
        train, test = fold != k, fold == k
        model, fill = fit_regressor(rotations[train], y[train], settings, seed + k, workers)
        pred[test] = model.predict(rotations[test]).reshape(-1, y.shape[1])
        baseline[test] = fill
    return pred, baseline, fold


def error_terms(y: np.ndarray, pred: np.ndarray, baseline: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """(n, 5 p) per-row terms whose sums over a group give its scores (see :func:`regression_summary`):
    finite count, squared error of ``pred`` and of ``baseline``, and y - centre and its square
    (for the variance; ``centre`` (p,) is any fixed value near the mean). NaN targets count zero."""
    ok = np.isfinite(y)
    y0 = np.where(ok, y, 0.0)
    d = np.where(ok, y - centre, 0.0)
    return np.hstack([ok.astype(np.float64), ok * (pred - y0) ** 2, ok * (baseline - y0) ** 2, d, d**2])


def regression_summary(sums: np.ndarray) -> dict[str, np.ndarray]:
    """The scores from the (n_groups, 5 p) sums of :func:`error_terms` per group (fold).

    Returns
    -------
    dict of (p,) arrays, means over groups unless named ``*_std``:
    ``mse``, ``baseline_mse`` (predicting the training folds' mean), both in
    unit², ``improvement`` = 1 - mse / baseline_mse and ``improvement_std``,
    and ``mse_normalised`` / ``baseline_mse_normalised`` (divided by the
    property's variance over all rows).
    """
    count, err, base, d, d2 = np.split(np.asarray(sums, dtype=np.float64), 5, axis=1)
    n_ok = np.maximum(count, 1)
    mse, base = err / n_ok, base / n_ok
    improvement = 1.0 - mse / np.where(base > 0, base, np.inf)
    total = np.maximum(count.sum(axis=0), 1)
    variance = d2.sum(axis=0) / total - (d.sum(axis=0) / total) ** 2
    variance = np.where(variance > 0, variance, 1.0)
    return {
        "mse": mse.mean(axis=0),
        "baseline_mse": base.mean(axis=0),
        "improvement": improvement.mean(axis=0),
        "improvement_std": improvement.std(axis=0),
        "mse_normalised": mse.mean(axis=0) / variance,
        "baseline_mse_normalised": base.mean(axis=0) / variance,
    }


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
    the scores of :func:`regression_summary`, one group per fold.
    """
    settings = settings or RegressionSettings()
    y = np.asarray(y, dtype=np.float64).reshape(len(rotations), -1)
    pred, baseline, fold = cross_fit_predictions(rotations, y, settings, seed)
    centre = np.nan_to_num(np.nanmean(np.where(np.isfinite(y), y, np.nan), axis=0))
    return regression_summary(ordered_sums(error_terms(y, pred, baseline, centre), fold, settings.n_folds))


# ----------------------------------------------------------------- the statistics this module declares
REGRESSION_KEY = "regression"
LEFT_OUT_KEY = "regression_left_out"
FRAME_DEPENDENT_NOTE = (
    "* lab-frame component: it changes with the orientation by definition, so a gain is expected, not a leak"
)


def regression_rows(report: dict) -> list[dict]:
    """The orientation-only regression per property, display-ready.

    Each row keeps the report's numbers and adds:

    - ``label``: property and unit, ``zpve (Hartree)``;
    - ``frame_dependent``: the property is a lab-frame component (e.g. alpha_xx), so it
      depends on the orientation by definition: flagged by the models stage, or declared
      in the dataset's metadata now (``frame_dependent_properties``, core/dataset);
    - ``error_text``: cross-validated MSE vs the mean baseline, as fractions of the
      property's variance (``0.781 vs 1.000 of variance``), readable whatever the unit;
    - ``gain``/``gain_text``: relative MSE reduction, ``+21.9 % ± 0.4``;
    - ``control_gain_text``: the same on the random-rotation control (about 0 %).
    """
    declared = set(report.get("frame_dependent_properties") or ())
    rows = []
    for r in report.get(REGRESSION_KEY) or []:
        unit = f" ({r['unit']})" if r.get("unit") else ""
        std = r.get("improvement_std")
        spread = f" ± {format_number(100 * std, '.1f')}" if is_number(std) else ""
        rows.append(
            {
                **r,
                "label": f"{r.get('property')}{unit}",
                "frame_dependent": bool(r.get("frame_dependent")) or r.get("property") in declared,
                "error_text": f"{format_number(r.get('mse_normalised'))} vs "
                f"{format_number(r.get('baseline_mse_normalised'))} of variance"
                if is_number(r.get("mse_normalised")) or is_number(r.get("baseline_mse_normalised"))
                else "–",
                "gain": r.get("improvement"),
                "gain_text": format_percent(r.get("improvement")) + spread,
                "control_gain_text": format_percent(r.get("control_improvement")),
            }
        )
    return rows


def _table_rows(report: dict) -> list[tuple[str, str, str, str]]:
    return [
        (r["label"] + (" *" if r["frame_dependent"] else ""), r["error_text"], r["gain_text"], r["control_gain_text"])
        for r in regression_rows(report)
    ]


def left_out_note(report: dict) -> str | None:
    """The sentence that names the properties the regression left out (constant or missing), if any."""
    left_out = report.get(LEFT_OUT_KEY) or []
    if not left_out:
        return None
    named = ", ".join(f"{e['property']} ({_left_out_reason(e)})" for e in left_out)
    return f"Left out of the regression, as there is nothing to predict: {named}."


def _left_out_reason(entry: dict) -> str:
    if entry.get("reason") == "constant":
        return f"constant: {format_number(entry.get('value'), '.6g')} for every molecule"
    return "no values" if entry.get("reason") == "missing" else str(entry.get("reason"))


def _notes(report: dict) -> list[str]:
    flagged = any(r["frame_dependent"] for r in regression_rows(report))
    note = left_out_note(report)
    return ([FRAME_DEPENDENT_NOTE] if flagged else []) + ([note] if note else [])


STATISTIC = Statistic(
    key=REGRESSION_KEY,
    title="orientation-only regression: how much of each property the pose alone predicts",
    stage="models",
    inputs=("the full frames and the numeric properties of every shard",),
    per_shard="pipeline.shard_regression:regression_partial",
    merge="pipeline.shard_regression:regression_section",
    fields=(
        ReportField(
            REGRESSION_KEY,
            list[dict[str, Any]],
            "One entry per property: property, unit, mse, baseline_mse, mse_normalised, improvement (± "
            "improvement_std), control_improvement, frame_dependent.",
        ),
    ),
    table="regression",
    rows=_table_rows,
    notes=_notes,
    has_control=False,
    tooltip="How much of each property's variance a model predicts from the orientation R alone "
    "(cross-validated, against predicting the mean). Near 0 % = the pose carries no information about it.",
)
LEFT_OUT_STATISTIC = Statistic(
    key=LEFT_OUT_KEY,
    title="the properties the regression left out, as there is nothing to predict",
    stage="models",
    inputs=("each shard's per-property ranges",),
    per_shard="science.regression:column_ranges",
    merge="science.regression:left_out_properties",
    fields=(
        ReportField(
            LEFT_OUT_KEY,
            list[dict[str, Any]],
            "Properties left out of the regression: property, reason (constant or missing), value.",
        ),
    ),
    has_control=False,
)
STATISTICS = (STATISTIC, LEFT_OUT_STATISTIC)
