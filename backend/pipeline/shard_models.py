"""The models stage over shards: classifiers trained on a seeded subsample, every molecule scored per shard.

1. The training subsample: the ``TRAIN_MOLECULES`` molecules with the smallest
   ``(seed, "models:train")`` draws (all of them for smaller sets).
2. Per shard, a task computes the subsample's features for the stored pose and
   for a negative copy turned by ``haar_rotations(seed, "models:<which>:negatives", index)``.
3. One task per (orientation set, feature set) cross-fits the classifier on the
   subsample exactly as the in-memory stage does (grouped folds, out-of-fold
   P(stored pose) for every training molecule, the same metrics and
   bootstrap), then fits one model on the whole subsample and stores it.
4. Per shard, a task scores every molecule's stored pose: training molecules
   keep their out-of-fold score (cross-fitting), the others get the full model's.

Tasks read and write the store themselves; they carry paths, parameters and
the (small) out-of-fold scores of their own shard.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from backend.pipeline.engine import Engine
from backend.pipeline.frames_table import frames_from_table
from backend.pipeline.shard_stages import WHICH, ShardJob
from backend.pipeline.stage import StageOutput
from backend.pipeline.stages.models import CLASSIFIER, SCORE_FEATURES, score_column
from backend.science.classifiers import (
    FEATURE_SETS,
    composition_features,
    cross_fit_scores,
    detection_metrics,
    pose_features,
)
from backend.science.counter_rng import haar_rotations, subsample
from backend.science.frames import compute_frames
from backend.science.rotations import derived_seed, rotate_molecules
from backend.store.datasets import read_meta
from backend.store.shards import read_shard, read_shard_table, write_shard_table

TRAIN_MOLECULES = 200_000
MIN_MOLECULES = 20


def training_rows(n_molecules: int, seed: int, size: int = TRAIN_MOLECULES) -> np.ndarray:
    """Sorted global indices of the training subsample."""
    return subsample(seed, "models:train", np.arange(n_molecules), size)


def _poses(job: ShardJob, which: str, rows: np.ndarray | None):
    """(molecules, frames) of the shard's rows (all if None) in the pose ``which`` (stored or control copy)."""
    mols = read_shard(job.ref, read_meta(Path(job.data_dir), job.dataset_id))
    local = np.arange(mols.n_molecules) if rows is None else np.asarray(rows, dtype=np.int64) - job.ref.start
    mols = mols.subset(local)
    if which == "control":
        turn = haar_rotations(job.seed, "control", job.ref.start + local)
        mols = mols.with_positions(rotate_molecules(mols.positions_angstrom, mols.offsets, turn))
    table = read_shard_table(Path(job.result_dir), "frames", which, job.ref.number).to_pandas()
    return mols, frames_from_table(table.iloc[local].reset_index(drop=True)), job.ref.start + local


def _features(job: ShardJob, which: str, rows: np.ndarray | None, negatives: bool) -> dict:
    mols, frames, index = _poses(job, which, rows)
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


def training_features(job: FeatureJob) -> dict:
    """{which: {feature set: (X_stored, X_negative)}} of this shard's training molecules."""
    return {which: _features(job.shard, which, job.rows, negatives=True) for which in WHICH}


@dataclass(frozen=True)
class FitJob:
    features_path: str
    which: str
    feature_set: str
    seed: int
    model_path: str


def fit_classifier(job: FitJob) -> dict:
    """Cross-fit on the subsample (out-of-fold scores, metrics), then fit and store one model on all of it."""
    with np.load(job.features_path) as data:
        X_orig, X_rot = data[f"{job.feature_set}:stored"], data[f"{job.feature_set}:negative"]
    p_orig, p_rot = cross_fit_scores(X_orig, X_rot, CLASSIFIER, job.seed)
    offset = FEATURE_SETS.index(job.feature_set)
    metrics = detection_metrics(p_orig, p_rot, CLASSIFIER.n_bootstrap, job.seed + offset)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=CLASSIFIER.n_threads, user_api="openmp"):
        y = np.r_[np.ones(len(X_orig)), np.zeros(len(X_rot))]
        model = CLASSIFIER.make_model(job.seed + CLASSIFIER.n_folds).fit(np.vstack([X_orig, X_rot]), y)
    Path(job.model_path).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(job.model_path).with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(model))
    tmp.replace(job.model_path)
    return {"metrics": {"features": job.feature_set, **metrics}, "oof": p_orig}


@dataclass(frozen=True)
class ScoreJob:
    shard: ShardJob
    which: str
    model_paths: dict  # feature set -> pickled model
    train_rows: np.ndarray  # global indices of this shard's training molecules
    train_scores: dict  # feature set -> their out-of-fold scores


