"""Memory-mapped columns of a sharded dataset hold exactly the stored molecules and frames."""

from __future__ import annotations

import numpy as np
import pytest

from backend.pipeline.precompute import make_params
from backend.pipeline.sharded_ingest import ingest_files
from backend.pipeline.synth import SynthSpec, write_synth
from backend.store import columns as cols
from backend.store import datasets as ds
from backend.store.results import ResultStore

N = 1500


@pytest.fixture(scope="module")
def built(tmp_path_factory, qm9_small):
    root = tmp_path_factory.mktemp("columns")
    write_synth(root / "npz", SynthSpec(n=N, bias="uniform", seed=2, shard_size=600), source=qm9_small)
    meta = ingest_files(root / "data", [root / "npz"], "set", cluster="in-process", shard_size=600)
    store = ResultStore(root / "data", meta["id"], make_params())
    folder = cols.build_columns(root / "data", meta["id"], meta, store.dir, root / "cols" / "set", has_scores=True)
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
    assert np.isfinite(arrays["scores"]).all()
    assert isinstance(arrays["positions"], np.memmap)


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
    assert cols.build_columns(data, meta["id"], meta, store.dir, folder, has_scores=True) == folder
    assert (folder / cols.META).stat().st_mtime_ns == before
