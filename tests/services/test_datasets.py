"""Dataset listing, status (ready / computing / failed) and the cached summary."""

from backend.services.datasets import COMPUTING, FAILED, READY, dataset_info, dataset_summary, list_datasets
from backend.services.report import build_report
from backend.services.results import open_result
from backend.store.datasets import save_dataset, update_meta
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
    save_dataset(tmp_path, "new", toy_set(), name="New", source="constructed")
    assert dataset_info(tmp_path, "new").status == COMPUTING
    update_meta(tmp_path, "new", status="failed", message="line 7: bad coordinates")
    info = dataset_info(tmp_path, "new")
    assert info.status == FAILED and info.message == "line 7: bad coordinates"


def test_summary_is_the_report(toy_dir):
    assert dataset_summary(toy_dir, "toy") == build_report(toy_dir, "toy")
    assert dataset_summary(toy_dir, "toy") is dataset_summary(toy_dir, "toy")  # cached
