"""Re-cutting a single-folder dataset and its results into shards, on tiny constructed data."""

import numpy as np
import pandas as pd
import pytest

from orientscope.core.dataset import from_molecules
from orientscope.core.errors import DatasetError
from orientscope.store import datasets as ds
from orientscope.store.relayout import cut_molecules, cut_result
from orientscope.store.results import ResultStore
from orientscope.store.shards import SHARDED, shard_array_paths, shard_refs, shard_table_paths
from tests.molecules import CO2, METHANE, WATER, asymmetric
from tests.old_layout import write_old_layout

IDS = ["water", "co2", "methane", "a0", "a1", "a2", "a3"]
PARAMS = {"frame": "pca", "sign": "max", "seed": 0, "limit": None}


def _store(tmp_path, smiles=None):
    mols = from_molecules(
        [WATER, CO2, METHANE, *(asymmetric(seed=s) for s in range(4))],
        ids=np.array(IDS),
        smiles=smiles,
        properties=pd.DataFrame({"e": np.arange(7) / 3.0}),
        property_units={"e": "eV"},
    )
    data = tmp_path / "old"
    return data, write_old_layout(data, "toy", mols), mols


def _sharded(data, tmp_path, meta, shard_size):
    """Cut the molecules into a new data dir; (new data dir, its meta, its shard refs)."""
    new = tmp_path / "new"
    shards = cut_molecules(ds.dataset_dir(data, "toy"), ds.dataset_dir(new, "toy"), meta, shard_size)
    new_meta = {**meta, "layout": SHARDED, "shards": shards}
    ds.write_meta(new, "toy", new_meta)
    return new, new_meta, shard_refs(new, "toy", new_meta)


@pytest.mark.parametrize("smiles", [None, np.array(["O", "O=C=O", "C", "", "", "", ""])], ids=["no smiles", "smiles"])
def test_molecules_are_cut_in_order_and_read_back_the_same(tmp_path, smiles):
    data, meta, mols = _store(tmp_path, smiles)
    new, new_meta, refs = _sharded(data, tmp_path, meta, 3)
    assert [(s["start"], s["n_molecules"]) for s in new_meta["shards"]] == [(0, 3), (3, 3), (6, 1)]
    assert sum(s["n_atoms"] for s in new_meta["shards"]) == meta["n_atoms"]
    back = ds.load_dataset(new, "toy")
    np.testing.assert_array_equal(back.ids, mols.ids)
    np.testing.assert_array_equal(back.positions_angstrom, mols.positions_angstrom)
    np.testing.assert_array_equal(back.atomic_numbers, mols.atomic_numbers)
    np.testing.assert_array_equal(back.offsets, mols.offsets)
    assert (back.smiles is None) == (smiles is None)
    pd.testing.assert_frame_equal(back.properties, mols.properties, check_exact=True)


def test_per_molecule_tables_are_cut_and_summaries_copied(tmp_path):
    data, meta, _ = _store(tmp_path)
    old = ResultStore(data, "toy", PARAMS)
    frames = pd.DataFrame({"id": IDS, "qw": np.linspace(0, 1, 7)})
    fps = pd.DataFrame({"id": IDS, **{f"fp{i:02d}": np.arange(7, dtype=np.uint64) * (i + 1) for i in range(32)}})
    groups = pd.DataFrame({"group": np.arange(7), "size": np.ones(7, int)})  # as many rows as molecules: not cut
    old.write_stage("frames", {"report": {"n": 7}}, {"original": frames, "control": frames}, 1.0)
    chem = pd.DataFrame({"id": IDS, "formula_group": np.arange(7)})
    old.write_stage(
        "chemistry", {"report": {}}, {"molecules": chem, "fingerprints": fps, "groups_formula": groups}, 1.0
    )
    new, _, refs = _sharded(data, tmp_path, meta, 3)
    store = ResultStore(new, "toy", PARAMS)
    cut = ["chemistry.fingerprints", "chemistry.molecules", "frames.control", "frames.original"]
    assert sorted(cut_result(old.dir, store.dir, refs)) == cut
    assert len(shard_table_paths(store.dir, "frames", "original")) == 3
    assert [p.name for p in shard_array_paths(store.dir, "chemistry", "fingerprints")] == [
        "fingerprints-00000.npy", "fingerprints-00001.npy", "fingerprints-00002.npy"
    ]  # fmt: skip
    assert (store.dir / "chemistry.groups_formula.parquet").is_file()
    assert store.manifest() == old.manifest() and store.section("frames") == old.section("frames")
    pd.testing.assert_frame_equal(store.table("frames", "original").to_pandas(), frames, check_exact=True)
    pd.testing.assert_frame_equal(store.table("chemistry", "fingerprints").to_pandas(), fps, check_exact=True)
    pd.testing.assert_frame_equal(store.table("chemistry", "groups_formula").to_pandas(), groups, check_exact=True)


@pytest.mark.parametrize(
    "ids, message",
    [(IDS[::-1], "not the dataset's molecules in order"), (IDS[:6], "cannot be cut")],
    ids=["reordered", "a row short"],
)
def test_a_table_that_is_not_the_molecules_in_order_is_refused(tmp_path, ids, message):
    data, meta, _ = _store(tmp_path)
    old = ResultStore(data, "toy", PARAMS)
    old.write_stage("models", {"report": {}}, {"scores": pd.DataFrame({"id": ids, "p": np.zeros(len(ids))})}, 1.0)
    new, _, refs = _sharded(data, tmp_path, meta, 3)
    with pytest.raises(DatasetError, match=message):
        cut_result(old.dir, ResultStore(new, "toy", PARAMS).dir, refs)
