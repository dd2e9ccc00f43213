"""Reading and validating predictions files (CSV and Parquet)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from orientscope.core.errors import DatasetError
from orientscope.core.limits import LimitExceeded, Limits
from orientscope.loaders.predictions import check_header, read_predictions

KNOWN = {"gap", "r2"}


def _csv(tmp_path, text, name="p.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_csv_ids_are_exact_strings_and_extra_columns_ignored(tmp_path):
    path = _csv(tmp_path, "id,property,stored,rotated,note\n007,gap,0.1,0.2,x\n7,gap,0.3,0.3,y\n")
    p = read_predictions(path, KNOWN)
    assert list(p.rows["id"]) == ["007", "7"] and "note" not in p.rows
    assert p.format == "csv" and not p.has_true and np.isnan(p.rows["true"]).all()


def test_parquet_integer_ids_become_strings(tmp_path):
    path = tmp_path / "p.parquet"
    pd.DataFrame({"id": [1, 2], "property": "gap", "stored": [0.1, 0.2], "rotated": [0.1, 0.3]}).to_parquet(path)
    p = read_predictions(path, KNOWN)
    assert list(p.rows["id"]) == ["1", "2"] and p.format == "parquet"


def test_unknown_property_needs_true(tmp_path):
    with pytest.raises(DatasetError, match="unknown property 'mine'"):
        check_header(_csv(tmp_path, "id,property,stored,rotated\n1,mine,0.1,0.2\n"), KNOWN)
    p = read_predictions(_csv(tmp_path, "id,property,stored,rotated,true\n1,mine,0.1,0.2,0.0\n", "t.csv"), KNOWN)
    assert p.has_true and p.rows["true"].iloc[0] == 0.0
    with pytest.raises(DatasetError, match="unknown property 'mine'"):  # a row without its true value
        read_predictions(_csv(tmp_path, "id,property,stored,rotated,true\n1,mine,0.1,0.2,\n", "u.csv"), KNOWN)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id,property,stored,rotated\n1,gap,inf,0.2\n", r"line 2 \(id '1'\): 'stored' is NaN, infinite or empty"),
        ("id,property,stored,rotated\n1,gap,0.1,\n", "'rotated' is NaN"),
        ("id,property,stored,rotated,split\n1,gap,0.1,0.1,val\n", "'split' must be one of"),
        ("id,property,stored,rotated\n1,gap,0.1,abc\n", "cannot read the predictions"),
        ("id,property,stored,rotated\n", "no rows"),
        # A repeated copy would weigh twice in its molecule's mean error.
        ("id,property,copy,stored,rotated\nw,gap,0,1,2\nw,gap,1,1,3\nw,gap,0,1,2\n", r"line 4 \(id 'w'\): this \(id, "),
        ("id,property,stored,rotated,split\nw,gap,1,2,train\nw,gap,1,3,test\n", r"line 3 \(id 'w'\): 'split' differs"),
    ],
)
def test_content_errors_name_the_row(tmp_path, text, message):
    with pytest.raises(DatasetError, match=message):
        read_predictions(_csv(tmp_path, text), KNOWN)


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("id,property,stored,rotated\n1,gap,nan,0.2\n", "Predictions must be finite numbers."),
        ("id,property,stored,rotated,split\n1,gap,0.1,0.1,val\n", None),
        ("id,property,copy,stored,rotated\n1,gap,0,1,2\n1,gap,0,1,2\n", "one row per property"),
    ],
)
def test_each_error_states_its_own_rule(tmp_path, text, rule):
    """A bad split or a repeated row is not blamed on the numbers."""
    with pytest.raises(DatasetError) as err:
        read_predictions(_csv(tmp_path, text), KNOWN)
    assert (rule is None or rule in str(err.value)) and ("finite" in str(err.value)) == bool(rule and "finite" in rule)


def test_copies_without_a_copy_column_and_one_split_per_molecule_are_accepted(tmp_path):
    text = "id,property,stored,rotated,split\nw,gap,1,2,test\nw,gap,1,3,test\nw,r2,5,5,test\nm,gap,0,0,train\n"
    p = read_predictions(_csv(tmp_path, text), KNOWN)
    assert p.n_rows == 4 and list(p.rows["split"]) == ["test", "test", "test", "train"]
    blank = read_predictions(
        _csv(tmp_path, "id,property,copy,stored,rotated\nw,gap,,1,2\nw,gap,,1,3\n", "b.csv"), KNOWN
    )
    assert blank.n_rows == 2  # copy cells left empty: rows without a copy number, as without the column


def test_a_header_without_rows_is_refused_by_the_header_check(tmp_path):
    """The check an upload gets before it is accepted, for CSV and Parquet."""
    with pytest.raises(DatasetError, match="header but no rows"):
        check_header(_csv(tmp_path, "id,property,stored,rotated\n"), KNOWN)
    path = tmp_path / "p.parquet"
    pd.DataFrame({"id": [], "property": [], "stored": [], "rotated": []}).astype(str).to_parquet(path)
    with pytest.raises(DatasetError, match="p.parquet: the predictions file has a header but no rows"):
        check_header(path, KNOWN)


def test_row_limit(tmp_path):
    rows = "".join(f"{i},gap,0.1,0.2\n" for i in range(5))
    with pytest.raises(LimitExceeded, match="ORIENTSCOPE_MAX_PREDICTION_ROWS"):
        read_predictions(_csv(tmp_path, "id,property,stored,rotated\n" + rows), KNOWN, Limits(max_prediction_rows=4))
