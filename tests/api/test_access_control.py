"""Who may write, over real HTTP: read-only mode, the bearer token, upload limits, hostile ids.

Each server is a real uvicorn (API and dashboard) on a loopback port over a
private copy of the test store, so the writes that are allowed touch nothing else.
"""

from __future__ import annotations

import json
import shutil

import httpx
import pytest

from orientscope.server import create_app
from tests.api.conftest import ServerThread

TOKEN = "lab-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
UPLOAD_LIMIT_MB = 1
AUDIT_CSV = b"id,property,stored,rotated\n1,gap,0.1,0.2\n"
XYZ = b"3\nwater\nO 0 0 0.1173\nH 0 0.7572 -0.4692\nH 0 -0.7572 -0.4692\n"


@pytest.fixture(scope="module")
def data_dir(qm9_store, tmp_path_factory):
    target = tmp_path_factory.mktemp("access") / "data"
    shutil.copytree(qm9_store / "datasets", target / "datasets")
    return target


@pytest.fixture(scope="module")
def token_url(data_dir):
    mp = pytest.MonkeyPatch()
    mp.setenv("ORIENTSCOPE_MAX_UPLOAD_MB", str(UPLOAD_LIMIT_MB))  # read when the job manager starts
    try:
        with ServerThread(create_app(data_dir, token=TOKEN)) as server:
            yield server.url
    finally:
        mp.undo()


@pytest.fixture(scope="module")
def read_only_url(data_dir):
    with ServerThread(create_app(data_dir, read_only=True)) as server:
        yield server.url


def _writes(url: str, headers: dict) -> dict[str, httpx.Response]:
    """One request per write endpoint (upload, rename, delete, retry)."""
    with httpx.Client(base_url=url, headers=headers, timeout=60) as c:
        return {
            "upload": c.post("/api/datasets", files={"file": ("w.xyz", XYZ)}, data={"name": "Water"}),
            "rename": c.patch("/api/datasets/qm9", json={"name": "Renamed"}),
            "delete": c.delete("/api/datasets/qm9"),
            "retry": c.post("/api/jobs/jnosuchjob/retry"),
            "audit": c.post("/api/datasets/qm9/model-audits", files={"file": ("p.csv", AUDIT_CSV)}, data={"name": "m"}),
            "audit-delete": c.delete("/api/datasets/qm9/model-audits/anosuchaudit"),
        }


def _reads_work(url: str) -> None:
    with httpx.Client(base_url=url, timeout=60) as c:
        assert c.get("/api/health").json()["ready"] is True
        assert c.get("/api/datasets").status_code == 200
        assert c.get("/api/datasets/qm9/summary").status_code == 200
        assert c.get("/api/datasets/qm9/molecules", params={"limit": 5}).status_code == 200
        assert c.get("/api/jobs").status_code == 200
        # Canonicalisation computes but stores nothing: a read.
        atoms = {
            "elements": ["O", "H", "H"],
            "positions": [[0, 0, 0.1173], [0, 0.7572, -0.4692], [0, -0.7572, -0.4692]],
        }
        assert c.post("/api/canonicalize", json=atoms).status_code == 200
        page = c.get("/")
        assert page.status_code == 200 and page.headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}, {"Authorization": f"Basic {TOKEN}"}],
    ids=["none", "wrong", "no-scheme", "basic"],
)
def test_writes_without_the_token_are_refused_and_reads_still_work(token_url, data_dir, headers):
    for what, r in _writes(token_url, headers).items():
        assert r.status_code == 401, (what, r.status_code, r.text)
        assert r.headers["www-authenticate"] == "Bearer"
        assert "ORIENTSCOPE_TOKEN" in r.json()["detail"]
    assert json.loads((data_dir / "datasets" / "qm9" / "dataset.json").read_text())["name"] == "QM9"
    assert not (data_dir / "jobs").exists() or not list((data_dir / "jobs").glob("*.json"))
    _reads_work(token_url)


def test_the_right_token_may_write(token_url):
    with httpx.Client(base_url=token_url, headers=AUTH, timeout=60) as c:
        r = c.patch("/api/datasets/qm9", json={"name": "QM9 (lab)"})
        assert r.status_code == 200 and r.json()["name"] == "QM9 (lab)"
        assert c.patch("/api/datasets/qm9", json={"name": "QM9"}).status_code == 200
        # Authorised, so the answer is about the job itself.
        assert c.post("/api/jobs/jnosuchjob/retry").status_code == 404


def test_read_only_refuses_every_write_even_with_a_token(read_only_url, data_dir):
    for headers in ({}, AUTH):
        for what, r in _writes(read_only_url, headers).items():
            assert r.status_code == 403, (what, r.status_code, r.text)
            assert "read-only" in r.json()["detail"]
    with httpx.Client(base_url=read_only_url, timeout=30) as c:
        assert c.put("/api/datasets/qm9").status_code == 405
        assert c.get("/api/health").json()["read_only"] is True
    assert ds_names(data_dir) == {"qm9": "QM9"}
    _reads_work(read_only_url)


