"""Files of molecule ids (export --ids, audit-model --ids): a split file is not a list of held-out ids."""

from __future__ import annotations

import pandas as pd
import pytest

from orientscope.core.errors import DatasetError
from orientscope.loaders.ids import read_ids


def test_a_split_file_is_refused_as_held_out_ids_unless_every_row_is_test(tmp_path):
    mixed = tmp_path / "split.csv"
    mixed.write_text("id,split\n007,test\n8,train\n9,train\n10,test\n")
    with pytest.raises(DatasetError, match=r"split\.csv: its 'split' column marks 2 of the 4 ids other than 'test' "
                                           r"\(e\.g\. 'train' for id '8'\)"):  # fmt: skip
        read_ids(mixed, held_out=True)
    assert read_ids(mixed) == ["007", "8", "9", "10"]  # an export takes every listed id, whatever its split
    parquet = tmp_path / "split.parquet"
    pd.DataFrame({"id": ["a", "b"], "split": ["test", "validation"]}).to_parquet(parquet)
    with pytest.raises(DatasetError, match="'validation' for id 'b'"):
        read_ids(parquet, held_out=True)
    held_out = tmp_path / "test.csv"
    held_out.write_text("id,split\n007,test\n10,test\n")
    assert read_ids(held_out, held_out=True) == ["007", "10"]
