"""Migrating a single-folder dataset to shards: same molecules, same results, and the old one intact on failure.

The single-folder store is one written by OrientScope before the sharded layout (``old_layout_store``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from orientscope.core.dataset import select_rows
from orientscope.core.errors import DatasetError, OldLayout
from orientscope.pipeline import migrate, staging
from orientscope.pipeline.precompute import make_params, precompute
from orientscope.science.clustering import popcounts
from orientscope.services.report import build_report
from orientscope.store import datasets as ds
from orientscope.store import relayout
from orientscope.store.results import ResultStore
from orientscope.store.shards import SHARD_SIZE_ENV, is_sharded, shard_array_paths, shard_refs, shard_table_paths
from tests.conftest import OLD_LAYOUT_N

ROOT = Path(__file__).resolve().parents[2]
SHARD = 40  # 150 molecules: shards of 40, 40, 40, 30
TABLES = [
    ("frames", "original"),
    ("frames", "control"),
    ("chemistry", "molecules"),
    ("chemistry", "fingerprints"),
    ("chemistry", "groups_scaffold"),
    ("chemistry", "groups_cluster"),
    ("models", "scores"),
    ("models", "control_scores"),
]


@pytest.fixture()
def old(tmp_path, old_layout_store, monkeypatch):
    """A private copy of the single-folder store; the shard size setting lowered to make several shards."""
    data = tmp_path / "data"
    shutil.copytree(old_layout_store, data)
    monkeypatch.setenv(SHARD_SIZE_ENV, str(SHARD))
    return data


def molecules(data):
    """Dataset "old" in memory, in either layout (only a migration reads the old one)."""
    meta = ds.read_meta(data, "old")
    if is_sharded(meta):
        return ds.load_dataset(data, "old")
    return ds.read_molecule_tables(ds.dataset_dir(data, "old"), meta)


def snapshot(data) -> dict:
    """Everything a reader sees of dataset "old": molecules, its tables and its stored report sections."""
    store = ResultStore(data, "old", make_params(seed=0))
    return {
        "mols": molecules(data),
        "tables": {t: store.table(*t).to_pandas() for t in TABLES},
        "sections": {stage: store.section(stage) for stage in store.completed_stages()},
    }


def assert_same(a: dict, b: dict) -> None:
    ma, mb = a["mols"], b["mols"]
    np.testing.assert_array_equal(ma.ids, mb.ids)
    np.testing.assert_array_equal(ma.smiles, mb.smiles)
    np.testing.assert_array_equal(ma.offsets, mb.offsets)
    np.testing.assert_array_equal(ma.atomic_numbers, mb.atomic_numbers)
    np.testing.assert_array_equal(ma.positions_angstrom, mb.positions_angstrom)
    pd.testing.assert_frame_equal(ma.properties, mb.properties, check_exact=True)
    assert ma.property_units == mb.property_units and ma.frame_dependent == mb.frame_dependent
    for name, table in a["tables"].items():
        pd.testing.assert_frame_equal(table, b["tables"][name], check_exact=True, obj=str(name))
    assert a["sections"] == b["sections"]


def test_migration_cuts_molecules_and_results_into_shards_without_changing_them(old):
    before = snapshot(old)
    meta = migrate.migrate_dataset(old, "old")
    assert is_sharded(meta) and meta["shard_size"] == SHARD
    assert [(s["start"], s["n_molecules"]) for s in meta["shards"]] == [(0, 40), (40, 40), (80, 40), (120, 30)]
    assert meta["n_molecules"] == OLD_LAYOUT_N and meta["name"] == "Old" and meta["migrated"]["from"] == "single-folder"
    folder = ds.dataset_dir(old, "old")
    assert not (folder / "molecules.parquet").exists() and not (folder / "atoms.parquet").exists()
    # The per-shard files the sharded stages write, and no single per-molecule table beside them.
    store = ResultStore(old, "old", make_params(seed=0))
    for stage, table in [("frames", "original"), ("frames", "control"), ("chemistry", "molecules"),
                         ("models", "scores"), ("models", "control_scores")]:  # fmt: skip
        assert len(shard_table_paths(store.dir, stage, table)) == 4
        assert not (store.dir / f"{stage}.{table}.parquet").exists()
    fingerprints = shard_array_paths(store.dir, "chemistry", "fingerprints")
    assert [np.load(p).shape for p in fingerprints] == [(40, 32), (40, 32), (40, 32), (30, 32)]
    assert np.load(fingerprints[0]).dtype == np.uint64
    counts = shard_array_paths(store.dir, "chemistry", "popcounts")
    assert len(counts) == 4 and np.load(counts[0]).dtype == np.uint16
    for fp, count in zip(fingerprints, counts, strict=True):
        np.testing.assert_array_equal(np.load(count), popcounts(np.load(fp)))
    assert sorted(meta["migrated"]["tables_cut"][store.key]) == sorted(
        ["frames.original", "frames.control", "chemistry.molecules", "chemistry.fingerprints", "models.scores",
         "models.control_scores"]
    )  # fmt: skip
    # Ids in each shard are the dataset's ids in order: shard k holds rows [start, start + n).
    ids = before["mols"].ids
    for ref in shard_refs(old, "old"):
        shard_ids = pd.read_parquet(shard_table_paths(store.dir, "frames", "original")[ref.number])["id"]
        np.testing.assert_array_equal(shard_ids.to_numpy(str), ids[ref.start : ref.stop])
    assert_same(before, snapshot(old))
    # Nothing is left behind in the staging area.
    assert list(staging.staging_root(old).iterdir()) == []


def test_a_migrated_dataset_is_not_migrated_again(old):
    first = migrate.migrate_dataset(old, "old")
    again = migrate.migrate_dataset(old, "old", shard_size=7)
    assert again == first and not migrate.needs_migration(old, "old")


def test_sharded_stages_run_on_the_recut_results(old):
    migrate.migrate_dataset(old, "old")
    # The sharded statistics stage reads the re-cut per-shard frames.
    store = precompute(old, "old", make_params(seed=0), stages=["statistics"], force=True, cluster="in-process")
    assert store.manifest()["stages"]["statistics"]["engine"] == {"where": "in-process", "workers": 1}
    report = build_report(old, "old")
    assert report["n_molecules"] == OLD_LAYOUT_N and np.isfinite(report["kl"]["value"])


def test_a_subset_result_is_taken_over_unchanged(old):
    params = make_params(seed=0, limit=50)  # the old store holds this --limit run's frames
    before = ResultStore(old, "old", params).table("frames", "original").to_pandas()
    assert len(before) == 50
    migrate.migrate_dataset(old, "old")
    store = ResultStore(old, "old", params)
    assert (store.dir / "frames.original.parquet").is_file() and not shard_table_paths(store.dir, "frames", "original")
    pd.testing.assert_frame_equal(store.table("frames", "original").to_pandas(), before, check_exact=True)


def test_files_of_an_unfinished_stage_are_left_behind(old):
    store = ResultStore(old, "old", make_params(seed=0))
    store.drop_stage("models")  # as if the run was killed after writing the tables, before the manifest
    migrate.migrate_dataset(old, "old")
    assert not (store.dir / "models.scores.parquet").exists() and not (store.dir / "models").exists()
    assert "models" not in store.completed_stages()


def test_model_audits_and_other_folders_are_carried_over(old):
    audit = ds.dataset_dir(old, "old") / "audits" / "a1"
    audit.mkdir(parents=True)
    (audit / "audit.json").write_text('{"id": "a1"}')
    migrate.migrate_dataset(old, "old")
    assert json.loads((ds.dataset_dir(old, "old") / "audits" / "a1" / "audit.json").read_text()) == {"id": "a1"}


def test_a_failure_mid_migration_leaves_the_old_dataset_intact(old, monkeypatch):
    before = snapshot(old)

    def disk_full(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(relayout, "write_shard_array", disk_full)  # while cutting the fingerprints
    with pytest.raises(OSError, match="disk full"):
        migrate.migrate_dataset(old, "old")
    assert migrate.needs_migration(old, "old")
    assert_same(before, snapshot(old))
    assert list(staging.staging_root(old).iterdir()) == []


def test_a_failure_at_the_exchange_leaves_the_old_dataset_intact(old, monkeypatch):
    before = snapshot(old)

    def refused(*args, **kwargs):
        raise OSError("exchange refused")

    monkeypatch.setattr(staging, "swap_dirs", refused)
    with pytest.raises(OSError, match="exchange refused"):
        migrate.migrate_dataset(old, "old")
    assert migrate.needs_migration(old, "old")
    assert_same(before, snapshot(old))


def test_a_table_that_does_not_match_the_molecules_stops_the_migration(old):
    store = ResultStore(old, "old", make_params(seed=0))
    scores = pd.read_parquet(store.dir / "models.scores.parquet")
    scores.iloc[::-1].to_parquet(store.dir / "models.scores.parquet", index=False)  # same ids, other order
    with pytest.raises(DatasetError, match="not the dataset's molecules in order"):
        migrate.migrate_dataset(old, "old")
    assert migrate.needs_migration(old, "old")


def test_a_result_changed_during_the_migration_stops_it(old, monkeypatch):
    copy = relayout.copy_other_entries

    def meanwhile(src, dst):  # another process finishes a stage while the copy is built
        copy(src, dst)
        ResultStore(old, "old", make_params(seed=0)).drop_stage("models")

    monkeypatch.setattr(migrate, "copy_other_entries", meanwhile)
    with pytest.raises(DatasetError, match="changed while it was migrated"):
        migrate.migrate_dataset(old, "old")
    assert migrate.needs_migration(old, "old")
    assert migrate.migrate_dataset(old, "old")["layout"] == "sharded"  # a second try succeeds


def test_a_killed_migration_leaves_the_old_dataset_readable_and_a_rerun_succeeds(old):
    before = snapshot(old)
    # A real SIGKILL in the middle: after the molecules are cut, while the results are.
    script = textwrap.dedent(f"""
        import os, signal
        from orientscope.pipeline import migrate
        def killed(*args):
            os.kill(os.getpid(), signal.SIGKILL)
        migrate.cut_result = killed
        migrate.migrate_dataset({str(old)!r}, "old", shard_size={SHARD})
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=300)
    assert done.returncode == -signal.SIGKILL
    assert migrate.needs_migration(old, "old")
    assert_same(before, snapshot(old))
    migrate.migrate_dataset(old, "old")
    assert_same(before, snapshot(old))


