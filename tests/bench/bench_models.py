"""Benchmark of the "models" stage on full QM9 (section ``models`` of BENCHMARKS.md).

Times the whole stage and its parts, checks the acceptance figures, and
measures the accuracy/time trade-off of the model settings against cheaper
baselines in the same run. Data dir: $ORIENTSCOPE_BENCH_DIR or /tmp/os-bench-models.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from orientscope.pipeline.frames_table import frames_from_table
from orientscope.pipeline.precompute import make_params, precompute
from orientscope.science.classifiers import ClassifierSettings, composition_features, grouped_folds, pose_features
from orientscope.science.counter_rng import haar_rotations
from orientscope.science.frames import compute_frames
from orientscope.science.regression import SO3NeighborsRegressor
from orientscope.science.rotations import rotate_molecules
from orientscope.services.report import build_report
from orientscope.store import datasets as ds
from tests.bench.common import write_section

DATA_DIR = Path(os.environ.get("ORIENTSCOPE_BENCH_DIR", "/tmp/os-bench-models"))
SEED = 0


def _stage(params) -> tuple[dict, dict, float]:
    """(report, seconds per pass, total seconds) of the models stage, run again on the stored frames."""
    marks: list[tuple[float, str]] = []
    t0 = time.perf_counter()
    precompute(DATA_DIR, "qm9", params, stages=["models"], force=True,
               progress=lambda f, msg, stage="": marks.append((time.perf_counter() - t0, msg)))  # fmt: skip
    total = time.perf_counter() - t0
    parts: dict[str, float] = {}
    last = 0.0
    for t, msg in marks:
        key = msg.rsplit(" ", 2)[0] if msg.endswith(" shards") else msg  # "<pass> k/n shards" -> "<pass>"
        parts[key] = parts.get(key, 0.0) + t - last
        last = t
    return build_report(DATA_DIR, "qm9", params), parts, total


def _classifier_tradeoff(mols, frames) -> list[tuple[str, float, float]]:
    """frame+composition on one grouped 80/20 split: settings vs accuracy and fit time."""
    n = mols.n_molecules
    Q = haar_rotations(123, "bench:negatives", np.arange(n))
    rotated = rotate_molecules(mols.positions_angstrom, mols.offsets, Q)
    rframes = compute_frames(rotated, mols.offsets, mols.atomic_numbers)
    comp = composition_features(mols.atomic_numbers, mols.offsets)
    Xo = pose_features("frame+composition", frames, comp, mols.positions_angstrom, mols.offsets)
    Xr = pose_features("frame+composition", rframes, comp, rotated, mols.offsets)
    train = grouped_folds(n, 5, 0) != 0
    X, y = np.vstack([Xo[train], Xr[train]]), np.r_[np.ones(train.sum()), np.zeros(train.sum())]
    default = ClassifierSettings()
    candidates = {
        "logistic regression (baseline)": make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
        "HGB 100 iter, 31 leaves, lr 0.1": replace(
            default, max_iter=100, max_leaf_nodes=31, learning_rate=0.1
        ).make_model(0),
        "HGB 150 iter, 63 leaves, lr 0.25 (chosen)": default.make_model(0),
        "HGB 300 iter, 127 leaves, lr 0.2": replace(
            default, max_iter=300, max_leaf_nodes=127, learning_rate=0.2
        ).make_model(0),
    }
    rows = []
    for name, model in candidates.items():
        t0 = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - t0
        acc = (
            np.sum(model.predict_proba(Xo[~train])[:, 1] > 0.5) + np.sum(model.predict_proba(Xr[~train])[:, 1] <= 0.5)
        ) / (2 * (~train).sum())
        rows.append((name, float(acc), seconds))
    return rows


def _regression_tradeoff(mols, frames) -> list[tuple[str, dict, float]]:
    """ZPVE, LUMO, Cv on one 80/20 split: SO(3) kNN (all properties at once) vs HGB per property."""
    names = ["zpve", "lumo", "cv"]
    Y = mols.properties[names].to_numpy(np.float64)
    test = grouped_folds(mols.n_molecules, 5, 1) == 0
    R = frames.rotations
    base = ((Y[test] - Y[~test].mean(axis=0)) ** 2).mean(axis=0)
    rows = []
    t0 = time.perf_counter()
    pred = SO3NeighborsRegressor(50, seed=0).fit(R[~test], mols.properties.to_numpy(np.float64)[~test]).predict(R[test])
    pred = pred[:, [list(mols.properties.columns).index(c) for c in names]]
    rows.append(("SO(3) kNN k=50, calibrated, all 21 properties (chosen)", pred, time.perf_counter() - t0))
    t0 = time.perf_counter()
    X = R.reshape(-1, 9)
    pred = np.column_stack(
        [
            HistGradientBoostingRegressor(max_iter=100, random_state=0).fit(X[~test], Y[~test, j]).predict(X[test])
            for j in range(3)
        ]
    )
    rows.append(("HGB regressor per property, these 3 only", pred, time.perf_counter() - t0))
    return [
        (name, dict(zip(names, 1 - ((p - Y[test]) ** 2).mean(axis=0) / base, strict=True)), s) for name, p, s in rows
    ]


def main() -> None:
    params = make_params(seed=SEED)
    t0 = time.perf_counter()
    store = precompute(DATA_DIR, "qm9", params, stages=["frames"])
    frames_seconds = time.perf_counter() - t0
    reused = " (reused from an earlier run's store)" if frames_seconds < 1.0 else ""
    mols = ds.load_dataset(DATA_DIR, "qm9")
    report, parts, total = _stage(params)
    frames = frames_from_table(store.table("frames", "original").to_pandas())
    with threadpool_limits(limits=1, user_api="openmp"):
        clf_rows = _classifier_tradeoff(mols, frames)
        reg_rows = _regression_tradeoff(mols, frames)

    lines = [
        "## models (rotation-detection classifiers, orientation-only regression)",
        "",
        f"Full QM9, {mols.n_molecules} molecules, seed {SEED}. The CPU is shared with other work, so times are noisy upper bounds.",
        f"Frames stage (incl. materialising QM9 if needed): {frames_seconds:.1f} s{reused}. **Models stage total: {total:.1f} s** (target 120 s).",
        "",
        "| part | seconds |",
        "|---|---:|",
        *[f"| {k} | {v:.1f} |" for k, v in parts.items()],
        "",
        "Held-out (3-fold cross-fitted, 2 rows per molecule) accuracy; acceptance: frame ≥ 0.66, frame+composition ≥ 0.72, atom-order ≥ 0.90, control 0.5 ± 0.02.",
        "",
        "| features | accuracy [95% CI] | AUC | control accuracy | control p |",
        "|---|---|---:|---:|---:|",
    ]
    for c, k in zip(report["classifiers"], report["control"]["classifiers"], strict=True):
        lo, hi = c["ci95"]["accuracy"]
        lines.append(
            f"| {c['features']} | {c['accuracy']:.4f} [{lo:.4f}, {hi:.4f}] | {c['auc']:.4f} | {k['accuracy']:.4f} | {k['pvalue']:.3g} |"
        )
    lines += [
        "",
        "Orientation-only regression, 5-fold CV improvement over the training-mean predictor (acceptance: ZPVE ≥ 20 %, LUMO ≥ 10 %, Cv ≥ 10 %, control within ±1 %):",
        "",
        "| property | improvement | ± std | control |",
        "|---|---:|---:|---:|",
        *[
            f"| {r['property']} | {r['improvement']:+.2%} | {r['improvement_std']:.2%} | {r['control_improvement']:+.2%} |"
            for r in report["regression"]
        ],
        "",
        "Model settings, `frame+composition` classifier, one grouped 80/20 split (fit time single-threaded):",
        "",
        "| model | accuracy | fit seconds |",
        "|---|---:|---:|",
        *[f"| {name} | {acc:.4f} | {s:.1f} |" for name, acc, s in clf_rows],
        "",
        "Regression model, one 80/20 split:",
        "",
        "| model | ZPVE | LUMO | Cv | seconds |",
        "|---|---:|---:|---:|---:|",
        *[
            f"| {name} | {imp['zpve']:+.2%} | {imp['lumo']:+.2%} | {imp['cv']:+.2%} | {s:.1f} |"
            for name, imp, s in reg_rows
        ],
    ]
    text = "\n".join(lines)
    print(text)
    write_section("models", text)


if __name__ == "__main__":
    main()
