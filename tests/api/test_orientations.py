"""GET /api/datasets/{id}/orientations?format=json|csv|parquet."""

import io

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from orientscope.core.orientations_schema import R_COLUMNS
from orientscope.services.results import open_result


@pytest.fixture(scope="module")
def stored(api_data):
    return open_result(api_data, "qm9").table("frames", "original").to_pandas()


def _read(fmt: str, r) -> pd.DataFrame:
    if fmt == "json":
        return pd.DataFrame(r.json())
    if fmt == "csv":
        return pd.read_csv(
            io.StringIO(r.text), dtype={"id": str, "degenerate_reason": str}, keep_default_na=False, na_values=[""]
        )
    return pq.read_table(io.BytesIO(r.content)).to_pandas()


@pytest.mark.parametrize("fmt", ["json", "csv", "parquet"])
def test_every_format_carries_the_stored_frames(client, stored, fmt):
    r = client.get("/api/datasets/qm9/orientations", params={"format": fmt})
    assert r.status_code == 200
    df = _read(fmt, r)
    assert len(df) == 400
    assert list(df["id"]) == list(stored["id"])
    np.testing.assert_allclose(df[R_COLUMNS].to_numpy(float), stored[R_COLUMNS].to_numpy(float), atol=1e-12)
    np.testing.assert_allclose(
        df[["qx", "qy", "qz", "qw"]].to_numpy(float), stored[["qx", "qy", "qz", "qw"]].to_numpy(float), atol=1e-12
    )
    assert df["degenerate"].astype(bool).tolist() == stored["degenerate"].tolist()
    R = df[R_COLUMNS].to_numpy(float).reshape(-1, 3, 3)
    np.testing.assert_allclose(R @ R.transpose(0, 2, 1), np.broadcast_to(np.eye(3), R.shape), atol=1e-9)
    assert "classifier_score" in df.columns


def test_binary_formats_are_attachments(client):
    r = client.get("/api/datasets/qm9/orientations", params={"format": "parquet"})
    assert r.headers["content-type"] == "application/vnd.apache.parquet"
    assert r.headers["content-disposition"].endswith('.parquet"')
    assert int(r.headers["content-length"]) == len(r.content)
    assert "content-encoding" not in r.headers  # parquet is compressed already
    r = client.get("/api/datasets/qm9/orientations", params={"format": "csv"})
    assert r.headers["content-type"].startswith("text/csv")


def test_scores_come_from_the_models_stage(client):
    df = pd.DataFrame(client.get("/api/datasets/toy/orientations").json())
    assert df["classifier_score"].tolist() == pytest.approx([0.9, 0.1, 0.5, 0.7, 0.2, 0.3, 0.8, 0.6])


def test_errors(client):
    r = client.get("/api/datasets/qm9/orientations", params={"format": "xlsx"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "format"]
    r = client.get("/api/datasets/nosuch/orientations")
    assert r.status_code == 404 and "'nosuch'" in r.json()["detail"]
