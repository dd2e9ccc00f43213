"""The "models" stage end to end on the small real-QM9 store."""

from __future__ import annotations

import numpy as np

from orientscope.core.dataset import from_molecules
from orientscope.pipeline.precompute import make_params, precompute
from orientscope.services.report import build_report
from orientscope.services.results import open_result
from orientscope.store.shards import save_sharded


def test_report_has_classifiers_regression_and_control(qm9_store):
    report = build_report(qm9_store, "qm9")
    names = [c["features"] for c in report["classifiers"]]
    assert names == ["frame", "frame+composition", "atom-order"]
    for c in report["classifiers"]:
        assert set(c) >= {"features", "accuracy", "auc", "ci95", "pvalue", "n_test"}
        assert c["n_test"] == 2 * report["orientation_classes"]["full"]  # full frames only
        lo, hi = c["ci95"]["accuracy"]
        assert lo <= c["accuracy"] <= hi
    # QM9 poses are aligned: the order-aware model sees it even on 400 molecules.
    atom_order = report["classifiers"][2]
    assert atom_order["accuracy"] > 0.75 and atom_order["pvalue"] < 1e-6
    assert [c["features"] for c in report["control"]["classifiers"]] == names
    for c in report["control"]["classifiers"]:
        assert abs(c["accuracy"] - 0.5) < 0.1
    props = {r["property"]: r for r in report["regression"]}
    assert {"zpve", "lumo", "cv", "homo"} <= set(props)
    zpve = props["zpve"]
    assert zpve["unit"] == "Ha" and zpve["baseline_mse"] > 0 and not zpve["frame_dependent"]
    assert props["alpha_xx"]["frame_dependent"]
    for r in report["regression"]:
        assert abs(r["control_improvement"]) < 0.05, r
        assert np.isclose(r["improvement"], 1 - r["mse"] / r["baseline_mse"], atol=0.1)
    settings = report["stages"]["models"]["settings"]
    assert settings["classifier"]["model"] == "HistGradientBoostingClassifier"
    # Every draw is recorded as a rule of the run's seed: negatives are counter-based, per molecule index.
    assert settings["negatives"] == "counter-based: haar_rotations(seed, 'models:<which>:negatives', global index)"
    assert "derived_seed(seed, 'models:regression')" in settings["seed_rule"]


def test_scores_table_is_cross_fitted_probability_per_molecule(qm9_store):
    store = open_result(qm9_store, "qm9")
    scores = store.table("models", "scores").to_pandas()
    frames = store.table("frames", "original").to_pandas()
    assert list(scores["id"]) == list(frames["id"])
    assert set(scores.columns) >= {"classifier_score", "score_frame", "score_frame_composition", "score_atom_order"}
    np.testing.assert_array_equal(scores["classifier_score"], scores["score_frame_composition"])
    # Molecules without a full frame (here methane and one symmetric top) get no score.
    full = frames["orientation"] == "full"
    assert scores["classifier_score"][full].between(0, 1).all() and scores["classifier_score"][~full].isna().all()
    # Stored poses score above 0.5 more often than not for the order-aware model.
    assert (scores["score_atom_order"] > 0.5).mean() > 0.7


def test_dataset_without_properties_still_classifies(tmp_path):
    rng = np.random.default_rng(0)
    mols = [(rng.choice([1, 6, 8], size=6), rng.normal(size=(6, 3)) * [2.0, 1.0, 0.5]) for _ in range(60)]
    save_sharded(tmp_path, "bare", from_molecules(mols), name="bare", source="test")
    params = make_params(seed=1)
    precompute(tmp_path, "bare", params, stages=["frames", "models"])
    report = build_report(tmp_path, "bare", params)
    assert len(report["classifiers"]) == 3 and report["regression"] == []
    assert "no numeric properties" in report["skipped_stages"]["models.regression"]
    assert "models" not in report["skipped_stages"]
