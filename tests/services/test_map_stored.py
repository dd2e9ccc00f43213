"""The map stage (pipeline.map_stage) and its stored arrays (store.map_arrays): written with the other results,
memory-mapped by every read, written on first open for a store without them, and answering exactly as the map
projected in memory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from orientscope.pipeline import map_stage
from orientscope.pipeline.sharded_ingest import ingest_files
from orientscope.pipeline.synth import SynthSpec, write_synth
from orientscope.science.map_order import DRAW_STREAM
from orientscope.science.rotations import derived_seed
from orientscope.services import map_data as mdata
from orientscope.services import map_raster as mr
from orientscope.services.bytecache import map_cache, shared_cache
from orientscope.services.map_view import MapQuery, view_points
from orientscope.services.results import open_result
from orientscope.store import map_arrays

N = 900
VP = mr.Viewport(-2.9, 2.9, -1.45, 1.45, 60, 30)


@pytest.fixture(scope="module")
def sharded(tmp_path_factory, qm9_small):
    """A synthetic set ingested as three shards of 300 molecules, frames computed per shard."""
    src = tmp_path_factory.mktemp("synth")
    write_synth(src, SynthSpec(n=N, bias="qm9", seed=7, shard_size=300), source=qm9_small)
    data = tmp_path_factory.mktemp("data")
    meta = ingest_files(data, [src], "big", cluster="in-process", shard_size=300)
    return data, meta["id"]


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A server just started: empty map caches and an empty column-cache folder of its own."""
    monkeypatch.setenv("ORIENTSCOPE_COLUMNS_DIR", str(tmp_path / "columns"))
    for cache in (map_cache(), shared_cache()):
        cache.clear()
    yield tmp_path / "columns"
    for cache in (map_cache(), shared_cache()):
        cache.clear()


def _in_memory(data, dataset_id, table="original"):
    """The oracle: the map projected in memory by the map stage's projection, with no stored arrays or view."""
    store = open_result(data, dataset_id)
    projected = map_stage.project_table(store, table)
    seed = derived_seed(int(store.params["seed"]), DRAW_STREAM)
    return mdata.MapData(dataset_id, store.key, table, projected.ids, projected.x, projected.y,
                         projected.degenerate, seed)  # fmt: skip


def _without_read_arrays(data, dataset_id):
    """Remove the result's stored map and columns, as a store written before the map stage holds it."""
    store = open_result(data, dataset_id)
    for folder in (store.dir / map_arrays.MAP_DIR, store.dir / "columns"):
        shutil.rmtree(folder, ignore_errors=True)
    return store


def _same_answers(stored, memory):
    """The stored view and the in-memory one draw, count and click the same points."""
    assert stored.size == memory.size
    np.testing.assert_array_equal(stored.x, memory.x)
    np.testing.assert_array_equal(stored.rows, memory.rows)
    assert stored.bounds == memory.bounds
    for vp in (VP, mr.Viewport(-1.0, 0.5, -0.6, 0.4, 40, 20)):
        a, b = mr.render_map(stored, vp, budget=0), mr.render_map(memory, vp, budget=0)
        assert a.mode == b.mode == "image" and (a.n_points, a.n_drawn) == (b.n_points, b.n_drawn)
        np.testing.assert_array_equal(a.counts, b.counts)
        np.testing.assert_array_equal(a.rgba, b.rgba)
    a, b = mr.render_map(stored, VP, "density", budget=0), mr.render_map(memory, VP, "density", budget=0)
    np.testing.assert_array_equal(a.rgba, b.rgba)
    small = mr.Viewport(-0.5, 0.5, -0.3, 0.3, 60, 30)
    pa_, pb = mr.render_map(stored, small, budget=10**6), mr.render_map(memory, small, budget=10**6)
    assert pa_.mode == pb.mode == "points" and pa_.index.size > 5
    np.testing.assert_array_equal(stored.ids(pa_.index), memory.ids(pb.index))
    # region counts, small regions over the x-sorted runs and wide ones in one pass (map_raster.SCATTER_COST)
    assert stored.x_sorted
    rng = np.random.default_rng(3)
    for width in (0.05, 0.1, 0.3, 1.0, 3.0):
        x0, y0 = rng.uniform(-2.8, 1.0), rng.uniform(-1.4, 0.6)
        vp = mr.Viewport(x0, x0 + width, y0, y0 + width / 2, 10, 10)
        inside = (stored.x >= vp.x0) & (stored.x <= vp.x1) & (stored.y >= vp.y0) & (stored.y <= vp.y1)
        expected = (int(inside.sum()), np.unique(stored.rows[inside]).size)
        assert mr.region_stats(stored, vp) == mr.region_stats(memory, vp) == expected
    found = 0
    for cx, cy in rng.uniform([-2.5, -1.2], [2.5, 1.2], (40, 2)):
        i, j = mr.nearest_point(stored, cx, cy, VP.pixel_size), mr.nearest_point(memory, cx, cy, VP.pixel_size)
        assert (i is None) == (j is None)
        if i is not None:
            found += 1
            assert i == j
    assert found > 10