def score_shard(job: ScoreJob) -> int:
    """Write the shard's score table (cross-fitted scores for training molecules); the number of rows."""
    features = _features(job.shard, job.which, None, negatives=False)
    in_train = job.train_rows - job.shard.ref.start
    scores = {}
    for fs in FEATURE_SETS:
        model = pickle.loads(Path(job.model_paths[fs]).read_bytes())
        p = model.predict_proba(features[fs][0])[:, 1]
        p[in_train] = job.train_scores[fs]
        scores[fs] = p
    ids = read_shard_table(Path(job.shard.result_dir), "frames", job.which, job.shard.ref.number, columns=["id"])
    table = {"id": ids.column("id").to_numpy(zero_copy_only=False), "classifier_score": scores[SCORE_FEATURES]}
    table.update({score_column(fs): s for fs, s in scores.items()})
    name = "scores" if job.which == "original" else "control_scores"
    write_shard_table(Path(job.shard.result_dir), "models", name, job.shard.ref.number, pd.DataFrame(table))
    return len(ids)


def run_models(engine: Engine, jobs: list[ShardJob], params: dict, say) -> StageOutput:
    n = sum(j.ref.n_molecules for j in jobs)
    if n < MIN_MOLECULES:
        return StageOutput(skipped=f"the rotation classifiers need at least {MIN_MOLECULES} molecules, got {n}")
    seed = int(params["seed"])
    train = training_rows(n, seed, TRAIN_MOLECULES)
    per_shard = [train[(train >= j.ref.start) & (train < j.ref.stop)] for j in jobs]
    parts = engine.map(training_features, [FeatureJob(j, r) for j, r in zip(jobs, per_shard, strict=True)],
                       say("training features:", 0.0, 0.2))  # fmt: skip
    folder = Path(jobs[0].result_dir) / "models"
    folder.mkdir(parents=True, exist_ok=True)
    fits = []
    for which in WHICH:
        path = folder / f"train-{which}.npz"
        arrays = {}
        for fs in FEATURE_SETS:
            arrays[f"{fs}:stored"] = np.concatenate([p[which][fs][0] for p in parts])
            arrays[f"{fs}:negative"] = np.concatenate([p[which][fs][1] for p in parts])
        np.savez(path, **arrays)
        clf_seed = derived_seed(seed, f"models:{which}:classifier")
        fits += [FitJob(str(path), which, fs, clf_seed, str(folder / f"model-{which}-{fs}.pkl")) for fs in FEATURE_SETS]
    fitted = engine.map(fit_classifier, fits, say("classifiers (cross-fitted):", 0.2, 0.8))
    result = {(f.which, f.feature_set): r for f, r in zip(fits, fitted, strict=True)}
    bounds = np.cumsum([0, *[len(r) for r in per_shard]])
    scoring = [
        ScoreJob(j, which, {fs: str(folder / f"model-{which}-{fs}.pkl") for fs in FEATURE_SETS}, per_shard[k],
                 {fs: result[(which, fs)]["oof"][bounds[k] : bounds[k + 1]] for fs in FEATURE_SETS})
        for which in WHICH for k, j in enumerate(jobs)
    ]  # fmt: skip
    engine.map(score_shard, scoring, say("scores of every molecule:", 0.8, 1.0))
    for which in WHICH:
        (folder / f"train-{which}.npz").unlink(missing_ok=True)
    metrics = {which: [result[(which, fs)]["metrics"] for fs in FEATURE_SETS] for which in WHICH}
    return StageOutput(
        report={"classifiers": metrics["original"]},
        control={"classifiers": metrics["control"]},
        settings={
            "classifier": {**CLASSIFIER.as_dict(), "model": "HistGradientBoostingClassifier"},
            "feature_sets": list(FEATURE_SETS),
            "score_features": SCORE_FEATURES,
            "training_subsample": int(len(train)),
            "training_rule": f"the {TRAIN_MOLECULES:,} molecules with the smallest (seed, 'models:train') draws",
            "negatives": "counter-based: haar_rotations(seed, 'models:<which>:negatives', global index)",
            "metrics": "out-of-fold (cross-fitted) over the training subsample; molecule-level bootstrap CI",
            "scores": "training molecules: out-of-fold; others: a model fitted on the whole subsample",
            "seed_rule": "derived_seed(seed, 'models:<which>:classifier')",
        },
        skipped_parts={"regression": "the orientation-only regression is not yet computed per shard"},
    )
