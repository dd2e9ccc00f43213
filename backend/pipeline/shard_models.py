"""The models stage over shards: classifiers and the orientation-only regression (shard_regression.py)
trained on a seeded subsample, every molecule scored per shard.

1. The training subsample: of the molecules with a full frame (in the stored
   poses and in the control: a molecule with no orientation or only an axis has
   no SO(3) pose to classify), the ``TRAIN_MOLECULES`` with the smallest
   ``(seed, "models:train")`` draws (all of them for smaller sets). The others
   get no score (NaN) and stay out of the regression's sums.
2. Per shard, a task computes the subsample's features for the stored pose and
   for a negative copy turned by ``haar_rotations(seed, "models:<which>:negatives", index)``.
3. One task per fold of each (orientation set, feature set) fits the fold's
   model on the other folds of the subsample (``science.classifiers``' grouped
   folds and seeds), and returns its out-of-fold
   P(stored pose). The costliest folds go first, so the workers finish together.
4. One pass computes, in parallel, the metrics and bootstrap of each
   out-of-fold set and, per shard, the score of every
   molecule's stored pose: training molecules keep their out-of-fold score
   (cross-fitting); every other molecule is scored by one fold model, picked by
   a counter-based draw on its global index (no extra fit on the whole
   subsample: that fit on all rows cost half as much again as the three folds).

Tasks read and write the store themselves; they carry paths, parameters and
the (small) out-of-fold scores of their own shard.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from orientscope.core.dataset import frame_dependent_properties
from orientscope.pipeline.depends import depends_on
from orientscope.pipeline.engine import Engine
from orientscope.pipeline.frames_table import frames_from_table
from orientscope.pipeline.shard_regression import REGRESSION, RegressionJob, regression_partial, regression_section
from orientscope.pipeline.shard_stages import WHICH, ShardJob, full_frames
from orientscope.pipeline.stage import StageOutput
from orientscope.science.classifiers import (
    CLASSIFIERS_KEY,
    FEATURE_SETS,
    ClassifierSettings,
    composition_features,
    detection_metrics,
    fold_model,
    grouped_folds,
    pose_features,
)
from orientscope.science.counter_rng import haar_rotations, subsample, uniforms
from orientscope.science.frames import compute_frames
from orientscope.science.regression import (
    LEFT_OUT_KEY,
    REGRESSION_KEY,
    column_ranges,
    left_out_properties,
    merge_column_ranges,
)
from orientscope.science.rotations import derived_seed, rotate_molecules
from orientscope.store.atomic import atomic_write_bytes
from orientscope.store.datasets import read_meta
from orientscope.store.shards import read_shard, read_shard_table, write_shard_table

TRAIN_MOLECULES = 200_000
MIN_MOLECULES = 20
# ``classifier_score`` is the score of this feature set: it does not depend on atom order, so it rates the pose.
SCORE_FEATURES = "frame+composition"
CLASSIFIER = ClassifierSettings()
NO_PROPERTIES = "the dataset has no numeric properties to predict"
ALL_LEFT_OUT = "every numeric property is constant or missing: there is nothing to predict"


def score_column(feature_set: str) -> str:
    return "score_" + feature_set.replace("+", "_").replace("-", "_")


def training_rows(full_index: np.ndarray, seed: int, size: int = TRAIN_MOLECULES) -> np.ndarray:
    """Sorted global indices of the training subsample, drawn from ``full_index`` (the molecules with a full frame)."""
    return subsample(seed, "models:train", full_index, size)


def full_in_both(job: ShardJob) -> np.ndarray:
    """(n,) bool: the shard's molecules with a full frame in the stored poses and in the control."""
    return full_frames(job, "original") & full_frames(job, "control")


@depends_on()
def full_rows(job: ShardJob) -> np.ndarray:
    """Global indices of the shard's molecules with a full frame in both orientation sets."""
    return job.ref.index[full_in_both(job)]


