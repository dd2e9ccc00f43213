"""The columns assembled from the frames stage's per-shard parts equal the columns converted from the Parquet tables."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from orientscope.pipeline.precompute import make_params
from orientscope.pipeline.read_arrays import write_columns
from orientscope.pipeline.sharded_ingest import ingest_files
from orientscope.pipeline.synth import SynthSpec, write_synth
from orientscope.store import column_parts as parts
from orientscope.store import columns as cols
from orientscope.store.results import ResultStore

N = 1500


def _ingest(root, qm9_small, shard_size):
    write_synth(root / "npz", SynthSpec(n=N, bias="qm9", seed=3, shard_size=N), source=qm9_small)
    meta = ingest_files(root / "data", [root / "npz"], "set", cluster="in-process", shard_size=shard_size,
                        stages=["frames"])  # fmt: skip
    return root / "data", meta, ResultStore(root / "data", meta["id"], make_params())


@pytest.fixture(scope="module", params=[600, 2000], ids=["three shards", "one shard"])
def ingested(request, tmp_path_factory, qm9_small):
    return _ingest(tmp_path_factory.mktemp("parts"), qm9_small, request.param)


def _assert_same_columns(a_folder, b_folder):
    a, meta_a = cols.open_columns(a_folder)
    b, meta_b = cols.open_columns(b_folder)
    assert sorted(a) == sorted(b)
    for name in a:
        assert (a[name].dtype, a[name].shape) == (b[name].dtype, b[name].shape), name
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert meta_a == meta_b


def test_ingest_columns_equal_the_parquet_conversion_and_leave_no_parts(ingested, tmp_path):
    data, meta, store = ingested
    assert len(meta["shards"]) in (1, 3)
    folder = cols.store_columns_folder(store.dir)
    assert cols.current_columns(folder, cols.columns_signature(meta, store.manifest(), None))
    assert not parts.parts_folder(store.dir).exists()  # held by the columns folder now
    rebuilt = write_columns(data, meta["id"], store, tmp_path / "from-parquet")  # no parts: the Parquet tables
    _assert_same_columns(folder, rebuilt)
    arrays, _ = cols.open_columns(folder)
    widths = {len(str(i)) for i in arrays["ids"]}
    assert len(widths) > 1  # ids of several widths: the folder's width is the widest shard's


def test_parts_of_another_shard_or_size_are_not_used(ingested, tmp_path):
    data, meta, store = ingested
    first = meta["shards"][0]
    fake = {name: np.zeros(0) for name in parts.PART_COLUMNS}
    parts.write_part(store.dir, 0, first["name"] + "-other", fake, [])
    assert parts.read_parts(store.dir, [(s["name"], s["n_molecules"]) for s in meta["shards"]]) is None
    parts.write_part(store.dir, 0, first["name"], fake, [])  # the right shard, but 0 molecules
    assert parts.read_parts(store.dir, [(s["name"], s["n_molecules"]) for s in meta["shards"]]) is None
    rebuilt = write_columns(data, meta["id"], store, tmp_path / "ignoring-parts")
    _assert_same_columns(cols.store_columns_folder(store.dir), rebuilt)
    parts.remove_parts(store.dir)


def test_a_part_is_replaced_whole_and_holds_its_shard(ingested):
    data, meta, store = ingested
    from orientscope.pipeline.shard_stages import ShardJob, frames_shard
    from orientscope.store.shards import shard_refs

    ref = shard_refs(data, meta["id"], meta)[-1]
    frames_shard(ShardJob(str(data), meta["id"], ref, make_params(), str(store.dir)))
    found = parts.read_parts(store.dir, [(s["name"], s["n_molecules"]) for s in meta["shards"]][:1])
    if len(meta["shards"]) > 1:
        assert found is None  # only the last shard's part was written
    part = parts.open_part(parts.part_folder(store.dir, ref.number))
    arrays, _ = cols.open_columns(cols.store_columns_folder(store.dir))
    np.testing.assert_array_equal(part["ids"], arrays["ids"][ref.start : ref.stop])
    np.testing.assert_array_equal(part["rotations"], arrays["rotations"][ref.start : ref.stop])
    assert not list(parts.parts_folder(store.dir).glob(".*"))  # no temporary folder left
    parts.remove_parts(store.dir)


def test_a_killed_writes_temporary_folder_is_removed_by_the_next_write(ingested, tmp_path):
    data, meta, store = ingested
    folder = tmp_path / "cols"
    stale, live = tmp_path / ".cols-killed", tmp_path / ".cols-writing"
    for path in (stale, live):
        path.mkdir()
        (path / "positions.npy").write_bytes(b"\0" * 16)
    hour_ago = time.time() - 3700
    os.utime(stale, (hour_ago, hour_ago))
    write_columns(data, meta["id"], store, folder)
    assert not stale.exists()  # older than any live write
    assert live.exists()  # may be another process's write in progress
    assert cols.current_columns(folder, cols.columns_signature(meta, store.manifest(), None))


def test_columns_are_built_from_the_parts_without_the_atoms_tables(ingested, tmp_path):
    data, meta, store = ingested
    from orientscope.pipeline.shard_stages import ShardJob, frames_shard
    from orientscope.store.shards import shard_refs

    refs = shard_refs(data, meta["id"], meta)
    for ref in refs:  # the frames stage's tasks again: every shard's part
        frames_shard(ShardJob(str(data), meta["id"], ref, make_params(), str(store.dir)))
    hidden = [(p, p.with_name("atoms.hidden")) for p in (Path(ref.folder) / "atoms.parquet" for ref in refs)]
    for path, away in hidden:
        path.rename(away)
    try:
        built = write_columns(data, meta["id"], store, tmp_path / "from-parts")
    finally:
        for path, away in hidden:
            away.rename(path)
    _assert_same_columns(cols.store_columns_folder(store.dir), built)
    assert parts.parts_folder(store.dir).exists()  # built outside the result: its parts stay for its own folder
    parts.remove_parts(store.dir)


# the parts are consumed shard by shard only when there are several: the three-shard store alone
@pytest.mark.parametrize("ingested", [600], ids=["three shards"], indirect=True)
def test_a_failed_build_keeps_the_earlier_folder_and_the_next_one_reads_parquet(ingested, tmp_path, monkeypatch):
    data, meta, store = ingested
    from orientscope.pipeline.shard_stages import ShardJob, frames_shard
    from orientscope.store.shards import shard_refs

    refs = shard_refs(data, meta["id"], meta)
    assert len(refs) == 3
    for ref in refs:
        frames_shard(ShardJob(str(data), meta["id"], ref, make_params(), str(store.dir)))
    folder = cols.store_columns_folder(store.dir)
    signature = cols.columns_signature(meta, store.manifest(), None)
    before = cols.open_columns(folder)[0]["positions"].copy()
    opened, open_part = [], parts.open_part

    def failing_open(part, skip=frozenset()):
        opened.append(part)
        if len(opened) == 2:
            raise OSError("disk full")
        return open_part(part, skip)

    monkeypatch.setattr(parts, "open_part", failing_open)
    with pytest.raises(OSError, match="disk full"):
        cols.build_columns(data, meta["id"], meta, store.dir, folder, False, {**signature, "frames_completed_at": 0})
    monkeypatch.undo()
    assert cols.current_columns(folder, signature)  # the earlier folder, as it was
    np.testing.assert_array_equal(cols.open_columns(folder)[0]["positions"], before)
    assert not list(folder.parent.glob(".columns-*"))  # the failed write's temporary folder is gone
    shards = [(s["name"], s["n_molecules"]) for s in meta["shards"]]
    assert parts.read_parts(store.dir, shards) is None  # the first part was consumed: the rest are not used
    rebuilt = cols.build_columns(data, meta["id"], meta, store.dir, tmp_path / "again", False, signature)
    _assert_same_columns(folder, rebuilt)
    parts.remove_parts(store.dir)


def test_parts_written_on_a_dask_cluster_make_the_same_columns(tmp_path, qm9_small):
    root = tmp_path
    write_synth(root / "npz", SynthSpec(n=N, bias="qm9", seed=3, shard_size=N), source=qm9_small)
    meta = ingest_files(root / "data", [root / "npz"], "set", cluster="local:2", shard_size=600, stages=["frames"])
    store = ResultStore(root / "data", meta["id"], make_params())
    assert store.manifest()["stages"]["frames"]["engine"]["where"] != "in-process"
    assert not parts.parts_folder(store.dir).exists()
    rebuilt = write_columns(root / "data", meta["id"], store, tmp_path / "from-parquet")
    _assert_same_columns(cols.store_columns_folder(store.dir), rebuilt)
