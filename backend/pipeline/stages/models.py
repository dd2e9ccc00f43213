"""Stage "models": rotation-detection classifiers, per-molecule scores and
orientation-only property regression, for the stored poses and the control.

``classifier_score`` in the ``scores`` table is the cross-fitted P(stored
pose) of the ``frame+composition`` model: it does not depend on atom order,
so it rates the pose itself. The other feature sets' scores are kept as
``score_<feature set>`` columns.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from orientscope.core.dataset import frame_dependent_properties
from orientscope.core.progress import scaled
from orientscope.pipeline.stage import Stage, StageContext, StageOutput
from orientscope.science.classifiers import FEATURE_SETS, ClassifierSettings, detect_rotation
from orientscope.science.regression import RegressionSettings, orientation_regression
from orientscope.science.rotations import derived_seed, random_rotations, rotate_molecules
from orientscope.store import datasets as ds

SCORE_FEATURES = "frame+composition"
MIN_MOLECULES = 20
CLASSIFIER = ClassifierSettings()
REGRESSION = RegressionSettings()
NO_PROPERTIES = "the dataset has no numeric properties to predict"


def score_column(feature_set: str) -> str:
    return "score_" + feature_set.replace("+", "_").replace("-", "_")


def _scores_table(ids: np.ndarray, scores: dict[str, np.ndarray]) -> pd.DataFrame:
    data = {"id": np.asarray(ids).astype(str), "classifier_score": scores[SCORE_FEATURES]}
    data.update({score_column(fs): s for fs, s in scores.items()})
    return pd.DataFrame(data)


def _classify(ctx: StageContext, which: str, positions: np.ndarray, start: float, span: float):
    mols, params = ctx.mols, ctx.params
    negatives = random_rotations(mols.n_molecules, derived_seed(ctx.seed, f"models:{which}:negatives"))
    return detect_rotation(
        positions, mols.offsets, mols.atomic_numbers, ctx.frames(which), negatives,
        frame_method=params["frame"], sign_rule=params["sign"], settings=CLASSIFIER,
        seed=derived_seed(ctx.seed, f"models:{which}:classifier"),
        progress=scaled(ctx.progress, start, start + span, prefix=f"{which}: "),
    )  # fmt: skip


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


def _regression(ctx: StageContext) -> tuple[list[dict], str | None]:
    props = ctx.mols.properties.select_dtypes("number")
    if props.shape[1] == 0:
        return [], NO_PROPERTIES
    if ctx.mols.n_molecules < 2 * REGRESSION.n_neighbors:
        return [], f"needs at least {2 * REGRESSION.n_neighbors} molecules, got {ctx.mols.n_molecules}"
    seed = derived_seed(ctx.seed, "models:regression")
    y = props.to_numpy(np.float64)
    ctx.progress(0.85, "orientation-only regression")
    original = orientation_regression(ctx.frames("original").rotations, y, REGRESSION, seed)
    ctx.progress(0.93, "orientation-only regression (control)")
    control = orientation_regression(ctx.frames("control").rotations, y, REGRESSION, seed)
    frame_dependent = frame_dependent_properties(ds.read_meta(ctx.data_dir, ctx.dataset_id))
    return regression_rows(props.columns, ctx.mols.property_units, frame_dependent, original, control), None


def run(ctx: StageContext) -> StageOutput:
    mols = ctx.mols
    if mols.n_molecules < MIN_MOLECULES:
        return StageOutput(
            skipped=f"the rotation classifiers and the orientation-only regression need at least {MIN_MOLECULES} "
            f"molecules, got {mols.n_molecules}"
        )
    original = _classify(ctx, "original", mols.positions_angstrom, 0.0, 0.4)
    control_positions = rotate_molecules(mols.positions_angstrom, mols.offsets, ctx.control_rotations)
    control = _classify(ctx, "control", control_positions, 0.4, 0.4)
    regression, regression_skipped = _regression(ctx)
    settings = {
        "classifier": {**CLASSIFIER.as_dict(), "model": "HistGradientBoostingClassifier"},
        "feature_sets": list(FEATURE_SETS),
        "score_features": SCORE_FEATURES,
        "regression": REGRESSION.as_dict(),
        "seeds": {
            purpose: derived_seed(ctx.seed, f"models:{purpose}")
            for purpose in (
                "original:negatives",
                "original:classifier",
                "control:negatives",
                "control:classifier",
                "regression",
            )
        },  # fmt: skip
        "seed_rule": "derived_seed(seed, 'models:<purpose>')",
        "ci95": "molecule-level bootstrap percentile intervals, {accuracy: [lo, hi], auc: [lo, hi]}",
    }
    return StageOutput(
        report={"classifiers": original.metrics, "regression": regression},
        control={"classifiers": control.metrics},
        tables={
            "scores": _scores_table(mols.ids, original.scores),
            "control_scores": _scores_table(mols.ids, control.scores),
        },
        settings=settings,
        skipped_parts={"regression": regression_skipped} if regression_skipped else {},
    )


STAGE = Stage(
    "models", run, requires=("frames",),
    description="classifier scores (stored vs rotated pose) and orientation-only regression",
)  # fmt: skip