def _poses(job: ShardJob, which: str, rows: np.ndarray | None, mols=None):
    """(molecules, frames, global indices) of the shard's rows (all if None) in the pose ``which``
    (stored or control copy); ``mols``: the shard if already read."""
    if mols is None:
        mols = read_shard(job.ref, read_meta(Path(job.data_dir), job.dataset_id))
    local = np.arange(mols.n_molecules) if rows is None else np.asarray(rows, dtype=np.int64) - job.ref.start
    mols = mols.subset(local)
    if which == "control":
        turn = haar_rotations(job.seed, "control", job.ref.start + local)
        mols = mols.with_positions(rotate_molecules(mols.positions_angstrom, mols.offsets, turn))
    table = read_shard_table(Path(job.result_dir), "frames", which, job.ref.number).to_pandas()
    return mols, frames_from_table(table.iloc[local].reset_index(drop=True)), job.ref.start + local


def _features(job: ShardJob, which: str, rows: np.ndarray | None, negatives: bool, mols=None) -> dict:
    mols, frames, index = _poses(job, which, rows, mols)
    composition = composition_features(mols.atomic_numbers, mols.offsets)
    pos, off = mols.positions_angstrom, mols.offsets
    out = {fs: [pose_features(fs, frames, composition, pos, off)] for fs in FEATURE_SETS}
    if negatives:
        turn = haar_rotations(job.seed, f"models:{which}:negatives", index)
        turned = rotate_molecules(pos, off, turn)
        kw = {"method": job.params["frame"], "sign_rule": job.params["sign"]}
        turned_frames = compute_frames(turned, off, mols.atomic_numbers, **kw)
        for fs in FEATURE_SETS:
            out[fs].append(pose_features(fs, turned_frames, composition, turned, off))
    return out


@dataclass(frozen=True)
class FeatureJob:
    shard: ShardJob
    rows: np.ndarray  # global indices of this shard's training molecules


@depends_on("FEATURE_SETS")
def training_features(job: FeatureJob) -> dict:
    """{which: {feature set: (X_stored, X_negative)}, "y": (m, p) properties} of this shard's training molecules."""
    mols = read_shard(job.shard.ref, read_meta(Path(job.shard.data_dir), job.shard.dataset_id))
    out = {which: _features(job.shard, which, job.rows, negatives=True, mols=mols) for which in WHICH}
    y = _properties(mols)
    out["y"] = y[np.asarray(job.rows, dtype=np.int64) - job.shard.ref.start]
    out["properties"] = list(mols.properties.select_dtypes("number").columns)
    out["ranges"] = column_ranges(y)  # over every molecule of the shard: is a property constant or missing?
    return out


def _properties(mols) -> np.ndarray:
    """(n, p) the numeric properties: every numeric column of the molecules table."""
    return mols.properties.select_dtypes("number").to_numpy(np.float64)


@dataclass(frozen=True)
class FoldJob:
    """One fold of one (orientation set, feature set): its model is fitted on the other folds."""

    features_path: str
    which: str
    feature_set: str
    seed: int
    fold: int
    model_path: str

    @property
    def cost(self) -> int:
        """Relative fit cost (features per row; the control's fits stop early): larger jobs go first."""
        dims = {"frame": 1, "frame+composition": 2, "atom-order": 4}[self.feature_set]
        return dims * (2 if self.which == "original" else 1)

    def run(self) -> tuple[np.ndarray, np.ndarray]:
        return fit_fold(self)


def fit_fold(job: FoldJob) -> tuple[np.ndarray, np.ndarray]:
    """Fit and store the fold's model; its out-of-fold P(stored pose) of the fold's stored and rotated copies."""
    with np.load(job.features_path) as data:
        X_orig, X_rot = data[f"{job.feature_set}:stored"], data[f"{job.feature_set}:negative"]
    fold = grouped_folds(len(X_orig), CLASSIFIER.n_folds, job.seed)
    model = fold_model(X_orig, X_rot, fold, job.fold, CLASSIFIER, job.seed)
    test = fold == job.fold
    with threadpool_limits(limits=CLASSIFIER.n_threads, user_api="openmp"):
        p_orig, p_rot = model.predict_proba(X_orig[test])[:, 1], model.predict_proba(X_rot[test])[:, 1]
    atomic_write_bytes(Path(job.model_path), pickle.dumps(model), durable=False)
    return p_orig, p_rot


