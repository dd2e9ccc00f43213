"""Path traversal is impossible through any id or file name: dataset, molecule and job ids,
upload file names and archive members (property tests plus hostile requests over real HTTP)."""

from __future__ import annotations

import io
import socket
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orientscope.api.uploads import safe_filename
from orientscope.core.errors import DatasetError, NotFoundError
from orientscope.core.settings import ID_PATTERN, validate_id
from orientscope.loaders.archive import extract_archive, safe_member_path
from orientscope.pipeline.jobs import jobs_dir, read_job_record
from orientscope.store.datasets import dataset_dir
from tests.fuzz.hostile import FUZZ, LIMITS

HOSTILE_NAMES = [
    "..", "../", "../../etc/passwd", "..\\..\\windows", "/etc/passwd", "C:\\boot.ini", "c:evil", "qm9/../toy",
    "qm9\x00.json", "qm9\n", "%2e%2e", "%2e%2e%2fetc", "..%2f..%2fetc", "\u2025", "．．", "qm9 ", ".hidden", "~root",
]  # fmt: skip
path_like = st.one_of(
    st.sampled_from(HOSTILE_NAMES),
    st.lists(st.sampled_from(["..", ".", "", "a", "qm9", "/", "\\", "\x00", "%2e", "C:", "~"]), max_size=8).map(
        "/".join
    ),
    st.text(max_size=80),
)


@FUZZ
@given(name=path_like)
def test_an_accepted_id_is_one_plain_folder_name(tmp_path_factory, name):
    try:
        validate_id(name)
    except ValueError as err:
        assert "invalid dataset id" in str(err)
        return
    assert ID_PATTERN.fullmatch(name) and not ({"/", "\\", "\x00", "\n", "."} & set(name))
    root = Path("/srv/data")
    assert dataset_dir(root, name).parent == root / "datasets"


@FUZZ
@given(name=path_like)
def test_archive_member_paths_stay_inside_the_destination(name):
    try:
        rel = safe_member_path(name, "a.zip")
    except DatasetError as err:
        assert "a.zip" in str(err)
        return
    assert not rel.is_absolute() and ".." not in rel.parts
    dest = PurePosixPath("/extract/here")
    assert str(dest / rel).startswith(str(dest) + "/")


@FUZZ
@given(name=path_like)
def test_upload_file_names_are_reduced_to_a_safe_base_name(name):
    safe = safe_filename(name)
    assert safe and len(safe) <= 120 and not safe.startswith(".")
    assert not ({"/", "\\", "\x00", "\n", ":"} & set(safe)) and safe not in (".", "..")


@FUZZ
@given(name=path_like)
def test_job_ids_never_reach_the_file_system(tmp_path_factory, name):
    data_dir = tmp_path_factory.getbasetemp() / "jobs-fuzz"
    with pytest.raises(NotFoundError):
        read_job_record(jobs_dir(data_dir), name)


def _zip(names: list[str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("ok.xyz", b"1\nx\nH 0 0 0\n")
        for name in names:
            zf.writestr(zipfile.ZipInfo(name), b"1\nx\nH 0 0 0\n")
    return buf.getvalue()


def _tar_with(member: tarfile.TarInfo, data: bytes = b"") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        tf.addfile(member, io.BytesIO(data))
    return buf.getvalue()


def _link(name: str, kind: bytes, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


@pytest.mark.parametrize(
    ("filename", "payload"),
    [
        ("up.zip", _zip(["../evil.xyz"])),
        ("abs.zip", _zip(["/tmp/evil.xyz"])),
        ("win.zip", _zip(["..\\..\\evil.xyz"])),
        ("drive.zip", _zip(["C:/evil.xyz"])),
        ("deep.zip", _zip(["a/b/../../../evil.xyz"])),
        ("dotdot.tar", _tar_with(tarfile.TarInfo("../evil.xyz"))),
        ("symlink.tar", _tar_with(_link("link.xyz", tarfile.SYMTYPE, "/etc/passwd"))),
        ("hardlink.tar", _tar_with(_link("hard.xyz", tarfile.LNKTYPE, "/etc/passwd"))),
        ("device.tar", _tar_with(_link("dev.xyz", tarfile.CHRTYPE, ""))),
    ],
)
def test_hostile_archive_members_are_refused_and_nothing_escapes(tmp_path, filename, payload):
    archive = tmp_path / "in" / filename
    archive.parent.mkdir()
    archive.write_bytes(payload)
    dest = tmp_path / "out" / "x"
    with pytest.raises(DatasetError, match="refused|outside the archive"):
        extract_archive(archive, dest, LIMITS)
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and p != archive and dest not in p.parents]
    assert outside == []


# ------------------------------------------------------------------- over HTTP
HOSTILE_PATHS = [
    "/api/datasets/..%2F..%2Fetc%2Fpasswd",
    "/api/datasets/%2e%2e/summary",
    "/api/datasets/%2Fetc%2Fpasswd/summary",
    "/api/datasets/qm9%00/summary",
    "/api/datasets/qm9%0A/summary",
    "/api/datasets/QM9/summary",
    "/api/datasets/qm9/molecules/..%2F..%2Fdataset.json",
    "/api/datasets/qm9/molecules/%2e%2e",
    "/api/datasets/qm9/molecules/1%00",
    "/api/datasets/qm9/neighbors/..%2Fx",
    "/api/datasets/..%2Fqm9/export?mode=random",
    "/api/jobs/..%2F..%2Fdatasets%2Fqm9%2Fdataset",
    "/api/jobs/%2e%2e",
    "/api/jobs/j%00",
    "/assets/..%2F..%2Fbackend%2Fcli.py",
    "/assets/%2e%2e/%2e%2e/backend/cli.py",
    "/_dash-component-suites/dash/..%2F..%2F..%2Fbackend%2Fcli.py",
    "/_dash-component-suites/..%2F..%2Fetc/passwd",
]
RAW_PATHS = [  # sent byte for byte, without client-side normalisation of '..'
    "/api/datasets/../../../../etc/passwd",
    "/assets/../../../../etc/passwd",
    "/assets/../backend/cli.py",
    "/_dash-component-suites/dash/../../../../../etc/passwd",
    "/api/datasets/qm9/molecules/../../../../../etc/passwd",
]
SECRETS = ("root:x:0:0", "def serve_cmd", '"n_molecules"')  # /etc/passwd, our code, a dataset's meta


@pytest.fixture(scope="module")
def dash_url(api_data):
    from orientscope.server import create_app
    from tests.api.conftest import ServerThread

    with ServerThread(create_app(api_data, read_only=True)) as server:
        yield server.url


def _raw_get(url: str, path: str) -> tuple[int, str]:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode("latin-1")


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_hostile_ids_in_urls_are_404_or_422(dash_url, path):
    r = httpx.get(dash_url + path, timeout=30)
    assert r.status_code in (400, 404, 405, 422), (path, r.status_code)
    assert not any(s in r.text for s in SECRETS)


@pytest.mark.parametrize("path", RAW_PATHS)
def test_literal_dot_dot_paths_serve_nothing_outside(dash_url, path):
    status, body = _raw_get(dash_url, path)
    assert status < 500
    assert not any(s in body for s in SECRETS), (path, status, body[:200])
