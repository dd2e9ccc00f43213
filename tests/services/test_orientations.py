"""The orientations table and its encodings."""

import io

import pandas as pd
import pyarrow.parquet as pq
import pytest

from orientscope.services.errors import InvalidInput
from orientscope.services.orientations import COLUMNS, orientations_bytes, orientations_table
from tests.services.conftest import TOY_IDS, TOY_SCORES


def test_table_columns_and_scores(toy_dir):
    df = orientations_table(toy_dir, "toy")
    assert list(df.columns) == COLUMNS and list(df["id"]) == TOY_IDS
    assert df["classifier_score"].tolist() == pytest.approx(TOY_SCORES)
    assert df.loc[df["id"] == "co2", "degenerate"].item()
    # the class the statistics read: methane none, CO2 and benzene one axis, the rest full frames
    classes = dict(zip(df["id"], df["orientation"], strict=True))
    assert (classes["methane"], classes["co2"], classes["benzene"]) == ("none", "axis", "axis")
    assert {c for m, c in classes.items() if m not in ("methane", "co2", "benzene")} == {"full"}


def test_encodings_agree_and_are_cached(toy_dir):
    data, media, name = orientations_bytes(toy_dir, "toy", "parquet")
    assert media == "application/vnd.apache.parquet" and name.endswith(".parquet")
    assert orientations_bytes(toy_dir, "toy", "parquet")[0] is data
    from_parquet = pq.read_table(io.BytesIO(data)).to_pandas()
    from_csv = pd.read_csv(io.BytesIO(orientations_bytes(toy_dir, "toy", "csv")[0]), keep_default_na=False)
    pd.testing.assert_series_equal(from_parquet["r01"], from_csv["r01"], check_exact=True)


def test_unknown_format(toy_dir):
    with pytest.raises(InvalidInput, match="xlsx"):
        orientations_bytes(toy_dir, "toy", "xlsx")