@dataclass(frozen=True)
class MetricsJob:
    oof_path: str
    feature_set: str
    seed: int
    fold_seed: int  # the classifier's: its first fold's molecules carry the p-value (see detection_metrics)

    def run(self) -> dict:
        with np.load(self.oof_path) as data:
            p_orig, p_rot = data[f"{self.feature_set}:stored"], data[f"{self.feature_set}:negative"]
        first_fold = grouped_folds(len(p_orig), CLASSIFIER.n_folds, self.fold_seed) == 0
        metrics = detection_metrics(p_orig, p_rot, CLASSIFIER.n_bootstrap, self.seed, first_fold)
        return {"features": self.feature_set, **metrics}


def score_fold(seed: int, which: str, index: np.ndarray) -> np.ndarray:
    """(n,) the fold model that scores each molecule outside the training subsample: a draw by global index."""
    u = uniforms(seed, f"models:{which}:score-fold", index)[:, 0]
    return np.minimum((u * CLASSIFIER.n_folds).astype(np.int64), CLASSIFIER.n_folds - 1)


@dataclass(frozen=True)
class ScoreJob:
    shard: ShardJob
    model_paths: dict  # which -> feature set -> pickled model per fold
    train_rows: np.ndarray  # global indices of this shard's training molecules
    train_scores: dict  # which -> feature set -> their out-of-fold scores
    regression: dict | None = None  # which -> fitted RegressionJob (None: no properties)
    train_slice: slice | None = None  # this shard's training molecules' rows in the subsample

    def run(self) -> dict:
        """Write the shard's score tables (cross-fitted scores for training molecules); the regression's sums."""
        job = self.shard
        mols = read_shard(job.ref, read_meta(Path(job.data_dir), job.dataset_id))
        in_train = self.train_rows - job.ref.start
        full = full_in_both(job)
        rest = full.copy()  # the molecules with a full frame outside the training subsample
        rest[in_train] = False
        # Only the molecules outside the training subsample need features and a fold model's score:
        # the others keep their out-of-fold score (all of a set below TRAIN_MOLECULES).
        rest_rows = job.ref.start + np.flatnonzero(rest)
        regression = {}
        for which in WHICH:
            features = _features(job, which, rest_rows, negatives=False, mols=mols) if rest.any() else None
            scores = {}
            for fs in FEATURE_SETS:
                p = np.full(mols.n_molecules, np.nan)  # no score without a full frame
                p[in_train] = self.train_scores[which][fs]
                if features is not None:
                    p[rest] = _fold_scores(self.model_paths[which][fs], features[fs][0], job.seed, which, rest_rows)
                scores[fs] = p
            table = {"id": np.asarray(mols.ids).astype(str), "classifier_score": scores[SCORE_FEATURES]}
            table.update({score_column(fs): s for fs, s in scores.items()})
            name = "scores" if which == "original" else "control_scores"
            write_shard_table(Path(job.result_dir), "models", name, job.ref.number, pd.DataFrame(table))
            if self.regression:
                frames = read_shard_table(Path(job.result_dir), "frames", which, job.ref.number).to_pandas()
                regression[which] = regression_partial(
                    self.regression[which], frames_from_table(frames).rotations, _properties(mols), job.ref.start,
                    in_train, self.train_slice, full,
                )  # fmt: skip
        return {REGRESSION_KEY: regression}


def _fold_scores(model_paths: list[str], X: np.ndarray, seed: int, which: str, index: np.ndarray) -> np.ndarray:
    """P(stored pose) of the rows ``X`` (global indices ``index``), each from the fold model score_fold picks."""
    fold = score_fold(seed, which, index)
    p = np.empty(len(X))
    with threadpool_limits(limits=CLASSIFIER.n_threads, user_api="openmp"):
        for k, path in enumerate(model_paths):
            rows = fold == k
            if rows.any():  # predict_proba refuses zero rows
                p[rows] = pickle.loads(Path(path).read_bytes()).predict_proba(X[rows])[:, 1]
    return p


@depends_on("CLASSIFIER", "REGRESSION", "FEATURE_SETS", "SCORE_FEATURES")
def run_job(job) -> object:
    """Run a job object (metrics or scores): one engine pass can mix both kinds."""
    return job.run()


