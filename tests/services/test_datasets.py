"""Dataset listing, status (ready / computing / failed) and the cached summary."""

import pytest

from orientscope.pipeline.precompute import make_params, precompute
from orientscope.services.cache import WouldBlock, get_view, warm_only
from orientscope.services.datasets import (
    COMPUTING,
    FAILED,
    READY,
    dataset_info,
    dataset_summary,
    list_datasets,
)
from orientscope.services.report import build_report
from orientscope.services.results import open_result
from orientscope.store.datasets import update_meta
from orientscope.store.shards import save_sharded
from tests.services.conftest import toy_set


def test_list_and_ready(toy_dir):
    infos = {d.id: d for d in list_datasets(toy_dir)}
    assert {"toy", "plain"} <= set(infos)
    assert infos["toy"].status == READY and infos["toy"].n_molecules == 8
    assert infos["toy"].stages == ["frames", "models", "chemistry"]


def test_computing_while_the_pipeline_holds_the_lock(toy_dir):
    store = open_result(toy_dir, "plain")
    with store.lock():
        info = dataset_info(toy_dir, "plain")
        assert info.status == COMPUTING and "computing" in info.message
    assert dataset_info(toy_dir, "plain").status == READY


def test_no_results_yet_and_failed(tmp_path):
    save_sharded(tmp_path, "new", toy_set(), name="New", source="constructed")
    assert dataset_info(tmp_path, "new").status == COMPUTING
    update_meta(tmp_path, "new", status="failed", message="line 7: bad coordinates")
    info = dataset_info(tmp_path, "new")
    assert info.status == FAILED and info.message == "line 7: bad coordinates"


def test_summary_is_the_report(toy_dir):
    assert dataset_summary(toy_dir, "toy") == build_report(toy_dir, "toy")
    assert dataset_summary(toy_dir, "toy") is dataset_summary(toy_dir, "toy")  # cached


def test_the_summary_loads_no_view_and_follows_the_metadata(tmp_path):
    save_sharded(tmp_path, "set", toy_set(), name="Before", source="constructed")
    precompute(tmp_path, "set", make_params(seed=0), stages=["frames"])
    report = dataset_summary(tmp_path, "set")
    with pytest.raises(WouldBlock):  # no view of the dataset was loaded for it
        warm_only(get_view, tmp_path, "set")
    assert report == build_report(tmp_path, "set")
    update_meta(tmp_path, "set", name="After")  # a renamed dataset: a new dataset.json
    assert dataset_summary(tmp_path, "set")["name"] == "After"
    precompute(tmp_path, "set", make_params(seed=0), stages=["statistics"])  # a stage rewrites the manifest
    assert "statistics" in dataset_summary(tmp_path, "set")["stages"] and "statistics" not in report["stages"]
