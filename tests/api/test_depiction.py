"""GET /api/datasets/{id}/molecules/{mol_id}/depiction.svg (the hover preview's picture) and
/map/molecules/{mol_id} (its caption), over real HTTP."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from orientscope.core.elements import symbol_to_z
from orientscope.science.depiction import projection_svg, smiles_to_svg
from orientscope.services.bytecache import shared_cache
from orientscope.services.cache import get_view

SVG = "image/svg+xml"


def test_a_molecule_with_smiles_is_drawn_from_it(client):
    r = client.get("/api/datasets/qm9/molecules/1/depiction.svg")
    assert r.status_code == 200 and r.headers["content-type"].startswith(SVG)
    assert ET.fromstring(r.text).tag.endswith("svg")
    assert r.text == smiles_to_svg(client.get("/api/datasets/qm9/molecules/1").json()["smiles"])


def test_a_molecule_without_smiles_is_its_canonical_pose_projected(client):
    detail = client.get("/api/datasets/toy/molecules/a1").json()
    assert detail["smiles"] is None
    r = client.get("/api/datasets/toy/molecules/a1/depiction.svg")
    assert r.status_code == 200 and r.headers["content-type"].startswith(SVG)
    expected = projection_svg(
        np.array([symbol_to_z(s) for s in detail["elements"]]), np.array(detail["canonical_positions"])
    )
    assert r.text == expected


def test_a_depiction_is_kept_in_the_byte_bounded_cache(client, api_data):
    client.get("/api/datasets/toy/molecules/water/depiction.svg").raise_for_status()
    key = (str(api_data), "toy", get_view(api_data, "toy").result_key, "water")  # the server runs in this process
    assert shared_cache().entry_size("depiction", key) > 100


@pytest.mark.parametrize(
    ("path", "named"),
    [
        ("/api/datasets/qm9/molecules/no-such-id/depiction.svg", "no-such-id"),
        ("/api/datasets/nope/molecules/1/depiction.svg", "nope"),
        ("/api/datasets/qm9/map/molecules/no-such-id", "no-such-id"),
        ("/api/datasets/nope/map/molecules/1", "nope"),
    ],
)
def test_unknown_ids_are_404_naming_them(client, path, named):
    r = client.get(path)
    assert r.status_code == 404 and named in r.json()["detail"]


def _seventh(client) -> str:
    return client.get("/api/datasets/qm9/molecules", params={"offset": 7, "limit": 1}).json()["items"][0]["id"]


def test_the_caption_says_the_formula_and_the_coloured_value(client):
    mol = _seventh(client)
    detail = client.get(f"/api/datasets/qm9/molecules/{mol}").json()
    gap = next(p["value"] for p in detail["properties"] if p["name"] == "gap")
    r = client.get(f"/api/datasets/qm9/map/molecules/{mol}", params={"color": "prop:gap"})
    assert r.status_code == 200
    body = r.json()
    assert body["id"] == mol and body["formula"] == detail["formula"]
    assert body["value"] == pytest.approx(gap, rel=1e-6) and "gap" in body["color"]


def test_the_caption_of_a_molecule_the_view_does_not_show_has_no_value(client):
    mol = _seventh(client)
    formula = client.get(f"/api/datasets/qm9/molecules/{mol}").json()["formula"]
    items = client.get("/api/datasets/qm9/molecules", params={"limit": 50}).json()["items"]
    other = next(m["formula"] for m in items if m["formula"] != formula)  # a group the molecule is not in
    params = {"color": "prop:gap", "grouping": "formula", "group": other}
    r = client.get(f"/api/datasets/qm9/map/molecules/{mol}", params=params)
    assert r.status_code == 200 and r.json()["value"] is None and r.json()["formula"] == formula
