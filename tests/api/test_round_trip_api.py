"""The server's own molecule downloads (xyz, sdf, json) uploaded back over real HTTP keep ids and properties,
and what an upload reads differently from its file (renamed ids and properties, D read as hydrogen) is in
the job's record."""

from __future__ import annotations

import math
from urllib.parse import quote

import httpx
import numpy as np
import pandas as pd
import pytest

from orientscope.core.dataset import from_molecules
from orientscope.server import create_app
from tests.api.conftest import ServerThread
from tests.harness import wait_job
from tests.molecules import CO2, METHANE, WATER, asymmetric, benzene

TOKEN = "round-trip-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# Ids that type guessing changed, one with spaces (leading and trailing: an SDF title once lost them), one not
# ASCII, one with a "/" (sent as %2F: the routes once answered 404 for it); "098" and "98" are different molecules.
IDS = ["000", "T", "1E3", "NAN", "098", "98", "  a b ", "分子", "lab/7"]
PROPERTIES = {
    "energy": [-76.4, -40.5, -188.6, -232.2, 1.5, np.nan, 0.0, 1e-9, 2.5],
    "name": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],  # a property named like an id key
    "E (eV)": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.store.shards import save_sharded

    data_dir = tmp_path_factory.mktemp("round-trip") / "data"
    mols = [WATER, METHANE, CO2, benzene(), *(asymmetric(seed=s) for s in range(5))]
    units = {"energy": "Ha", "E (eV)": "eV"}
    tricky = from_molecules(mols, ids=IDS, properties=pd.DataFrame(PROPERTIES), property_units=units)
    save_sharded(data_dir, "tricky", tricky, name="Tricky", source="constructed")
    precompute(data_dir, "tricky", make_params(seed=0), stages=["frames"])
    with ServerThread(create_app(data_dir, token=TOKEN, dashboard=False)) as running:
        yield running.url


def _molecule(url: str, dataset: str, mol_id: str, **params) -> httpx.Response:
    r = httpx.get(f"{url}/api/datasets/{dataset}/molecules/{quote(mol_id, safe='')}", params=params, timeout=60)
    assert r.status_code == 200, r.text
    return r


def _ingest(url: str, filename: str, data: bytes, name: str) -> dict:
    r = httpx.post(
        f"{url}/api/datasets", files={"file": (filename, data)}, data={"name": name}, headers=AUTH, timeout=60
    )
    assert r.status_code == 202, r.text
    job_id = r.json()["job_id"]
    return wait_job(url, f"/api/jobs/{job_id}", timeout_s=240, poll_s=0.2)


def _properties(record: dict) -> dict:
    return {p["name"]: (p["value"], p["unit"]) for p in record["properties"]}


@pytest.mark.parametrize("fmt", ["xyz", "sdf", "json"])
def test_the_servers_own_downloads_upload_back_with_the_same_ids_and_properties(server, fmt):
    joiner = "\n" if fmt == "json" else ""
    text = joiner.join(_molecule(server, "tricky", i, format=fmt).text for i in IDS)
    job = _ingest(server, f"downloads.{fmt}", text.encode(), f"Back from {fmt}")
    assert job["state"] == "done", job["message"]
    assert job["result"]["n_molecules"] == len(IDS) and job["result"]["warnings"] == []
    new = job["result"]["dataset_id"]
    listed = httpx.get(f"{server}/api/datasets/{new}/molecules", params={"limit": 50}, timeout=30).json()
    assert [m["id"] for m in listed["items"]] == IDS
    for mol_id in IDS:
        before = _molecule(server, "tricky", mol_id).json()
        after = _molecule(server, new, mol_id).json()
        assert after["elements"] == before["elements"]
        np.testing.assert_allclose(after["positions"], before["positions"], atol=1e-4 if fmt == "sdf" else 1e-8)
        got, expected = _properties(after), _properties(before)
        assert sorted(got) == sorted(expected) == sorted(PROPERTIES)  # no junk column, none lost
        for name, (value, unit) in expected.items():
            assert got[name][0] == value or (value is None and got[name][0] is None), name
            if fmt == "json":  # only the JSON record carries units
                assert got[name][1] == unit
    info = httpx.get(f"{server}/api/datasets/{new}", timeout=10).json()
    assert info["n_molecules"] == len(IDS)


def test_an_id_with_a_slash_has_its_record_depiction_and_neighbours(server):
    quoted = quote("lab/7", safe="")
    assert _molecule(server, "tricky", "lab/7").json()["id"] == "lab/7"
    svg = httpx.get(f"{server}/api/datasets/tricky/molecules/{quoted}/depiction.svg", timeout=30)
    assert svg.status_code == 200 and svg.text.lstrip().startswith("<") and "svg" in svg.text[:200]
    near = httpx.get(f"{server}/api/datasets/tricky/neighbors/{quoted}", params={"k": 3}, timeout=30)
    assert near.status_code == 200, near.text
    assert near.json()["id"] == "lab/7" and "lab/7" not in [n["id"] for n in near.json()["items"]]
    missing = httpx.get(f"{server}/api/datasets/tricky/molecules/{quote('lab/8', safe='')}", timeout=30)
    assert missing.status_code == 404 and "lab/8" in missing.text


def test_an_upload_that_is_read_differently_says_so_in_its_job(server):
    frames = [
        ("A", "O 0 0 0.117\nD 0 0.757 -0.469\nH 0 -0.757 -0.469"),
        ("A", "C 0 0 0\nH 0.629 0.629 0.629\nH -0.629 -0.629 0.629\nH -0.629 0.629 -0.629\nH 0.629 -0.629 -0.629"),
        ("B", "O 0 0 0.117\nH 0 0.757 -0.469\nH 0 -0.757 -0.469"),
    ]
    text = "".join(f"{len(atoms.splitlines())}\nid={i} n_atoms={k}\n{atoms}\n" for k, (i, atoms) in enumerate(frames))
    job = _ingest(server, "odd.extxyz", text.encode(), "Read differently")
    assert job["state"] == "done", job["message"]
    warnings = job["result"]["warnings"]
    assert len(warnings) == 3, warnings
    renamed_ids, renamed_property, isotopes = warnings
    assert "1 id(s) name 2 molecules of different formulas" in renamed_ids
    assert "'n_atoms' → 'prop_n_atoms'" in renamed_property
    assert "read as hydrogen" in isotopes and "record 1 (line 1)" in isotopes
    assert "3 warning(s): " in job["message"] and "'n_atoms' → 'prop_n_atoms'" in job["message"]
    listed = httpx.get(f"{server}/api/datasets/{job['result']['dataset_id']}/molecules", timeout=30).json()
    assert [m["id"] for m in listed["items"]] == ["A", "A_dup1", "B"]
    detail = _molecule(server, job["result"]["dataset_id"], "A").json()
    assert detail["elements"] == ["O", "H", "H"] and _properties(detail) == {"prop_n_atoms": (0.0, None)}
    assert not math.isnan(detail["positions"][1][1])