def ds_names(data_dir) -> dict:
    """Name of every folder under datasets/, each of which must be a complete dataset. The lock files of writes
    (datasets/.locks, backend/store/datasets.py) live beside them once any test of this module has written."""
    folders = [p for p in (data_dir / "datasets").iterdir() if p.name != ".locks"]
    return {p.name: json.loads((p / "dataset.json").read_text())["name"] for p in folders}


def _component_ids(layout) -> dict[str, dict]:
    """id -> props of every component in a Dash layout JSON tree."""
    found: dict[str, dict] = {}

    def walk(node):
        if isinstance(node, list):
            for x in node:
                walk(x)
        elif isinstance(node, dict):
            props = node.get("props")
            if isinstance(props, dict):
                if isinstance(props.get("id"), str):
                    found[props["id"]] = props
                for value in props.values():
                    walk(value)

    walk(layout)
    return found


def test_read_only_dashboard_hides_uploads(read_only_url, token_url):
    with httpx.Client(timeout=60) as c:
        ro = _component_ids(c.get(f"{read_only_url}/_dash-layout").json())
        rw = _component_ids(c.get(f"{token_url}/_dash-layout").json())
        ro_deps = c.get(f"{read_only_url}/_dash-dependencies").text
    assert any(k.startswith("upload-") and k != "upload-link" for k in rw)  # the writable server offers uploads
    assert [k for k in ro if k.startswith("upload-") and k != "upload-link"] == []
    assert ro.get("upload-link", {}).get("hidden", True) is True
    assert "upload-" not in ro_deps.replace('"upload-link"', "")


def test_upload_size_is_enforced_while_streaming(token_url, data_dir):
    """A chunked body (no Content-Length to trust) is cut off once it passes the limit."""
    boundary = "bnd0123456789"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nbig\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.xyz"\r\n\r\n'
    ).encode()
    sent = {"bytes": 0}

    def body():
        yield head
        chunk = XYZ * 4000  # ~240 kB
        for _ in range(40):  # ~10 MB in total, ten times the limit
            sent["bytes"] += len(chunk)
            yield chunk
        yield f"\r\n--{boundary}--\r\n".encode()

    headers = {**AUTH, "Content-Type": f"multipart/form-data; boundary={boundary}"}
    r = httpx.post(f"{token_url}/api/datasets", content=body(), headers=headers, timeout=60)
    assert r.status_code == 413 and "upload larger than the limit" in r.json()["detail"]
    assert "big" not in ds_names(data_dir)
    incoming = data_dir / "jobs" / ".incoming"
    assert not incoming.exists() or list(incoming.iterdir()) == []


def _access_lines(log_path: str) -> list[dict]:
    with open(log_path) as log:
        lines = [json.loads(line) for line in log.read().splitlines() if line.startswith('{"time"')]
    return [line["access"] for line in lines if line["logger"] == "orientscope.access"]


def test_the_lab_setup_from_the_command_line(data_dir, tmp_path):
    """`ORIENTSCOPE_TOKEN=... orientscope serve --workers 2`: token-protected writes, open reads, and
    one JSON access line per request carrying the request id."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tests.harness import free_port, wait_healthy, wait_until

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    exe = str(Path(sys.executable).parent / "orientscope")
    log = (tmp_path / "serve.log").open("w+")
    env = {**os.environ, "ORIENTSCOPE_TOKEN": TOKEN}
    cmd = [exe, "serve", "--data-dir", str(data_dir), "--port", str(port), "--workers", "2"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_healthy(url, proc, timeout_s=120)
        for _ in range(4):  # both workers answer with the same settings
            assert httpx.delete(f"{url}/api/datasets/qm9").status_code == 401
            assert httpx.get(f"{url}/api/datasets/qm9").status_code == 200
        r = httpx.get(f"{url}/api/datasets/qm9/summary", headers={"X-Request-ID": "lab-check-1"})
        assert r.status_code == 200 and r.headers["x-request-id"] == "lab-check-1"

        # each worker writes a request's line once it has answered: wait for the summary's and the DELETEs'
        def logged() -> list | None:
            access = _access_lines(log.name)
            summary_logged = any(a["request_id"] == "lab-check-1" for a in access)
            return access if summary_logged and sum(a["method"] == "DELETE" for a in access) == 4 else None

        access = wait_until(logged, timeout_s=60, what="the summary's and the DELETEs' access lines", poll_s=0.1)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    access = _access_lines(log.name)
    assert {
        "request_id": "lab-check-1",
        "method": "GET",
        "path": "/api/datasets/qm9/summary",
        "status": 200,
    }.items() <= (next(a for a in access if a["request_id"] == "lab-check-1").items())
    assert sum(a["status"] == 401 and a["method"] == "DELETE" for a in access) == 4
