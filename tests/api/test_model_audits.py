"""Model audits over real HTTP: upload → job → figures, list, download, delete, and every refusal."""

from __future__ import annotations

import io
import shutil

import httpx
import pandas as pd
import pytest

from orientscope.server import create_app
from orientscope.store.datasets import load_dataset
from tests.api.conftest import ServerThread
from tests.audit_models import exported_copies, invariant_features, predictions_frame
from tests.harness import wait_job


@pytest.fixture(scope="module")
def data_dir(qm9_store, tmp_path_factory):
    target = tmp_path_factory.mktemp("audit-api") / "data"
    shutil.copytree(qm9_store / "datasets", target / "datasets")
    return target


@pytest.fixture(scope="module")
def url(data_dir):
    with ServerThread(create_app(data_dir, dashboard=False)) as server:
        yield server.url


@pytest.fixture(scope="module")
def predictions_csv(data_dir, tmp_path_factory) -> bytes:
    stored = load_dataset(data_dir, "qm9")
    copies = exported_copies(data_dir, "qm9", tmp_path_factory.mktemp("copies"), copies=2)
    frame = predictions_frame(stored, copies, invariant_features, stored.properties["gap"].to_numpy(), "gap")
    return frame.to_csv(index=False, float_format="%.17g").encode()


def _audits_on_disk(data_dir) -> list:
    folder = data_dir / "datasets" / "qm9" / "audits"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def _wait(c: httpx.Client, audit_id: str) -> dict:
    return wait_job(c, f"/api/datasets/qm9/model-audits/{audit_id}", poll_s=0.1)


def test_upload_audit_list_download_delete(url, data_dir, predictions_csv):
    with httpx.Client(base_url=url, timeout=60) as c:
        r = c.post(
            "/api/datasets/qm9/model-audits", files={"file": ("pred.csv", predictions_csv)}, data={"name": "mine"}
        )
        assert r.status_code == 202, r.text
        accepted = r.json()
        assert set(accepted) == {"job_id", "audit_id"}
        audit = _wait(c, accepted["audit_id"])
        assert audit["state"] == "done", audit
        (entry,) = audit["properties"]
        assert entry["property"] == "gap" and entry["verdict"]["code"] == "invariant"
        assert audit["name"] == "mine" and len(audit["input"]["sha256"]) == 64
        assert c.get(f"/api/jobs/{accepted['job_id']}").json()["state"] == "done"
        listed = c.get("/api/datasets/qm9/model-audits").json()
        assert [a["id"] for a in listed if a["state"] == "done"] == [accepted["audit_id"]]
        # (other tests of this module may have left failed audits in the list)
        assert next(a for a in listed if a["id"] == accepted["audit_id"])["verdicts"] == {"gap": "invariant"}
        base = f"/api/datasets/qm9/model-audits/{accepted['audit_id']}"
        csv = c.get(f"{base}/molecules")
        assert csv.status_code == 200 and csv.headers["content-type"].startswith("text/csv")
        table = pd.read_csv(io.BytesIO(csv.content))
        assert len(table) == 400 and {"id", "property", "shift", "se_stored", "se_rotated"} <= set(table.columns)
        parquet = c.get(f"{base}/molecules", params={"format": "parquet"})
        assert len(pd.read_parquet(io.BytesIO(parquet.content))) == 400
        assert c.get(f"{base}/molecules", params={"format": "xlsx"}).status_code == 422
        assert c.delete(base).status_code == 204
        assert c.get(base).status_code == 404 and c.delete(base).status_code == 404
    assert _audits_on_disk(data_dir) == []


@pytest.mark.parametrize(
    ("content", "field", "message"),
    [
        (b"id,property,stored\n1,gap,0.1\n", "file", "lack the column(s) ['rotated']"),
        (b"id,property,stored,rotated\n1,nosuch,0.1,0.2\n", "file", "unknown property 'nosuch'"),
        (b"", "file", "is empty"),
        (b"id,property,stored,rotated\n", "file", "header but no rows"),
        # Every value of the first rows is checked before the upload is accepted, not by a job that then fails.
        (b"id,property,stored,rotated\n1,gap,0.1,0.2\n2,gap,0.1,nan\n", "file", "line 3 (id '2'): 'rotated' is NaN"),
        (b"id,property,stored,rotated\n1,gap,0.1,0.2\n1,gap,0.3,0.2\n", "file", "'stored' differs"),
        (
            b"id,property,copy,stored,rotated\n1,gap,0,0.1,0.2\n1,gap,0,0.1,0.2\n",
            "file",
            "(id, property, copy) is given",
        ),
    ],
)
def test_bad_header_is_a_422_and_nothing_is_queued(url, data_dir, content, field, message):
    with httpx.Client(base_url=url, timeout=60) as c:
        jobs_before = len(c.get("/api/jobs").json())
        r = c.post("/api/datasets/qm9/model-audits", files={"file": ("bad_cols.csv", content)}, data={"name": "bad"})
        assert r.status_code == 422, r.text
        (detail,) = r.json()["detail"]
        assert detail["loc"] == ["body", field] and message in detail["msg"]
        # The user's own file name, not the spooled copy's (a uuid before it).
        assert "bad_cols.csv" in detail["msg"] and "-bad_cols.csv" not in detail["msg"]
        assert len(c.get("/api/jobs").json()) == jobs_before
    assert _audits_on_disk(data_dir) == []
    incoming = data_dir / "jobs" / ".incoming"
    assert not incoming.exists() or list(incoming.iterdir()) == []


def test_missing_name_unknown_dataset_and_not_multipart(url):
    with httpx.Client(base_url=url, timeout=60) as c:
        r = c.post("/api/datasets/qm9/model-audits", files={"file": ("p.csv", b"id,property,stored,rotated\n")})
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "name"]
        r = c.post("/api/datasets/nosuch/model-audits", files={"file": ("p.csv", b"x")}, data={"name": "n"})
        assert r.status_code == 404 and "nosuch" in r.json()["detail"]
        assert c.post("/api/datasets/qm9/model-audits", json={"name": "n"}).status_code == 415
        assert c.get("/api/datasets/qm9/model-audits/anosuch").status_code == 404
        assert c.get("/api/datasets/qm9/model-audits/..%2F..").status_code == 404


def test_content_error_fails_the_job_and_stores_nothing(url, data_dir):
    content = b"id,property,stored,rotated\nnosuch,gap,0.1,0.2\n"  # found by the job: no id is a molecule of qm9
    with httpx.Client(base_url=url, timeout=60) as c:
        r = c.post("/api/datasets/qm9/model-audits", files={"file": ("p.csv", content)}, data={"name": "bad"})
        assert r.status_code == 202
        audit = _wait(c, r.json()["audit_id"])
        assert audit["state"] == "failed" and "none of the 1 ids in the predictions" in audit["message"]
        assert c.get(f"/api/datasets/qm9/model-audits/{audit['id']}/molecules").status_code == 404
    assert _audits_on_disk(data_dir) == []
