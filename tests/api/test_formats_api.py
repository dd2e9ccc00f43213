"""The API's format choices, media types and format options are the registry's, over real HTTP."""

from __future__ import annotations

import io

import pytest

from orientscope.loaders import registry
from orientscope.loaders.detect import detect_format, load_path
from tests.molecules import WATER_METHANE_FORMALDEHYDE_XYZ


def _schema(client) -> dict:
    return client.get("/api/openapi.json").json()


def test_the_schemas_choices_are_the_registrys(client):
    paths = _schema(client)["paths"]
    upload = paths["/api/datasets"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert upload["properties"]["format"]["enum"] == list(registry.choices())
    assert "format_options" in upload["properties"]
    export = {p["name"]: p for p in paths["/api/datasets/{dataset_id}/export"]["get"]["parameters"]}
    assert export["format"]["schema"]["anyOf"][0]["enum"] == list(registry.writable())
    molecule = {p["name"]: p for p in paths["/api/datasets/{dataset_id}/molecules/{mol_id}"]["get"]["parameters"]}
    assert molecule["format"]["schema"]["enum"] == [registry.RECORDS.name, *registry.downloads()]
    served = paths["/api/datasets/{dataset_id}/export"]["get"]["responses"]["200"]["content"]
    assert set(served) == {registry.get(n).media_type for n in registry.writable()} | {"text/csv"}


@pytest.mark.parametrize("fmt", registry.writable())
def test_an_export_is_served_as_its_formats_media_type_and_reads_back(client, fmt, tmp_path):
    r = client.get("/api/datasets/toy/export", params={"mode": "canonical", "format": fmt})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].split(";")[0] == registry.get(fmt).media_type
    name = r.headers["content-disposition"].split("filename=")[1].strip('"')
    assert name.endswith(registry.get(fmt).suffix)
    (tmp_path / name).write_bytes(r.content)
    back = load_path(tmp_path / name, fmt)
    assert back.mols.n_molecules == client.get("/api/datasets/toy").json()["n_molecules"]
    # Detected by the name and content: an XYZ export with properties on its comment lines reads as extended XYZ.
    assert detect_format(tmp_path / name) in [f.name for f in registry.owners(tmp_path / name)]


@pytest.mark.parametrize("fmt", registry.downloads())
def test_one_molecule_downloads_in_each_download_format(client, fmt, tmp_path):
    r = client.get("/api/datasets/toy/molecules/co2", params={"format": fmt})
    assert r.status_code == 200 and r.headers["content-type"].split(";")[0] == registry.get(fmt).media_type
    name = r.headers["content-disposition"].split("filename=")[1].strip('"')
    assert name.endswith(registry.get(fmt).suffix)
    (tmp_path / name).write_bytes(r.content)
    assert list(load_path(tmp_path / name).mols.ids) == ["co2"]


def test_a_format_without_a_one_molecule_writer_is_422_naming_the_accepted(client):
    unwritten = next(f.name for f in registry.FORMATS if f.write_molecule is None and f is not registry.RECORDS)
    r = client.get("/api/datasets/toy/molecules/co2", params={"format": unwritten})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "format"]
    assert all(name in r.text for name in registry.downloads())


@pytest.mark.parametrize(
    ("fmt", "options", "message"),
    [
        ("xyz", "colour=blue", "unknown format option 'colour' for format 'xyz'; accepted: none"),
        ("auto", "colour=blue", "unknown format option 'colour' for any format"),
        ("auto", "colour", "expected name=value"),
    ],
)
def test_upload_format_options_are_checked_before_the_job(client, fmt, options, message):
    files = {"file": ("three.xyz", io.BytesIO(WATER_METHANE_FORMALDEHYDE_XYZ.encode()))}
    data = {"name": "three", "format": fmt, "format_options": options}
    r = client.post("/api/datasets", files=files, data=data)
    assert r.status_code == 422, r.text
    (detail,) = r.json()["detail"]
    assert detail["loc"] == ["body", "format_options"] and message in detail["msg"]
    assert not [j for j in client.get("/api/jobs").json() if j.get("name") == "three"]
