import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from orientscope.core.errors import DatasetError
from orientscope.loaders.detect import load_path
from orientscope.loaders.parquet_orientations import write_parquet
from orientscope.store.datasets import dataset_dir
from orientscope.store.shards import SHARDS, save_sharded


def test_one_file_round_trip(tmp_path, qm9_small):
    mols = qm9_small.subset(np.arange(50))
    write_parquet(tmp_path / "q.parquet", mols)
    back = load_path(tmp_path / "q.parquet", "parquet").mols
    assert list(back.ids) == list(mols.ids) and list(back.smiles) == list(mols.smiles)
    np.testing.assert_array_equal(back.positions_angstrom, mols.positions_angstrom)
    np.testing.assert_array_equal(back.atomic_numbers, mols.atomic_numbers)
    np.testing.assert_array_equal(back.properties.to_numpy(), mols.properties.to_numpy())


def test_store_folder_round_trip(tmp_path, qm9_small):
    mols = qm9_small.subset(np.arange(40))
    meta = save_sharded(tmp_path, "x", mols, name="X", source="test")
    back = load_path(
        dataset_dir(tmp_path, "x") / SHARDS / meta["shards"][0]["name"], "parquet"
    ).mols  # one shard's folder
    assert list(back.ids) == list(mols.ids)
    np.testing.assert_array_equal(back.positions_angstrom, mols.positions_angstrom)
    assert list(back.properties.columns) == list(mols.properties.columns)


def test_row_with_wrong_coordinate_count_is_skipped(tmp_path):
    rows = {"id": [f"m{i}" for i in range(25)], "z": [[8, 1, 1]] * 25, "pos": [list(np.arange(9.0))] * 25}
    rows["pos"][7] = [0.0] * 8
    pq.write_table(pa.table(rows), tmp_path / "a.parquet")
    loaded = load_path(tmp_path / "a.parquet", "parquet")
    assert loaded.n_skipped == 1 and "m7" not in loaded.mols.ids
    assert "row 7 (molecule 'm7'): 3 atomic numbers but 8 coordinates" in loaded.problems[0]


def test_missing_columns(tmp_path):
    pq.write_table(pa.table({"id": ["a"], "x": [1.0]}), tmp_path / "a.parquet")
    with pytest.raises(DatasetError, match=r"missing columns \['z', 'pos'\]"):
        load_path(tmp_path / "a.parquet", "parquet")
