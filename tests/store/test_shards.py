import numpy as np
import pandas as pd
import pytest

from orientscope.core.dataset import concat_molecule_sets, from_molecules
from orientscope.core.errors import OldLayout
from orientscope.store.shards import (
    ShardRef,
    duplicate_in_partition,
    id_partition,
    read_shard,
    save_sharded,
    shard_refs,
    write_shard,
)
from tests.molecules import METHANE, WATER
from tests.old_layout import write_old_layout


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


def test_shards_read_back_in_order_and_a_single_folder_dataset_is_refused(tmp_path):
    mols = _set(["x", "y", "z"])
    meta = save_sharded(tmp_path, "set", mols, name="set", source="test", shard_size=2)
    refs = shard_refs(tmp_path, "set")
    assert [(r.start, r.n_molecules) for r in refs] == [(0, 2), (2, 1)]
    back = concat_molecule_sets([read_shard(r, meta) for r in refs] + [_set(["w"])])
    np.testing.assert_array_equal(back.positions_angstrom[: mols.offsets[-1]], mols.positions_angstrom)
    assert list(back.ids) == ["x", "y", "z", "w"] and list(back.properties["e"]) == [0.0, 1.0, 2.0, 0.0]
    write_old_layout(tmp_path, "plain", mols)
    with pytest.raises(OldLayout, match="run `orientscope migrate plain`"):
        shard_refs(tmp_path, "plain")
