import numpy as np
import pytest

from orientscope.pipeline.precompute import make_params, precompute
from orientscope.services.report import build_report
from orientscope.store.results import ResultStore
from orientscope.store.shards import save_sharded


@pytest.fixture
def small_dir(tmp_path, qm9_small):
    save_sharded(tmp_path, "qm9s", qm9_small.subset(np.arange(200)), name="QM9 slice", source="test")
    return tmp_path


def test_precompute_stores_report_and_reuses_results(small_dir):
    params = make_params(seed=7)
    store = precompute(small_dir, "qm9s", params, stages=["frames", "statistics"])
    first = store.manifest()["stages"]["statistics"]["completed_at"]
    report = build_report(small_dir, "qm9s")
    assert report["n_molecules"] == 200 and report["seed"] == 7
    assert np.array(report["reference_orientation"]).shape == (3, 3)
    assert set(report["kl"]) >= {"value", "ci95"} and set(report["ks"]) >= {"statistic", "pvalue"}
    assert set(report["control"]["kl"]) >= {"value", "ci95"}
    # A second run (a server restart, say) recomputes nothing.
    precompute(small_dir, "qm9s", params, stages=["frames", "statistics"])
    assert ResultStore(small_dir, "qm9s", params).manifest()["stages"]["statistics"]["completed_at"] == first


def test_results_are_reproducible_from_the_seed(small_dir, tmp_path_factory, qm9_small):
    other = tmp_path_factory.mktemp("again")
    save_sharded(other, "qm9s", qm9_small.subset(np.arange(200)), name="QM9 slice", source="test")
    for d in (small_dir, other):
        precompute(d, "qm9s", make_params(seed=11), stages=["frames", "statistics"])
    a, b = build_report(small_dir, "qm9s"), build_report(other, "qm9s")
    assert a["kl"] == b["kl"] and a["control"]["kl"] == b["control"]["kl"]


def test_control_frames_are_the_stored_frames_rotated(small_dir):
    store = precompute(small_dir, "qm9s", make_params(), stages=["frames"])
    orig = store.table("frames", "original").to_pandas()
    ctl = store.table("frames", "control").to_pandas()
    assert list(orig["id"]) == list(ctl["id"])
    assert not np.allclose(orig["r00"], ctl["r00"])


def test_unknown_dataset_and_bad_params(tmp_path):
    from orientscope.core.errors import NotFoundError

    with pytest.raises(NotFoundError, match="unknown dataset 'nope'"):
        precompute(tmp_path, "nope", make_params())
    with pytest.raises(ValueError, match="expected one of"):
        make_params(frame="xyz")


def test_undefined_figures_are_stored_as_null():
    from orientscope.pipeline.stage import StageOutput

    out = StageOutput(report={"ratio": float("nan"), "xs": [1.0, float("inf")], "arr": np.array([np.nan])})
    assert out.section()["report"] == {"ratio": None, "xs": [1.0, None], "arr": [None]}


def test_tiny_and_graphless_datasets_run_every_stage(tmp_path):
    from orientscope.core.dataset import from_molecules

    rng = np.random.default_rng(0)
    odd = [([6], [[0.0, 0.0, 0.0]]), ([1, 1], [[0.0, 0.0, 0.0], [0.74, 0.0, 0.0]])]
    clouds = [([6, 1, 1, 1, 1], rng.normal(size=(5, 3))) for _ in range(12)]
    save_sharded(tmp_path, "odd", from_molecules(odd + clouds), name="odd", source="test")
    store = precompute(tmp_path, "odd", make_params())
    report = build_report(tmp_path, "odd")
    assert report["n_molecules"] == 14 and set(store.completed_stages()) >= {"frames", "statistics"}
    assert "single_atom" in report["degenerate_reasons"]
