"""Sharded ingest and the per-shard frames and statistics: the cut of the work never changes the report."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from orientscope.core.errors import DatasetError
from orientscope.pipeline.precompute import make_params, precompute
from orientscope.pipeline.sharded_ingest import expand_inputs, ingest_files
from orientscope.pipeline.synth import SynthSpec, write_synth
from orientscope.science.frames import compute_frames
from orientscope.services.report import build_report
from orientscope.store import datasets as ds
from orientscope.store.results import ResultStore
from orientscope.store.shards import read_shard_table, shard_refs

N = 2400


def comparable(report: dict) -> dict:
    """The report without what legitimately differs between runs: where and how long, and the names."""
    drop = {"engine", "stages", "dataset", "name", "source", "result_key"}
    return {k: v for k, v in report.items() if k not in drop}


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory, qm9_small):
    out = tmp_path_factory.mktemp("synth")
    write_synth(out, SynthSpec(n=N, bias="qm9", seed=3, shard_size=1000), source=qm9_small)
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory, synth_dir):
    """In process, shards of 1000 molecules: the run every other cut must reproduce."""
    data = tmp_path_factory.mktemp("ref")
    meta = ingest_files(data, [synth_dir], "ref", cluster="in-process", shard_size=1000)
    return data, meta


def test_ingest_writes_shards_in_sorted_file_order(reference, synth_dir):
    data, meta = reference
    assert meta["layout"] == "sharded" and meta["n_molecules"] == N
    assert [s["name"] for s in meta["shards"]] == ["f00000-0000", "f00001-0000", "f00002-0000"]
    assert [s["start"] for s in meta["shards"]] == [0, 1000, 2000]
    assert meta["input_files"] == ["shard-00000.npz", "shard-00001.npz", "shard-00002.npz"]
    mols = ds.load_dataset(data, meta["id"])
    assert mols.n_molecules == N and mols.ids[1000].endswith("_2")  # 400 source molecules: row 1000 is copy 2


def test_frames_are_exact_and_the_report_has_the_engine(reference):
    data, meta = reference
    report = build_report(data, meta["id"])
    assert report["n_molecules"] == N
    assert report["engine"]["frames"] == {"where": "in-process", "workers": 1}
    assert set(report["skipped_stages"]) == set()
    assert report["groups"]["formula"]["n_grouped"] == N and report["engine"]["chemistry"]["where"] == "in-process"
    assert report["kl"]["value"] > 0.3 and abs(report["control"]["kl"]["value"]) < 0.1
    # KL reads full frames only: the copies of methane (no orientation) and of one symmetric top (an axis) are out.
    classes = report["orientation_classes"]
    assert classes["none"] == classes["axis"] == N // 400 and classes["full"] == N - 2 * N // 400
    assert report["kl"]["method"].startswith("exact") and report["kl"]["n_used"] == classes["full"]
    assert report["axial"]["n"] == classes["axis"] and report["so3_molecules"] == classes["full"]
    assert report["ks"]["pvalue"] < 1e-3 and report["control"]["ks"]["pvalue"] > 1e-4
    mols = ds.load_dataset(data, meta["id"])
    whole = compute_frames(mols.positions_angstrom, mols.offsets, mols.atomic_numbers)
    store = ResultStore(data, meta["id"], make_params())
    parts = [read_shard_table(store.dir, "frames", "original", ref.number) for ref in shard_refs(data, meta["id"])]
    q = np.concatenate([np.column_stack([p.column(c).to_numpy() for c in ("qx", "qy", "qz", "qw")]) for p in parts])
    np.testing.assert_array_equal(q, whole.quaternions)
    # Readers of the single-table layout see the shards as one table, in molecule order.
    table = store.table("frames", "original", columns=["id", "qw"])
    assert table.num_rows == N and table.column("id").to_pylist() == list(mols.ids)


@pytest.mark.parametrize("shard_size", [700, 2400])
def test_any_shard_size_gives_the_same_report(tmp_path, synth_dir, reference, shard_size):
    data, meta = reference
    other = ingest_files(tmp_path, [synth_dir / "*.npz"], "other", cluster="in-process", shard_size=shard_size)
    assert comparable(build_report(tmp_path, other["id"])) == comparable(build_report(data, meta["id"]))


def test_a_local_cluster_of_two_workers_gives_the_same_report(tmp_path, synth_dir, reference):
    data, meta = reference
    other = ingest_files(tmp_path, [synth_dir], "other", cluster="local:2", shard_size=500)
    report = build_report(tmp_path, other["id"])
    assert report["engine"]["statistics"] == {"where": "local:2", "workers": 2}
    assert comparable(report) == comparable(build_report(data, meta["id"]))
    # The read arrays: the map stage projected the shards on the workers; the same arrays as in process.
    here, there = (ResultStore(d, m["id"], make_params()).dir for d, m in ((data, meta), (tmp_path, other)))
    for name in ("map/original/x.npy", "map/control/y.npy", "map/original/view-rows.npy", "columns/rotations.npy"):
        np.testing.assert_array_equal(np.load(there / name), np.load(here / name))


def test_precompute_with_another_seed_on_a_cluster_matches_in_process(tmp_path, reference):
    data, meta = reference
    # two copies: the module's reference store keeps its own active result for the other tests
    cluster, local = tmp_path / "cluster", tmp_path / "local"
    for copy in (cluster, local):
        shutil.copytree(ds.dataset_dir(data, meta["id"]), ds.dataset_dir(copy, meta["id"]))
    params = make_params(seed=9)
    precompute(cluster, meta["id"], params, cluster="local:2")
    precompute(local, meta["id"], params, cluster="in-process")
    assert comparable(build_report(cluster, meta["id"], params)) == comparable(build_report(local, meta["id"], params))


def test_duplicate_ids_across_files_fail_and_leave_nothing(tmp_path, synth_dir):
    shutil.copy(synth_dir / "shard-00000.npz", tmp_path / "again.npz")
    with pytest.raises(DatasetError, match="duplicate molecule id"):
        ingest_files(tmp_path / "data", [synth_dir, tmp_path / "again.npz"], "dup", cluster="in-process")
    assert ds.list_dataset_ids(tmp_path / "data") == []
    assert not any((tmp_path / "data" / "jobs" / ".staging").iterdir())


def test_files_without_ids_get_stem_and_index_and_bad_records_are_counted(tmp_path):
    rng = np.random.default_rng(0)
    counts = np.full(30, 4)
    pos = rng.normal(size=(120, 3))
    pos[4 * 7] = np.nan  # molecule 7 of b.npz is malformed
    np.savez(tmp_path / "a.npz", z=np.full(120, 6), pos=rng.normal(size=(120, 3)), n_atoms=counts)
    np.savez(tmp_path / "b.npz", z=np.full(120, 6), pos=pos, n_atoms=counts)
    meta = ingest_files(tmp_path / "data", [tmp_path / "*.npz"], "plain", cluster="in-process", shard_size=25)
    assert meta["n_molecules"] == 59 and meta["n_skipped"] == 1 and "NaN" in meta["problems"][0]
    mols = ds.load_dataset(tmp_path / "data", meta["id"])
    assert list(mols.ids[:2]) == ["a:0", "a:1"] and mols.ids[30] == "b:0" and "b:7" not in set(mols.ids)
    with pytest.raises(DatasetError, match="NaN"):
        ingest_files(tmp_path / "data", [tmp_path / "*.npz"], "strict", strict=True, cluster="in-process")


def test_inputs_expand_in_sorted_order_and_missing_ones_are_named(tmp_path):
    for name in ("b.npz", "a.xyz", "c.txt", ".hidden.npz"):
        (tmp_path / name).write_text("")
    assert [p.name for p in expand_inputs([tmp_path])] == ["a.xyz", "b.npz"]
    assert [p.name for p in expand_inputs([tmp_path / "*.npz", tmp_path / "a.xyz"])] == ["a.xyz", "b.npz"]
    with pytest.raises(FileNotFoundError, match="no file matches"):
        expand_inputs([tmp_path / "*.sdf"])


def test_kernel_sums_on_a_seeded_share_of_a_large_half_do_not_depend_on_the_cut(tmp_path, synth_dir, monkeypatch):
    from orientscope.pipeline import shard_stages

    monkeypatch.setattr(shard_stages, "KERNEL_ROWS", 300)  # 2400 molecules: a quarter of half A scores
    assert shard_stages.kernel_fraction(N) == 0.25
    reports = []
    for size in (700, 1000):
        meta = ingest_files(tmp_path / str(size), [synth_dir], "share", cluster="in-process", shard_size=size)
        reports.append(comparable(build_report(tmp_path / str(size), meta["id"])))
    assert reports[0] == reports[1]
    assert reports[0]["reference_orientation"] and reports[0]["ks"]["pvalue"] < 1e-3


def test_classifiers_train_on_a_seeded_subsample_and_score_every_molecule(tmp_path, synth_dir, monkeypatch):
    from orientscope.pipeline import shard_models

    monkeypatch.setattr(shard_models, "TRAIN_MOLECULES", 600)
    runs = []
    for size, cluster in ((700, "in-process"), (1000, "local:2")):
        data = tmp_path / str(size)
        meta = ingest_files(data, [synth_dir], "models", cluster=cluster, shard_size=size)
        store = ResultStore(data, meta["id"], make_params())
        runs.append((build_report(data, meta["id"]), store.table("models", "scores").to_pandas()))
    (report, scores), (other, other_scores) = runs
    assert comparable(report) == comparable(other)
    assert scores.equals(other_scores)
    scored = scores["classifier_score"].notna()
    assert len(scores) == N and scores["classifier_score"][scored].between(0, 1).all()
    assert (~scored).sum() == N - report["so3_molecules"]  # no full frame, no score
    assert report["stages"]["models"]["settings"]["training_subsample"] == 600
    by_features = {c["features"]: c for c in report["classifiers"]}
    assert by_features["frame+composition"]["accuracy"] > 0.6 and by_features["frame+composition"]["n_test"] == 1200
    assert all(abs(c["accuracy"] - 0.5) < 0.1 for c in report["control"]["classifiers"])
    # Training molecules are cross-fitted; the others are scored by one of the fold models.
    assert scores["classifier_score"].nunique() > 1000
    # The orientation-only regression: same rows for both cuts (compared above), every property, a null control.
    rows = {r["property"]: r for r in report["regression"]}
    assert set(rows) == set(ds.read_meta(tmp_path / "700", report["dataset"])["properties"]) and len(rows) > 3
    assert all(abs(r["control_improvement"]) < 0.05 for r in rows.values())
    assert report["stages"]["models"]["settings"]["regression"]["n_neighbors"] == 50


def test_regression_on_a_subsample_of_the_whole_set_is_the_regression_on_the_arrays(reference):
    from orientscope.pipeline.shard_regression import REGRESSION
    from orientscope.science.regression import orientation_regression
    from orientscope.science.rotations import derived_seed

    data, meta = reference
    # seed 0 named: another test adds a seed-9 result to the shared reference store
    report = build_report(data, meta["id"], make_params())
    store = ResultStore(data, meta["id"], make_params())
    y = ds.load_dataset(data, meta["id"]).properties.select_dtypes("number")
    seed = derived_seed(0, "models:regression")
    tables = {which: store.table("frames", which).to_pandas() for which in ("original", "control")}
    # The regression reads the molecules with a full frame (in both sets) only.
    full = np.logical_and(*(t["orientation"].to_numpy() == "full" for t in tables.values()))
    assert 0 < (~full).sum() < 20
    expected = {}
    for which, table in tables.items():
        rotations = table[[f"r{i}{j}" for i in range(3) for j in range(3)]].to_numpy()[full].reshape(-1, 3, 3)
        expected[which] = orientation_regression(rotations, y.to_numpy(np.float64)[full], REGRESSION, seed)
    assert [r["property"] for r in report["regression"]] == list(y.columns)
    for j, row in enumerate(report["regression"]):
        for key in ("mse", "baseline_mse", "improvement", "improvement_std", "mse_normalised"):
            assert row[key] == pytest.approx(expected["original"][key][j], rel=1e-12, abs=1e-15)
        assert row["control_improvement"] == pytest.approx(expected["control"]["improvement"][j], rel=1e-12, abs=1e-15)


def test_sharded_and_one_file_ingest_record_the_same_meta(tmp_path, synth_dir):
    from orientscope.pipeline.ingest import ingest_file

    with np.load(synth_dir / "shard-00000.npz") as arrays:  # its first 40 molecules: every stage runs fast
        n = 40
        n_atoms = int(arrays["n_atoms"][:n].sum())
        cut = {k: arrays[k][:n_atoms] if k in ("z", "pos") else arrays[k][:n] for k in arrays.files}
    one = tmp_path / "one.npz"
    np.savez(one, **cut)
    prop = sorted(set(cut) - {"z", "pos", "n_atoms", "ids", "smiles"})[0]
    sharded = ingest_files(tmp_path / "a", [one], "s", cluster="in-process", frame_dependent=[prop])
    plain = ingest_file(tmp_path / "b", one, "p", frame_dependent=[prop])
    only_plain = {"original_filename"}  # the upload's name
    only_sharded = {"input_files"}
    assert set(plain) - only_plain == set(sharded) - only_sharded
    keys = ("n_molecules", "n_atoms", "has_smiles", "property_units", "frame_dependent", "format", "layout")
    assert len(plain["shards"]) == len(sharded["shards"]) == 1  # a small set is one shard either way
    for key in (*keys, "format_version"):
        assert sharded[key] == plain[key], key
    assert sharded["properties"] == sorted(plain["properties"])  # the union over files, sorted
    assert sharded["frame_dependent"] == [prop]  # --frame-dependent reaches a sharded dataset too
    with pytest.raises(DatasetError, match="not properties"):
        ingest_files(tmp_path / "c", [one], "x", cluster="in-process", frame_dependent=["nope"])


def test_kl_beyond_the_exact_limit_runs_one_task_per_subsample_and_does_not_depend_on_the_cut(tmp_path, synth_dir):
    # 2400 molecules: KL from 3 groups of ~800, sign-invariant and kl_at_n from subsamples of 500 and 600.
    params = make_params(kl_limits={"exact_limit": 1000, "sign_limit": 500, "at_n": 600})
    reports = []
    for size, cluster in ((700, "in-process"), (1000, "local:2")):
        data_dir = tmp_path / str(size)
        meta = ingest_files(data_dir, [synth_dir], "kl", cluster="in-process", shard_size=size, stages=["frames"])
        precompute(data_dir, meta["id"], params, stages=["frames", "statistics"], cluster=cluster)
        reports.append(comparable(build_report(data_dir, meta["id"])))
        # The limits are part of the result's key: the default result (frames only) is another folder.
        assert ResultStore(data_dir, meta["id"], params).key == "pca-max-s0-kl-at_n600-exact_limit1000-sign_limit500"
    assert reports[0] == reports[1]
    kl, signs, at_n = (reports[0][name] for name in ("kl", "kl_sign_invariant", "kl_at_n"))
    assert kl["n_subsamples"] == 3 and kl["n_used"] == reports[0]["so3_molecules"] and "disjoint" in kl["method"]
    assert signs["n_used"] == 1500 and signs["subsample_size"] == 500 and signs["sign_invariant"]
    assert at_n["n_used"] == 1800 and at_n["subsample_size"] == 600
    assert kl["value"] > 0.3 and kl["ci95"][0] < kl["value"] < kl["ci95"][1]
    assert abs(reports[0]["control"]["kl"]["value"]) < 0.1
