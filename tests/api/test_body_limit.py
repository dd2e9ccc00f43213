"""Request bodies other than file uploads are bounded ($ORIENTSCOPE_MAX_REQUEST_MB): a JSON body above it is a
413 naming the setting, whether its size is declared or only streamed, and nothing reaches the route."""

from __future__ import annotations

import json

import httpx
import pytest

from orientscope.core.elements import z_to_symbols
from tests.api.conftest import ServerThread
from tests.harness import wait_job
from tests.molecules import asymmetric


@pytest.fixture(scope="module")
def own_url(tmp_path_factory):
    """A server of an empty data folder of its own: the upload below may create a dataset."""
    from orientscope.server import create_app

    with ServerThread(create_app(tmp_path_factory.mktemp("body-limit") / "data", dashboard=False)) as server:
        yield server.url


def _body(n_atoms: int) -> bytes:
    z, pos = asymmetric(seed=1)
    reps = -(-n_atoms // len(z))
    elements = (z_to_symbols(z) * reps)[:n_atoms]
    positions = [[float(i), 0.1 * i, 0.01 * i * i] for i in range(n_atoms)]
    return json.dumps({"elements": elements, "positions": positions}).encode()


def test_a_json_body_above_the_limit_is_413_declared_or_streamed(own_url, monkeypatch):
    monkeypatch.setenv("ORIENTSCOPE_MAX_REQUEST_MB", "0.01")  # 10 kB: read when the request comes
    small, big = _body(20), _body(2000)
    assert len(small) < 10_000 < len(big)
    with httpx.Client(base_url=own_url, timeout=60) as client:
        ok = client.post("/api/canonicalize", content=small, headers={"content-type": "application/json"})
        assert ok.status_code == 200, ok.text
        declared = client.post("/api/canonicalize", content=big, headers={"content-type": "application/json"})
        assert declared.status_code == 413, declared.text
        assert "ORIENTSCOPE_MAX_REQUEST_MB" in declared.json()["detail"] and "0.01 MB" in declared.json()["detail"]

        def chunks():  # no Content-Length: counted while it streams
            for k in range(0, len(big), 4096):
                yield big[k : k + 4096]

        streamed = client.post("/api/canonicalize", content=chunks(), headers={"content-type": "application/json"})
        assert streamed.status_code == 413, streamed.text
    monkeypatch.delenv("ORIENTSCOPE_MAX_REQUEST_MB")
    with httpx.Client(base_url=own_url, timeout=60) as client:  # the default (32 MB) takes the 2,000-atom molecule
        again = client.post("/api/canonicalize", content=big, headers={"content-type": "application/json"})
        assert again.status_code == 200, again.text


def test_a_file_upload_is_not_held_to_the_request_limit(own_url, monkeypatch):
    """Uploads stream to disk under their own limit (ORIENTSCOPE_MAX_UPLOAD_MB): a 10 kB request limit does not
    refuse a 50 kB upload, which is ingested."""
    monkeypatch.setenv("ORIENTSCOPE_MAX_REQUEST_MB", "0.01")
    z, pos = asymmetric(seed=2)
    atoms = "".join(f"{s} {x!r} {y!r} {w!r}\n" for s, (x, y, w) in zip(z_to_symbols(z), pos.tolist(), strict=True))
    payload = "".join(f"{len(z)}\nid=m{k}\n{atoms}" for k in range(400)).encode()
    assert len(payload) > 50_000
    with httpx.Client(base_url=own_url, timeout=60) as client:
        r = client.post("/api/datasets", files={"file": ("set.extxyz", payload)}, data={"name": "big"})
    assert r.status_code == 202, r.text
    job = wait_job(own_url, f"/api/jobs/{r.json()['job_id']}", timeout_s=240, poll_s=0.2)
    assert job["state"] == "done" and job["result"]["n_molecules"] == 400, job
