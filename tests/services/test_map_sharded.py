"""The map of a sharded dataset (frames read shard by shard) is the map of the same molecules in memory."""

from __future__ import annotations

import numpy as np
import pytest

from orientscope.core.palette import AXIS_COLORS
from orientscope.pipeline.sharded_ingest import ingest_files
from orientscope.pipeline.synth import SynthSpec, write_synth
from orientscope.science.frames import compute_frames
from orientscope.science.sphere import axes_lonlat_deg, mollweide_xy
from orientscope.services import map_raster as mr
from orientscope.services.map_data import MapData
from orientscope.services.map_view import AXIS_NAMES, MapColors, MapPoints, MapQuery, view_points
from orientscope.store import datasets as ds

N = 900
VP = mr.Viewport(-2.9, 2.9, -1.45, 1.45, 60, 30)


@pytest.fixture(scope="module")
def sharded(tmp_path_factory, qm9_small):
    """A synthetic set ingested as three shards of 300 molecules, frames computed per shard."""
    src = tmp_path_factory.mktemp("synth")
    write_synth(src, SynthSpec(n=N, bias="qm9", seed=5, shard_size=300), source=qm9_small)
    data = tmp_path_factory.mktemp("data")
    meta = ingest_files(data, [src], "big", cluster="in-process", shard_size=300)
    assert meta["layout"] == "sharded" and len(meta["shards"]) == 3
    return data, meta["id"]


def _in_memory(data, dataset_id, seed: int) -> MapPoints:
    """The same molecules' map built independently: frames of the whole set at once, one projection
    (``seed``: the draw order's key)."""
    mols = ds.load_dataset(data, dataset_id)
    frames = compute_frames(mols.positions_angstrom, mols.offsets, mols.atomic_numbers)
    x, y = (a.astype(np.float32) for a in mollweide_xy(*axes_lonlat_deg(frames.rotations)))
    # Only the axes the symmetry defines are points: none without orientation, the defined one of an axis-only one.
    undefined = (frames.orientation != "full")[:, None] & (np.arange(1, 4)[None, :] != frames.defined_axis[:, None])
    x[undefined], y[undefined] = np.nan, np.nan
    md = MapData(dataset_id, "memory", "original", np.asarray(mols.ids), x, y, frames.degenerate, seed)
    rows, axes = md.points()
    px, py = md.xy(rows, axes)
    colors = MapColors(
        "categorical", "axis", codes=(axes - 1).astype(np.uint8), labels=tuple(AXIS_NAMES.values()),
        colors=tuple(AXIS_COLORS[a] for a in (1, 2, 3)),
    )  # fmt: skip
    return MapPoints(MapQuery(dataset_id), md, px, py, rows, axes, colors, None, md.n_molecules, None)


def test_the_sharded_map_is_the_map_of_the_same_molecules_in_memory(sharded):
    data, dataset_id = sharded
    served = view_points(data, MapQuery(dataset_id))
    memory = _in_memory(data, dataset_id, served.md.seed)
    # Every defined axis: the synthetic set's methane copies have none, its oblate-top copies one.
    assert served.x_sorted and served.size == memory.size == int((~np.isnan(memory.md.x)).sum()) >= 3 * N - N // 50
    assert served.md.ids.tolist() == memory.md.ids.tolist()
    np.testing.assert_array_equal(served.md.x, memory.md.x)
    np.testing.assert_array_equal(served.md.y, memory.md.y)
    # the image: counts per pixel and colours, exactly
    a, b = mr.render_map(served, VP, budget=0), mr.render_map(memory, VP, budget=0)
    drawn = int((~np.isnan(memory.md.x)).any(axis=1).sum())  # the molecules with an orientation
    assert a.mode == b.mode == "image" and a.n_drawn == b.n_drawn == drawn >= N - N // 100
    np.testing.assert_array_equal(a.counts, b.counts)
    np.testing.assert_array_equal(a.rgba, b.rgba)
    # a click: the same molecule's point, from the sorted view and the unsorted one
    rng = np.random.default_rng(2)
    found = 0
    for cx, cy in rng.uniform([-2.5, -1.2], [2.5, 1.2], (40, 2)):
        i, j = mr.nearest_point(served, cx, cy, VP.pixel_size), mr.nearest_point(memory, cx, cy, VP.pixel_size)
        assert (i is None) == (j is None)
        if i is not None:
            found += 1
            assert (served.x[i], served.y[i]) == (memory.x[j], memory.y[j])
    assert found > 10
    # points mode: the same points of a region, in the same draw order
    small = mr.Viewport(-0.5, 0.5, -0.3, 0.3, 60, 30)
    pa, pb = mr.render_map(served, small, budget=10**6), mr.render_map(memory, small, budget=10**6)
    assert pa.mode == pb.mode == "points" and pa.index.size > 5
    np.testing.assert_array_equal(served.ids(pa.index), memory.ids(pb.index))
    np.testing.assert_array_equal(served.axis[pa.index], memory.axis[pb.index])


def test_the_default_map_of_a_sharded_set_reads_only_its_frames(sharded, monkeypatch):
    """Axis colours, no group, no SMARTS: the map never loads the dataset's molecules (at 10M, 180M atoms)."""
    data, dataset_id = sharded
    import orientscope.services.map_view as mv

    def no_molecules(*args):
        raise AssertionError("the default map loaded the dataset view")

    monkeypatch.setattr(mv, "get_view", no_molecules)
    points = view_points(data, MapQuery(dataset_id, axes="13"))
    assert points.size == int((~np.isnan(points.md.x[:, [0, 2]])).sum()) >= 2 * N - N // 50
    assert set(np.unique(points.axis)) == {1, 3}
    row = points.md.row_of(points.md.ids[N - 1])
    assert row == N - 1