def _regression_jobs(
    folder: Path, parts: list[dict], seed: int, n_train: int, n: int, columns: list[int]
) -> tuple[dict, str | None]:
    """{which: RegressionJob} on the subsample's frames and properties ``columns`` (the others are constant or
    missing), or ({}, why it is skipped); ``n``: the set's size (a subsample that is the whole set needs no model
    for the others)."""
    y = np.concatenate([p["y"] for p in parts])
    if y.shape[1] == 0:
        return {}, NO_PROPERTIES
    if not columns:
        return {}, ALL_LEFT_OUT
    y = y[:, columns]
    if n_train < 2 * REGRESSION.n_neighbors:
        # n_train counts molecules with a full frame only: "got 44" beside a set of 60 must say so
        return {}, f"needs at least {2 * REGRESSION.n_neighbors} molecules with a full frame, got {n_train}"
    arrays = {f"{which}:rotations": np.concatenate([p[which]["frame"][0][:, :9] for p in parts]) for which in WHICH}
    np.savez(folder / "train-regression.npz", y=y, **arrays)
    reg_seed = derived_seed(seed, "models:regression")
    return {
        which: RegressionJob(
            str(folder / "train-regression.npz"),
            which,
            reg_seed,
            str(folder / f"reg-{which}.npz"),
            fit_whole=n_train < n,
            columns=tuple(columns),
        )
        for which in WHICH
    }, None


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    """The shards' rows in order; a set of one shard's array itself (no copy of its features)."""
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def _fold_jobs(folder: Path, parts: list[dict], seed: int) -> tuple[list[FoldJob], dict]:
    """The classifier folds on the subsample's features, and each orientation set's classifier seed."""
    folds, clf_seed = [], {}
    for which in WHICH:
        arrays = {}
        for fs in FEATURE_SETS:
            arrays[f"{fs}:stored"] = _joined([p[which][fs][0] for p in parts])
            arrays[f"{fs}:negative"] = _joined([p[which][fs][1] for p in parts])
        np.savez(folder / f"train-{which}.npz", **arrays)
        clf_seed[which] = derived_seed(seed, f"models:{which}:classifier")
        folds += [
            FoldJob(str(folder / f"train-{which}.npz"), which, fs, clf_seed[which], k,
                    str(folder / f"model-{which}-{fs}-{k}.pkl"))
            for fs in FEATURE_SETS for k in range(CLASSIFIER.n_folds)
        ]  # fmt: skip
    return folds, clf_seed


def _out_of_fold(folder: Path, folds: list[FoldJob], fitted: list, clf_seed: dict, n_train: int) -> dict:
    """{which: {"<feature set>:stored" | ":negative": (n_train,)}} assembled from the folds (also saved)."""
    oof = {}
    for which in WHICH:
        fold_of = grouped_folds(n_train, CLASSIFIER.n_folds, clf_seed[which])
        arrays = {f"{fs}:{side}": np.empty(n_train) for fs in FEATURE_SETS for side in ("stored", "negative")}
        for f, (p_orig, p_rot) in zip(folds, fitted, strict=True):
            if f.which == which:
                arrays[f"{f.feature_set}:stored"][fold_of == f.fold] = p_orig
                arrays[f"{f.feature_set}:negative"][fold_of == f.fold] = p_rot
        oof[which] = arrays
        np.savez(folder / f"oof-{which}.npz", **arrays)
    return oof