def test_every_reader_but_migrate_refuses_the_old_layout_and_names_migrate(old):
    hint = "orientscope migrate old"
    for refused in (
        lambda: precompute(old, "old", make_params(seed=0)),
        lambda: precompute(old, "old", make_params(seed=0, limit=20)),
        lambda: ds.load_dataset(old, "old"),
        lambda: build_report(old, "old"),
        lambda: shard_refs(old, "old"),
    ):
        with pytest.raises(OldLayout, match=hint):
            refused()
    assert migrate.needs_migration(old, "old")  # nothing was converted on the way


def test_publish_with_replace_refuses_a_dataset_deleted_meanwhile(old):
    with staging.staging(old, "old", replace=True) as stage_dir:
        shutil.copytree(ds.dataset_dir(old, "old"), ds.dataset_dir(stage_dir, "old"))
        ds.delete_dataset(old, "old")
        with pytest.raises(DatasetError, match="deleted while it was rebuilt"):
            staging.publish(stage_dir, old, "old", replace=True)
    assert not ds.has_dataset(old, "old")


def test_a_limit_run_on_a_migrated_dataset_runs_on_its_own_shard(old):
    migrate.migrate_dataset(old, "old")
    params = make_params(seed=2, limit=60)
    store = precompute(old, "old", params, stages=["frames"])
    mols = ds.load_dataset(old, "old")
    ids = store.table("frames", "original", columns=["id"]).column("id").to_pylist()
    assert ids == list(mols.ids[select_rows(OLD_LAYOUT_N, 60)])
    # 60 molecules read from the four shards, run as one shard of 40 and one of 20 (the shard size is 40).
    assert len(shard_table_paths(store.dir, "frames", "original")) == 2
    assert not (store.dir / "frames.original.parquet").exists()
    assert list(staging.staging_root(old).iterdir()) == []


