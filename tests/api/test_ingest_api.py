"""Upload, jobs, export, rename and delete over real HTTP (uvicorn on a loopback port)."""

from __future__ import annotations

import io
import random
import shutil
import zipfile

import httpx
import numpy as np
import pytest

from orientscope.loaders.extxyz import write_extxyz
from orientscope.science.rotations import random_rotations, rotate_molecules
from tests.api_server import AUTH, TOKEN, UPLOAD_LIMIT_MB, start_ingest_server
from tests.harness import wait_job
from tests.molecules import WATER_METHANE_FORMALDEHYDE_XYZ


@pytest.fixture(scope="module")
def servers(qm9_store, tmp_path_factory):
    """A writable server (token required) and a read-only one on the same copy of the QM9 store."""
    data_dir = tmp_path_factory.mktemp("ingest-api") / "data"
    shutil.copytree(qm9_store, data_dir)
    writable, w_url = start_ingest_server(data_dir, read_only=False, token=TOKEN)
    read_only, r_url = start_ingest_server(data_dir, read_only=True, token="")
    yield {"w": w_url, "r": r_url, "data_dir": data_dir}
    for proc in (writable, read_only):
        proc.terminate()
        proc.wait(timeout=20)


def _upload(url: str, filename: str, data: bytes, name: str, headers=AUTH, **fields) -> httpx.Response:
    return httpx.post(
        f"{url}/api/datasets",
        files={"file": (filename, data)},
        data={"name": name, **fields},
        headers=headers,
        timeout=60,
    )


def _wait(url: str, job_id: str, timeout_s: float = 240) -> dict:
    seen = []
    job = wait_job(
        url, f"/api/jobs/{job_id}", timeout_s=timeout_s, poll_s=0.2, each=lambda j: seen.append(j["progress"])
    )
    assert seen == sorted(seen), "progress never goes back"
    return job


def _ingest(url: str, filename: str, data: bytes, name: str, **fields) -> tuple[dict, dict]:
    r = _upload(url, filename, data, name, **fields)
    assert r.status_code == 202, r.text
    body = r.json()
    assert set(body) == {"job_id", "dataset_id"}
    return body, _wait(url, body["job_id"])