def run_models(engine: Engine, jobs: list[ShardJob], params: dict, say) -> StageOutput:
    n_all = sum(j.ref.n_molecules for j in jobs)
    if n_all < MIN_MOLECULES:
        return StageOutput(
            skipped=f"the rotation classifiers and the orientation-only regression need at least {MIN_MOLECULES} "
            f"molecules, got {n_all}"
        )
    full_index = np.concatenate(engine.map(full_rows, jobs, say("molecules with a full frame:", 0.0, 0.02)))
    n = len(full_index)
    if n < MIN_MOLECULES:
        return StageOutput(
            skipped=f"the rotation classifiers and the orientation-only regression need at least {MIN_MOLECULES} "
            f"molecules with a full frame, got {n} of {n_all} (molecules with no orientation or only an axis "
            "have no SO(3) pose)"
        )
    seed = int(params["seed"])
    meta = read_meta(Path(jobs[0].data_dir), jobs[0].dataset_id)
    train = training_rows(full_index, seed, TRAIN_MOLECULES)
    del full_index
    per_shard = [train[(train >= j.ref.start) & (train < j.ref.stop)] for j in jobs]
    parts = engine.map(training_features, [FeatureJob(j, r) for j, r in zip(jobs, per_shard, strict=True)],
                       say("training features:", 0.02, 0.1))  # fmt: skip
    folder = Path(jobs[0].result_dir) / "models"
    folder.mkdir(parents=True, exist_ok=True)
    names = list(parts[0]["properties"])  # the columns of y, in the order every shard reads them
    left_out = left_out_properties(names, merge_column_ranges([p["ranges"] for p in parts]))
    columns = [j for j, name in enumerate(names) if name not in {e["property"] for e in left_out}]
    folds, clf_seed = _fold_jobs(folder, parts, seed)
    regression, regression_skipped = _regression_jobs(folder, parts, seed, len(train), n, columns)
    del parts
    # One task per classifier fold and per regression, the costliest first, so that the workers finish together.
    fits = sorted([*folds, *regression.values()], key=lambda f: -f.cost)
    fitted = dict(zip(fits, engine.map(run_job, fits, say("classifier folds, regression:", 0.1, 0.75)), strict=True))
    oof = _out_of_fold(folder, folds, [fitted[f] for f in folds], clf_seed, len(train))
    bounds = np.cumsum([0, *[len(r) for r in per_shard]])
    models = {w: {fs: [str(folder / f"model-{w}-{fs}-{k}.pkl") for k in range(CLASSIFIER.n_folds)]
                  for fs in FEATURE_SETS} for w in WHICH}  # fmt: skip
    metric_jobs = [
        MetricsJob(str(folder / f"oof-{which}.npz"), fs, clf_seed[which] + i, clf_seed[which])
        for which in WHICH for i, fs in enumerate(FEATURE_SETS)
    ]  # fmt: skip
    scoring = [
        ScoreJob(j, models, per_shard[k],
                 {w: {fs: oof[w][f"{fs}:stored"][bounds[k] : bounds[k + 1]] for fs in FEATURE_SETS} for w in WHICH},
                 regression or None, slice(int(bounds[k]), int(bounds[k + 1])))
        for k, j in enumerate(jobs)
    ]  # fmt: skip
    done = engine.map(run_job, [*metric_jobs, *scoring], say("metrics and scores of every molecule:", 0.75, 1.0))
    for path in folder.glob("*.npz"):
        path.unlink(missing_ok=True)
    for path in folder.glob("reg-*.pkl"):
        path.unlink(missing_ok=True)
    per_set = len(FEATURE_SETS)
    metrics = {which: done[i * per_set : (i + 1) * per_set] for i, which in enumerate(WHICH)}
    rows = []
    if regression:
        partials = {which: [d[REGRESSION_KEY][which] for d in done[len(metric_jobs) :]] for which in WHICH}
        rows = regression_section(meta, [names[j] for j in columns], partials, frame_dependent_properties(meta))
    return StageOutput(
        report={CLASSIFIERS_KEY: metrics["original"], REGRESSION_KEY: rows, LEFT_OUT_KEY: left_out},
        control={CLASSIFIERS_KEY: metrics["control"]},
        settings={
            "classifier": {**CLASSIFIER.as_dict(), "model": "HistGradientBoostingClassifier"},
            "feature_sets": list(FEATURE_SETS),
            "score_features": SCORE_FEATURES,
            REGRESSION_KEY: REGRESSION.as_dict(),
            "training_subsample": int(len(train)),
            "molecules_with_full_frames": int(n),
            "training_rule": f"of the molecules with a full frame (stored and control), the {TRAIN_MOLECULES:,} "
            "with the smallest (seed, 'models:train') draws; the others get no score",
            "negatives": "counter-based: haar_rotations(seed, 'models:<which>:negatives', global index)",
            "metrics": "out-of-fold (cross-fitted) over the training subsample; molecule-level bootstrap CI",
            "scores": "training molecules: out-of-fold; others: the model of fold "
            "floor(n_folds * uniforms(seed, 'models:<which>:score-fold', index))",
            "regression_scores": "over every molecule: training molecules out-of-fold (their fold is their group), "
            "others by the model fitted on the whole subsample (group: a draw on (seed, "
            "'models:regression:group', index)); means over the groups",
            "seed_rule": "derived_seed(seed, 'models:<which>:classifier'); regression: derived_seed(seed, "
            "'models:regression')",
        },
        skipped_parts={REGRESSION_KEY: regression_skipped} if regression_skipped else {},
    )