def test_a_stored_orientation_map_is_brought_up_to_the_symmetry_rule_and_still_opens(old):
    """The old store's map was written before the symmetry rule and shows every axis of every molecule. Migrating
    rewrites it (its signature's map rule is older): the same points where the molecule's symmetry defines the
    axis, none where it does not."""
    from orientscope.pipeline.map_stage import defined_axes_mask
    from orientscope.services.map_data import load_map_data

    store = ResultStore(old, "old", make_params(seed=0))
    before = np.load(store.dir / "map" / "original" / "x.npy")  # the old store's map, as its writer left it
    assert np.isfinite(before).all()
    migrate.migrate_dataset(old, "old")
    assert (store.dir / "map" / "original" / "map.json").is_file()
    after = load_map_data(old, "old", "original")
    assert after.ids.mapped
    x = np.asarray(after.x)
    shown = defined_axes_mask(store.table("frames", "original", columns=["reason"]).column("reason"))
    assert not shown.all()  # the set has molecules without a full frame: the old map was stale
    np.testing.assert_array_equal(np.isfinite(x), shown)
    np.testing.assert_array_equal(x[shown], before[shown])


def test_a_first_run_in_progress_is_waited_for_and_stops_the_migration(old, monkeypatch):
    import threading

    store = ResultStore(old, "old", make_params(seed=5))  # no manifest yet: a first run
    locked, finish = threading.Event(), threading.Event()

    def first_run():
        with store.lock():
            locked.set()
            finish.wait(120)
            store.write_stage("frames", {"report": {}}, {}, 0.0)

    runner = threading.Thread(target=first_run)
    runner.start()
    assert locked.wait(60)
    copy = relayout.copy_other_entries

    def then_finish(src, dst):  # the run ends only once the migration waits on its lock
        copy(src, dst)
        finish.set()

    monkeypatch.setattr(migrate, "copy_other_entries", then_finish)
    with pytest.raises(DatasetError, match="changed while it was migrated"):
        migrate.migrate_dataset(old, "old")
    runner.join()
    assert migrate.needs_migration(old, "old") and store.completed("frames")
