"""An upload of Chemical Component Dictionary mmCIF with its format options, over real HTTP."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.browser.chrome import wait_until

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "ccd_components.cif"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from orientscope.server import create_app
    from tests.api.conftest import ServerThread

    data_dir = tmp_path_factory.mktemp("ccd-upload")
    with ServerThread(create_app(data_dir, dashboard=False)) as server:
        yield server.url, data_dir


@pytest.fixture()
def url(served):
    return served[0]


def _done(url: str, job_id: str) -> dict:
    def finished():
        job = httpx.get(f"{url}/api/jobs/{job_id}", timeout=10).json()
        return job if job["state"] in ("done", "failed") else None

    return wait_until(finished, timeout_s=300)


def _upload(url: str, name: str, **fields) -> httpx.Response:
    files = {"file": ("components.cif", SAMPLE.read_bytes())}
    return httpx.post(f"{url}/api/datasets", files=files, data={"name": name, **fields}, timeout=60)


def test_model_coordinates_by_format_options_are_read_and_recorded(served):
    from orientscope.store import datasets as ds

    url, data_dir = served
    r = _upload(url, "CCD model", format="ccd", format_options="coordinates=model")
    assert r.status_code == 202, r.text
    job = _done(url, r.json()["job_id"])
    assert job["state"] == "done", job["message"]
    assert job["result"]["n_molecules"] == 6
    meta = ds.read_meta(data_dir, "ccd-model")
    assert meta["format"] == "ccd" and meta["format_options"] == {"coordinates": "model"}
    mol = httpx.get(f"{url}/api/datasets/ccd-model/molecules/FS1", timeout=30).json()
    assert mol["id"] == "FS1" and {p["name"]: p["value"] for p in mol["properties"]}["charge"] == 0.0
    assert httpx.get(f"{url}/api/datasets/ccd-model/molecules/SO4", timeout=30).json()["properties"][0]["value"] == -2


def test_the_default_ideal_coordinates_fail_on_too_many_skips_naming_the_remedy(url):
    r = _upload(url, "CCD ideal")  # auto-detected; FS1, one of six, has no ideal coordinates
    assert r.status_code == 202, r.text
    job = _done(url, r.json()["job_id"])
    assert job["state"] == "failed" and "'FS1': no ideal coordinates" in job["message"]
    assert "coordinates=model or fallback=yes" in job["message"]


def test_an_option_value_the_format_does_not_take_is_422(url):
    r = _upload(url, "CCD bad", format="ccd", format_options="coordinates=crystal")
    assert r.status_code == 422
    (detail,) = r.json()["detail"]
    assert detail["loc"] == ["body", "format_options"] and "expected one of ('ideal', 'model')" in detail["msg"]
