import numpy as np
import pandas as pd

from orientscope.core.dataset import concat_molecule_sets, from_molecules
from orientscope.store import datasets as ds
from orientscope.store.shards import (
    ShardRef,
    duplicate_in_partition,
    id_partition,
    read_shard,
    shard_refs,
    write_shard,
)
from tests.molecules import METHANE, WATER


def _set(ids: list[str]):
    mols = [WATER if k % 2 else METHANE for k in range(len(ids))]
    return from_molecules(mols, ids=np.array(ids), properties=pd.DataFrame({"e": np.arange(len(ids), dtype=float)}))


def test_id_partitions_are_stable_and_cover_every_id():
    ids = np.array([f"m{k}" for k in range(1000)])
    parts = id_partition(ids, 7)
    assert parts.min() >= 0 and parts.max() < 7 and len(np.unique(parts)) == 7
    np.testing.assert_array_equal(id_partition(ids[::-1], 7), parts[::-1])  # a function of the id alone


def test_a_duplicate_is_found_in_its_partition_only(tmp_path):
    refs = []
    for k, ids in enumerate([["a", "b", "c"], ["d", "e", "a"]]):
        folder = tmp_path / f"s{k}"
        write_shard(folder, _set(ids))
        refs.append(ShardRef(k, str(folder), 3 * k, 3))
    home = int(id_partition(np.array(["a"]), 4)[0])
    assert duplicate_in_partition(refs, home, 4) == "a"
    assert all(duplicate_in_partition(refs, p, 4) is None for p in range(4) if p != home)


def test_a_single_folder_dataset_reads_as_one_shard(tmp_path):
    mols = _set(["x", "y", "z"])
    meta = ds.save_dataset(tmp_path, "plain", mols, name="plain", source="test")
    (ref,) = shard_refs(tmp_path, "plain")
    assert (ref.start, ref.n_molecules) == (0, 3)
    back = read_shard(ref, meta)
    np.testing.assert_array_equal(back.positions_angstrom, mols.positions_angstrom)
    both = concat_molecule_sets([back, _set(["w"])])
    assert list(both.ids) == ["x", "y", "z", "w"] and list(both.properties["e"]) == [0.0, 1.0, 2.0, 0.0]
