"""The orientation-only regression over shards: fitted on the models stage's training subsample,
every molecule scored shard by shard.

1. :class:`RegressionJob` (one per orientation set, stored poses and control)
   cross-fits the regressor on the subsample (``science.regression``'s folds
   and seeds): every training molecule gets its out-of-fold prediction and its
   training folds' mean (the baseline). It also fits one model on the whole
   subsample.
2. Per shard, :func:`regression_partial` predicts every other molecule with
   that model (baseline: the subsample's mean) and puts it in a group drawn by
   its global index, one of ``n_folds``; training molecules stay in their fold.
   The squared errors are summed per group in fixed global blocks
   (science/ordered_sums), so the merge gives the same bits for any cut.
3. :func:`regression_section` turns the merged sums into the report's rows:
   means over the groups, ``improvement_std`` their spread, the normalised
   columns divided by the variance over every molecule.

With a subsample of the whole set this is exactly ``orientation_regression`` on the arrays.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from orientscope.pipeline.engine import task_threads
from orientscope.science.counter_rng import uniforms
from orientscope.science.ordered_sums import block_partial, merge_block_partials
from orientscope.science.regression import (
    RegressionSettings,
    column_means,
    cross_fit_predictions,
    error_terms,
    fit_regressor,
    regression_summary,
)
from orientscope.store.atomic import atomic_write_bytes

REGRESSION = RegressionSettings()


def regression_rows(names, units: dict, frame_dependent, original: dict, control: dict) -> list[dict]:
    """The report's rows, one per property, from the scores of the stored poses and of the control."""
    rows = []
    for j, name in enumerate(names):
        rows.append({
            "property": str(name),
            "unit": units.get(name, ""),
            "frame_dependent": name in frame_dependent,
            **{key: float(values[j]) for key, values in original.items()},
            "control_improvement": float(control["improvement"][j]),
            "control_improvement_std": float(control["improvement_std"][j]),
        })  # fmt: skip
    return rows


@dataclass(frozen=True)
class RegressionJob:
    """Cross-fit and fit the regressor of one orientation set on the training subsample."""

    train_path: str  # npz: rotations (m, 9) and y (m, p) of the subsample, in global index order
    which: str
    seed: int
    out_path: str  # npz: out-of-fold pred, baseline, fold and fill; the fitted model (pickled) beside it
    fit_whole: bool = True  # False when the subsample is the whole set: no molecule is left to score
    columns: tuple[int, ...] | None = None  # the property columns regressed (the others are constant or missing)

    cost = 1  # relative to the classifier folds (see shard_models.FoldJob.cost)

    @property
    def model_path(self) -> str:
        return str(Path(self.out_path).with_suffix(".pkl"))

    def run(self) -> str:
        with np.load(self.train_path) as data:
            rotations, y = data[f"{self.which}:rotations"].reshape(-1, 3, 3), data["y"]
        threads = task_threads()  # 1 on an engine's worker, every core in process
        pred, baseline, fold = cross_fit_predictions(rotations, y, REGRESSION, self.seed, workers=threads)
        if self.fit_whole:
            model, fill = fit_regressor(rotations, y, REGRESSION, self.seed + REGRESSION.n_folds, workers=threads)
            atomic_write_bytes(Path(self.model_path), pickle.dumps(model), durable=False)
        else:
            fill = column_means(y)
        np.savez(self.out_path, pred=pred, baseline=baseline, fold=fold, fill=fill)
        return self.out_path


def score_group(seed: int, index: np.ndarray) -> np.ndarray:
    """(n,) the group of each molecule outside the subsample: a draw by global index, one of ``n_folds``."""
    u = uniforms(seed, "models:regression:group", index)[:, 0]
    return np.minimum((u * REGRESSION.n_folds).astype(np.int64), REGRESSION.n_folds - 1)


def regression_partial(
    fitted: RegressionJob,
    rotations: np.ndarray,
    y: np.ndarray,
    start: int,
    train_local: np.ndarray,
    train_slice: slice,
    scored: np.ndarray | None = None,
) -> dict:
    """One shard's ordered sums of :func:`error_terms` per group.

    Parameters
    ----------
    rotations : (n, 3, 3) frames of the shard's molecules in this orientation set
    y : (n, p) their properties (every numeric column; the job's ``columns`` are taken)
    start : global index of the shard's first molecule
    train_local : (m,) shard rows of the training molecules; ``train_slice`` their rows in the subsample
    scored : (n,) bool the molecules that count (those with a full frame), all if None; the others add nothing
    """
    if fitted.columns is not None:
        y = y[:, list(fitted.columns)]
    if scored is not None:
        y = np.where(np.asarray(scored, dtype=bool)[:, None], y, np.nan)  # a NaN target counts zero
    with np.load(fitted.out_path) as oof:
        fill = oof["fill"]
        pred = np.zeros(y.shape)
        baseline = np.broadcast_to(fill, y.shape).copy()
        group = score_group(fitted.seed, start + np.arange(len(y)))
        pred[train_local] = oof["pred"][train_slice]
        baseline[train_local] = oof["baseline"][train_slice]
        group[train_local] = oof["fold"][train_slice]
    rest = np.ones(len(y), dtype=bool) if scored is None else np.asarray(scored, dtype=bool).copy()
    rest[train_local] = False
    if rest.any():  # the molecules outside the subsample: the model fitted on all of it
        model = pickle.loads(Path(fitted.model_path).read_bytes())
        model.workers = task_threads()  # where this shard runs, not where the model was fitted
        pred[rest] = model.predict(rotations[rest]).reshape(int(rest.sum()), -1)
    centre = np.nan_to_num(fill)
    return block_partial(error_terms(y, pred, baseline, centre), group, REGRESSION.n_folds, start)


def regression_section(meta: dict, names: list[str], partials: dict, frame_dependent) -> list[dict]:
    """The report's regression rows from each orientation set's shard partials (in shard order)."""
    scores = {
        which: regression_summary(merge_block_partials(parts, REGRESSION.n_folds)) for which, parts in partials.items()
    }
    return regression_rows(
        names, meta.get("property_units", {}), frame_dependent, scores["original"], scores["control"]
    )
