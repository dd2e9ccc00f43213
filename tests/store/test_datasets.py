import numpy as np
import pytest

from orientscope.core.errors import NotFoundError
from orientscope.store import datasets as ds
from orientscope.store.shards import save_sharded


def test_round_trip_keeps_everything(tmp_path, qm9_small):
    sub = qm9_small.subset(np.arange(30))
    save_sharded(tmp_path, "q", sub, name="Q", source="test")
    back = ds.load_dataset(tmp_path, "q")
    np.testing.assert_array_equal(back.positions_angstrom, sub.positions_angstrom)
    np.testing.assert_array_equal(back.atomic_numbers, sub.atomic_numbers)
    np.testing.assert_array_equal(back.offsets, sub.offsets)
    assert list(back.ids) == list(sub.ids) and list(back.smiles) == list(sub.smiles)
    assert back.properties.equals(sub.properties)
    assert back.property_units == sub.property_units
    assert back.frame_dependent == sub.frame_dependent == {f"alpha_{c}" for c in ("xx", "xy", "xz", "yy", "yz", "zz")}
    assert ds.read_meta(tmp_path, "q")["frame_dependent"] == sorted(sub.frame_dependent)
    assert ds.list_dataset_ids(tmp_path) == ["q"]


def test_ids_are_validated_and_delete_is_scoped(tmp_path, qm9_small):
    with pytest.raises(ValueError, match="invalid dataset id"):
        ds.dataset_dir(tmp_path, "../etc")
    sub = qm9_small.subset([0, 1])
    save_sharded(tmp_path, "a", sub, name="A", source="t")
    save_sharded(tmp_path, "b", sub, name="B", source="t")
    ds.delete_dataset(tmp_path, "a")
    assert ds.list_dataset_ids(tmp_path) == ["b"]
    with pytest.raises(NotFoundError, match="'a'"):
        ds.read_meta(tmp_path, "a")
