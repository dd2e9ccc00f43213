"""Memory-mapped columns of a sharded dataset hold exactly the stored molecules and frames."""

from __future__ import annotations

import numpy as np
import pytest

from orientscope.pipeline.precompute import make_params
from orientscope.pipeline.sharded_ingest import ingest_files
from orientscope.pipeline.synth import SynthSpec, write_synth
from orientscope.store import columns as cols
from orientscope.store import datasets as ds
from orientscope.store.results import ResultStore

N = 1500


@pytest.fixture(scope="module")
def built(tmp_path_factory, qm9_small):
    root = tmp_path_factory.mktemp("columns")
    write_synth(root / "npz", SynthSpec(n=N, bias="uniform", seed=2, shard_size=600), source=qm9_small)
    meta = ingest_files(root / "data", [root / "npz"], "set", cluster="in-process", shard_size=600)
    store = ResultStore(root / "data", meta["id"], make_params())
    signature = cols.columns_signature(meta, store.manifest(), None)
    folder = cols.build_columns(
        root / "data", meta["id"], meta, store.dir, root / "cols" / "set", has_scores=True, signature=signature
    )
    return root / "data", meta, store, folder


def test_columns_equal_the_stored_molecules_and_frames(built):
    data, meta, store, folder = built
    arrays, info = cols.open_columns(folder)
    mols = ds.load_dataset(data, meta["id"])
    np.testing.assert_array_equal(arrays["ids"], mols.ids)
    np.testing.assert_array_equal(arrays["offsets"], mols.offsets)
    np.testing.assert_array_equal(arrays["z"], mols.atomic_numbers)
    np.testing.assert_array_equal(arrays["positions"], mols.positions_angstrom)
    np.testing.assert_array_equal(arrays["properties"], mols.properties.to_numpy(np.float64))
    assert info["properties"] == list(mols.properties.columns)
    frames = store.table("frames", "original").to_pandas()
    np.testing.assert_array_equal(arrays["quaternions"], frames[["qx", "qy", "qz", "qw"]].to_numpy())
    full = frames["orientation"].to_numpy() == "full"  # a molecule without a full frame has no score
    assert np.isfinite(arrays["scores"][full]).all() and np.isnan(arrays["scores"][~full]).all()
    # Plain arrays over the maps (np.memmap's Python __getitem__ cost ~0.1 ms per served molecule).
    assert type(arrays["positions"]) is np.ndarray and cols.mmap_base(arrays["positions"]) is not None


def test_id_index_finds_every_id(built):
    _, _, _, folder = built
    arrays, _ = cols.open_columns(folder)
    assert (np.diff(arrays["id_hash"].astype(np.float64)) >= 0).all()
    assert sorted(arrays["id_order"]) == list(range(N))
    hashes = cols.hash_ids(arrays["ids"])
    np.testing.assert_array_equal(hashes[arrays["id_order"]], arrays["id_hash"])


def test_building_again_keeps_the_finished_folder(built):
    data, meta, store, folder = built
    before = (folder / cols.META).stat().st_mtime_ns
    signature = cols.columns_signature(meta, store.manifest(), None)  # the one it was built with: current
    assert cols.build_columns(data, meta["id"], meta, store.dir, folder, True, signature) == folder
    assert (folder / cols.META).stat().st_mtime_ns == before


def test_reader_rows_equal_the_mapped_columns(built):
    _, _, _, folder = built
    arrays, _ = cols.open_columns(folder)
    reader = cols.ColumnReader(folder, list(arrays))
    rows = np.random.default_rng(3).integers(0, N, 40)
    for name, array in arrays.items():
        for i in [0, *rows.tolist(), len(array) - 1]:
            got = reader.row(name, i)
            np.testing.assert_array_equal(got, array[i])
            assert array.dtype.kind == "U" or np.asarray(got).dtype == array.dtype  # a str scalar is as long as it is
        np.testing.assert_array_equal(reader.take(name, rows), array[rows])
        np.testing.assert_array_equal(reader.span(name, 5, 17), array[5:17])
        assert reader.take(name, []).shape == (0, *array.shape[1:])


def test_reader_refuses_rows_outside_the_column(built):
    _, _, _, folder = built
    reader = cols.ColumnReader(folder, ["quaternions", "ids"])
    for bad in (N, -1):
        with pytest.raises(IndexError):
            reader.row("quaternions", bad)
        with pytest.raises(IndexError):
            reader.take("ids", [0, bad])
    with pytest.raises(IndexError):
        reader.span("quaternions", N - 1, N + 1)


@pytest.mark.parametrize("block", [1, 2, 7, 512])
def test_id_index_finds_every_id_whatever_the_block(built, block):
    _, _, _, folder = built
    arrays, _ = cols.open_columns(folder)
    index = cols.IdIndex(cols.ColumnReader(folder, ["ids", "id_hash", "id_order"]), arrays["id_hash"], block=block)
    assert [index.row_of(str(m)) for m in arrays["ids"]] == list(range(N))
    assert index.row_of("no-such-molecule") is None


def test_id_index_checks_ids_of_equal_hashes_across_blocks(tmp_path):
    # Rows 0-5 all claim the hash of "target" (as colliding ids would); only row 4 holds it.
    # The run of equal hashes crosses block edges, so the lookup must read the block before it too.
    ids = np.array(["aa", "bb", "cc", "dd", "target", "ee", "ff"])
    h = cols.hash_ids(np.array(["target"]))[0]
    other = cols.hash_ids(np.array(["ff"]))[0]
    hashes = np.array([h] * 6 + [other], dtype=np.uint64)
    order = np.array([0, 1, 2, 3, 4, 5, 6])
    if other < h:
        hashes, order = np.roll(hashes, 1), np.roll(order, 1)
    for name, values in [("ids", ids), ("id_hash", hashes), ("id_order", order)]:
        np.save(tmp_path / f"{name}.npy", values)
    reader = cols.ColumnReader(tmp_path, ["ids", "id_hash", "id_order"])
    for block in (1, 2, 3, 4):
        index = cols.IdIndex(reader, np.load(tmp_path / "id_hash.npy", mmap_mode="r"), block=block)
        assert index.row_of("target") == 4
        assert index.row_of("ff") == 6
        assert index.row_of("aa") is None  # its hash is not in the index