def test_ingest_stores_the_map_and_a_server_memory_maps_it(sharded, fresh, monkeypatch):
    data, dataset_id = sharded
    store = open_result(data, dataset_id)
    for table in mdata.TABLES:  # the map stage ran with the precompute of the ingest
        assert (map_arrays.store_map_folder(store.dir, table) / map_arrays.META).is_file()

    def no_build(*args):
        raise AssertionError("the map was built again")

    monkeypatch.setattr(map_stage, "project_table", no_build)
    served = view_points(data, MapQuery(dataset_id))
    md = served.md
    assert isinstance(md.x, np.memmap) and isinstance(served.x, np.memmap) and md.ids.mapped
    assert md.cache_nbytes() == 0  # file pages, not the heap
    assert not fresh.exists()  # nothing written outside the store
    monkeypatch.undo()
    memory = _in_memory(data, dataset_id)
    assert md.ids.tolist() == memory.ids.tolist()
    np.testing.assert_array_equal(md.x, memory.x)
    np.testing.assert_array_equal(md.y, memory.y)
    np.testing.assert_array_equal(md.degenerate, memory.degenerate)
    ids = memory.ids.tolist()
    for row in (0, 1, 299, 300, N - 1):
        assert md.row_of(ids[row]) == row == memory.row_of(ids[row])
    with pytest.raises(KeyError, match="no-such-id"):
        md.row_of("no-such-id")
    # the same view resolved from the map in memory (no stored default view): every answer equal
    _same_answers(served, _sorted_in_memory(data, dataset_id))
    # Every defined axis (the synthetic set's methane copies have none, its oblate-top copies one) of every
    # molecule with an orientation.
    shown = (~np.isnan(memory.x)).sum(axis=1)
    assert mr.region_stats(served, VP) == (shown.sum(), (shown > 0).sum())
    assert 0 < (shown < 3).sum() < N // 100


def test_a_store_written_without_the_map_gets_it_on_first_open(sharded, fresh, tmp_path):
    data, dataset_id = sharded
    copy = tmp_path / "old"
    shutil.copytree(data, copy)
    store = _without_read_arrays(copy, dataset_id)
    first = view_points(copy, MapQuery(dataset_id, table="control"))
    folder = map_arrays.store_map_folder(store.dir, "control")
    assert (folder / map_arrays.META).is_file() and isinstance(first.x, np.memmap)
    assert not (map_arrays.store_map_folder(store.dir, "original") / map_arrays.META).exists()  # only what is read
    reference = view_points(data, MapQuery(dataset_id, table="control"))  # the map the ingest stored
    np.testing.assert_array_equal(first.x, reference.x)
    np.testing.assert_array_equal(first.rows, reference.rows)
    assert first.md.ids.tolist() == reference.md.ids.tolist()
    # another view of the stored map (a subset of axes) is built from the memory maps
    two = view_points(copy, MapQuery(dataset_id, axes="13", table="control"))
    assert two.size == int((~np.isnan(first.md.x[:, [0, 2]])).sum()) >= 2 * N - N // 50
    assert set(np.unique(two.axis)) == {1, 3}


def test_a_store_the_server_cannot_write_gets_its_map_beside_the_columns(sharded, fresh, tmp_path, monkeypatch):
    data, dataset_id = sharded
    copy = tmp_path / "ro"
    shutil.copytree(data, copy)
    store = _without_read_arrays(copy, dataset_id)
    real = map_arrays.write_map_arrays

    def refuse_store(folder, *args):
        if Path(folder).is_relative_to(copy):
            raise PermissionError(f"read-only: {folder}")
        return real(folder, *args)

    monkeypatch.setattr(map_arrays, "write_map_arrays", refuse_store)
    served = view_points(copy, MapQuery(dataset_id))
    assert not (map_arrays.store_map_folder(store.dir, "original")).exists()
    folders = list(fresh.glob(f"map-{dataset_id}-*-original-*"))
    assert len(folders) == 1 and (folders[0] / map_arrays.META).is_file() and isinstance(served.x, np.memmap)


def test_a_stale_stored_map_is_rewritten_on_open(sharded, fresh, tmp_path):
    data, dataset_id = sharded
    copy = tmp_path / "stale"
    shutil.copytree(data, copy)
    store = open_result(copy, dataset_id)
    folder = map_arrays.store_map_folder(store.dir, "original")
    good = view_points(copy, MapQuery(dataset_id))
    # frames recomputed since: the stored signature no longer matches, so the stage runs again
    meta_path = folder / map_arrays.META
    meta = json.loads(meta_path.read_text())
    meta["signature"]["frames_completed_at"] = 1.0
    meta_path.write_text(json.dumps(meta))
    map_cache().clear()
    again = view_points(copy, MapQuery(dataset_id))
    assert json.loads(meta_path.read_text())["signature"] == map_stage.map_signature(store, "original")
    assert isinstance(again.x, np.memmap)
    np.testing.assert_array_equal(again.x, good.x)


def test_the_map_stage_skips_a_current_folder(sharded, monkeypatch):
    data, dataset_id = sharded
    store = open_result(data, dataset_id)

    def no_build(*args):
        raise AssertionError("a current map was projected again")

    monkeypatch.setattr(map_stage, "project_table", no_build)
    assert map_stage.write_maps(store) == [map_arrays.store_map_folder(store.dir, t) for t in mdata.TABLES]


def _sorted_in_memory(data, dataset_id):
    """The default view of the in-memory map (no stored arrays), resolved as a server resolves it."""
    from orientscope.services import map_view

    md = _in_memory(data, dataset_id)
    geo = mdata.SortedPoints(*mdata.sorted_points(md, mdata.AXES, None), md=md)
    colors = map_view.point_colors(data, MapQuery(dataset_id), geo.rows, geo.axis, [])
    return map_view.MapPoints(
        MapQuery(dataset_id), md, geo.x, geo.y, geo.rows, geo.axis, colors, None, md.n_molecules, None,
        x_sorted=True, geometry=geo,
    )  # fmt: skip