def _summary(url: str, dataset_id: str) -> dict:
    r = httpx.get(f"{url}/api/datasets/{dataset_id}/summary", timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def _assert_not_aligned(report: dict) -> None:
    assert report["verdict"]["aligned"] is False
    assert abs(report["kl"]["value"]) < 0.15 and report["kl"]["ci95"][0] < 0.05
    assert report["ks"]["pvalue"] > 1e-3
    for clf in report.get("classifiers", []):
        assert clf["accuracy"] < 0.62 and clf.get("pvalue", 1) > 1e-3


def test_uniformly_rotated_upload_is_reported_not_aligned(servers, qm9_small, tmp_path):
    url = servers["w"]
    rotated = qm9_small.with_positions(
        rotate_molecules(qm9_small.positions_angstrom, qm9_small.offsets, random_rotations(qm9_small.n_molecules, 123))
    )
    write_extxyz(tmp_path / "rot.extxyz", rotated)
    body, job = _ingest(url, "rot.extxyz", (tmp_path / "rot.extxyz").read_bytes(), "Rotated QM9")
    assert job["state"] == "done", job["message"]
    assert job["progress"] == 1.0 and body["dataset_id"] == "rotated-qm9"
    assert job["result"]["n_molecules"] == qm9_small.n_molecules
    ids = [d["id"] for d in httpx.get(f"{url}/api/datasets", timeout=10).json()]
    assert "rotated-qm9" in ids and "qm9" in ids
    _assert_not_aligned(_summary(url, "rotated-qm9"))


def test_three_small_symmetric_molecules_finish_with_skipped_stages(servers):
    url = servers["w"]
    body, job = _ingest(url, "three.xyz", WATER_METHANE_FORMALDEHYDE_XYZ.encode(), "Three small")
    assert job["state"] == "done", job["message"]
    skipped = job["result"]["skipped_stages"]
    assert set(skipped) == {"statistics", "models", "chemistry.similarity"}
    assert "at least 20 molecules, got 3" in skipped["models"]
    info = httpx.get(f"{url}/api/datasets/{body['dataset_id']}", timeout=10).json()
    assert info["status"] == "ready" and info["skipped_stages"] == skipped
    report = _summary(url, body["dataset_id"])
    assert report["skipped_stages"] == skipped and report["n_molecules"] == 3


def test_default_etkdg_upload_is_strongly_aligned(servers, qm9_small, tmp_path):
    from rdkit import Chem
    from rdkit.Chem import AllChem

    writer = Chem.SDWriter(str(tmp_path / "etkdg.sdf"))
    for k, smi in enumerate(qm9_small.smiles[::2]):
        mol = Chem.AddHs(Chem.MolFromSmiles(str(smi)))
        params = AllChem.ETKDGv3()
        params.randomSeed = 42
        if AllChem.EmbedMolecule(mol, params) == 0:
            mol.SetProp("_Name", f"gen{k}")
            writer.write(mol)
    writer.close()
    _, job = _ingest(servers["w"], "etkdg.sdf", (tmp_path / "etkdg.sdf").read_bytes(), "ETKDG default")
    assert job["state"] == "done", job["message"]
    report = _summary(servers["w"], job["dataset_id"])
    assert report["verdict"]["aligned"] is True
    assert report["kl"]["ci95"][0] > 0.5
    assert report["ks"]["pvalue"] < 1e-3


def test_random_export_of_qm9_reingests_unbiased(servers):
    url = servers["w"]
    aligned = _summary(url, "qm9")
    assert aligned["kl"]["value"] > 0.3  # the stored QM9 poses are biased
    r = httpx.get(
        f"{url}/api/datasets/qm9/export", params={"mode": "random", "format": "extxyz", "seed": 9}, timeout=60
    )
    assert r.status_code == 200 and "qm9-random.extxyz" in r.headers["content-disposition"]
    rot = httpx.get(
        f"{url}/api/datasets/qm9/export", params={"mode": "random", "format": "extxyz", "seed": 9, "part": "rotations"}
    )
    assert rot.status_code == 200 and rot.text.splitlines()[0].startswith("id,mode,purpose,seed,r00")
    assert len(rot.text.splitlines()) == aligned["n_molecules"] + 1
    _, job = _ingest(url, "qm9-random.extxyz", r.content, "QM9 de-biased")
    assert job["state"] == "done", job["message"]
    report = _summary(url, job["dataset_id"])
    assert report["n_molecules"] == aligned["n_molecules"]
    _assert_not_aligned(report)


def _truncated() -> bytes:
    return b"3\nw\nO 0 0 0\nH 1 0 0\nH 0 1 0\n3\nw2\nO 0 0 0\n"


def _zip(members: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _bomb() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf, zf.open("zeros.xyz", "w") as fh:
        for _ in range(64):
            fh.write(b"\x00" * (1 << 20))
    return buf.getvalue()


@pytest.mark.parametrize(
    ("filename", "payload", "expected"),
    [
        ("trunc.xyz", _truncated(), r"record 2 \(line 6\): file ends after 1 of the 3 atom lines"),
        ("wrong.xyz", b"5\nw\nO 0 0 0\nH 1 0 0\n3\nx\nO 0 0 0\nH 1 0 0\nH 0 1 0\n", r"record 1 \(line 1\)"),
        ("nan.xyz", b"3\nw\nO nan 0 0\nH 1 0 0\nH 0 1 0\n", "NaN or infinite coordinates"),
        ("junk.xyz", bytes(range(256)) * 40, "binary data"),
        ("junk.bin", random.Random(7).randbytes(4096), "cannot tell the format"),
        ("digits.bin", b"7" + random.Random(8).randbytes(4095), "cannot tell the format"),
        ("bomb.zip", _bomb(), "zip bomb"),
        (
            "evil.zip",
            _zip({"ok.xyz": b"1\nx\nH 0 0 0\n", "../evil.xyz": b"1\nx\nH 0 0 0\n"}),
            "points outside the archive",
        ),
        ("short.npz", b"PK\x03\x04" + b"\x00" * 100, "not an NPZ"),
    ],
)
def test_malformed_uploads_fail_clearly_and_harm_nothing(servers, filename, payload, expected):
    url, data_dir = servers["w"], servers["data_dir"]
    atoms = data_dir / "datasets" / "qm9" / "shards" / "m00000" / "atoms.parquet"
    before = atoms.read_bytes()
    body, job = _ingest(url, filename, payload, f"bad {filename}")
    assert job["state"] == "failed"
    assert __import__("re").search(expected, job["message"]), job["message"]
    assert httpx.get(f"{url}/api/health").status_code == 200
    assert httpx.get(f"{url}/api/datasets/{body['dataset_id']}").status_code == 404
    assert atoms.read_bytes() == before
    assert not (data_dir / "evil.xyz").exists() and not (data_dir / "jobs" / "evil.xyz").exists()


def test_bad_requests_are_4xx(servers):
    url = servers["w"]
    r = _upload(url, "a.xyz", b"1\nx\nH 0 0 0\n", "")
    assert r.status_code == 422
    assert [(d["loc"], "'name' field" in d["msg"]) for d in r.json()["detail"]] == [(["body", "name"], True)]
    r = _upload(url, "a.xyz", b"1\nx\nH 0 0 0\n", "x", format="pdb")
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "format"]
    r = httpx.post(f"{url}/api/datasets", json={"name": "x"}, headers=AUTH)
    assert r.status_code == 415
    big = b"1\nx\nH 0 0 0\n" * ((UPLOAD_LIMIT_MB << 20) // 12 + 10_000)
    r = _upload(url, "big.xyz", big, "too big")
    assert r.status_code == 413 and "upload larger than the limit" in r.json()["detail"]
    assert httpx.get(f"{url}/api/jobs/jdoesnotexist").status_code == 404
    assert httpx.get(f"{url}/api/datasets/qm9/export", params={"mode": "sideways"}).status_code == 422
    assert httpx.get(f"{url}/api/health").status_code == 200


def test_writes_need_the_token_and_a_writable_server(servers):
    w, r = servers["w"], servers["r"]
    data = b"1\nx\nH 0 0 0\n"
    assert _upload(w, "a.xyz", data, "x", headers={}).status_code == 401
    assert _upload(w, "a.xyz", data, "x", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert httpx.patch(f"{w}/api/datasets/qm9", json={"name": "Q"}).status_code == 401
    assert httpx.delete(f"{w}/api/datasets/qm9").status_code == 401
    assert _upload(r, "a.xyz", data, "x", headers=AUTH).status_code == 403
    assert httpx.delete(f"{r}/api/datasets/qm9", headers=AUTH).status_code == 403
    # Reads work on both.
    assert httpx.get(f"{r}/api/datasets/qm9").status_code == 200
    assert httpx.get(f"{r}/api/datasets/qm9/export", params={"mode": "canonical", "format": "xyz"}).status_code == 200
    assert httpx.get(f"{w}/api/datasets/qm9/summary").status_code == 200


def test_rename_and_delete_touch_only_their_dataset(servers, qm9_small, tmp_path):
    url, data_dir = servers["w"], servers["data_dir"]
    write_extxyz(tmp_path / "s.extxyz", qm9_small.subset(np.arange(60)))
    _, job = _ingest(url, "s.extxyz", (tmp_path / "s.extxyz").read_bytes(), "Scratch")
    assert job["state"] == "done", job["message"]
    dataset_id = job["dataset_id"]
    r = httpx.patch(f"{url}/api/datasets/{dataset_id}", json={"name": "Renamed scratch"}, headers=AUTH)
    assert r.status_code == 200 and r.json()["name"] == "Renamed scratch" and r.json()["id"] == dataset_id
    qm9_before = sorted(p.name for p in (data_dir / "datasets" / "qm9").rglob("*"))
    assert httpx.delete(f"{url}/api/datasets/{dataset_id}", headers=AUTH).status_code == 204
    assert httpx.get(f"{url}/api/datasets/{dataset_id}").status_code == 404
    assert not (data_dir / "datasets" / dataset_id).exists()
    assert sorted(p.name for p in (data_dir / "datasets" / "qm9").rglob("*")) == qm9_before
    assert httpx.delete(f"{url}/api/datasets/{dataset_id}", headers=AUTH).status_code == 404
