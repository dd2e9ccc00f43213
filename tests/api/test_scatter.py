"""GET /api/datasets/{id}/scatter/nearest over real HTTP."""

from __future__ import annotations

import numpy as np
import pytest

from orientscope.services.cache import get_view


def test_a_click_on_a_scatter_point_finds_its_molecule_and_a_click_on_nothing_finds_none(client, api_data):
    view = get_view(api_data, "qm9")
    zpve = view.property_values[:, view.property_names.index("zpve")]
    row = int(np.argmax(zpve))  # alone at the top
    x = float(np.degrees(np.arcsin(view.rotations[row, 0, 2])))
    params = {"prop": "zpve", "axis": 1, "coord": "lat", "x": x, "y": float(zpve[row]), "dx": 0.2, "dy": 1e-4}
    body = client.get("/api/datasets/qm9/scatter/nearest", params=params).json()
    assert body["id"] == str(view.ids[row]) and body["distance_px"] < 0.01 and body["y"] == float(zpve[row])
    # on a log scale the click's y is log10 of the value, as plotly.js's log axis measures it
    log = client.get("/api/datasets/qm9/scatter/nearest",
                     params={**params, "scale": "log", "y": float(np.log10(zpve[row]))}).json()  # fmt: skip
    assert log["id"] == body["id"]
    far = client.get("/api/datasets/qm9/scatter/nearest", params={**params, "y": 10.0}).json()
    assert far == dict.fromkeys(("id", "x", "y", "distance_px", "formula", "color", "value", "shared"))


def test_a_hover_on_the_scatter_says_the_formula_the_colour_and_how_many_share_the_pixel(client, api_data):
    view = get_view(api_data, "qm9")
    zpve = view.property_values[:, view.property_names.index("zpve")]
    u0 = view.property_values[:, view.property_names.index("u0")]
    lat = np.degrees(np.arcsin(view.rotations[:, 0, 2]))
    row = int(np.argsort(zpve)[len(zpve) // 2])  # in the crowd
    # a coarse plot: 40 × 30 pixels over the whole scatter, so that its pixels hold several molecules
    region = {"x0": -90.0, "x1": 90.0, "y0": float(zpve.min()), "y1": float(zpve.max()), "width": 40, "height": 30}
    dx, dy = 180.0 / 40, (region["y1"] - region["y0"]) / 30
    params = {"prop": "zpve", "x": float(lat[row]), "y": float(zpve[row]), "dx": dx, "dy": dy, "color": "prop:u0"}
    r = client.get("/api/datasets/qm9/scatter/nearest", params={**params, **region})
    assert r.status_code == 200
    body = r.json()
    hit = int(np.flatnonzero(view.ids.astype(str) == body["id"])[0])
    assert body["formula"] == client.get(f"/api/datasets/qm9/molecules/{body['id']}").json()["formula"]
    assert body["color"].startswith("u0") and body["value"] == pytest.approx(u0[hit], rel=1e-6)
    # the oracle: molecules whose point falls in the hit's pixel of the region (numpy, all at once)
    col, line = np.floor((lat - region["x0"]) / dx), np.floor((zpve - region["y0"]) / dy)
    same = (col == col[hit]) & (line == line[hit]) & np.isfinite(lat) & np.isfinite(zpve)
    assert 1 < body["shared"] == int(same.sum())
    # without the region there is no pixel to share; with part of it, a clear 422
    assert client.get("/api/datasets/qm9/scatter/nearest", params=params).json()["shared"] is None
    partial = client.get("/api/datasets/qm9/scatter/nearest", params={**params, "x0": 0})
    assert partial.status_code == 422 and "x0, x1, y0, y1, width and height" in partial.text
    for bad in ({"x1": -91.0}, {"x0": -1e308, "x1": 1e308}, {"x1": -90.0 + 1e-320}):
        r = client.get("/api/datasets/qm9/scatter/nearest", params={**params, **region, **bad})
        assert r.status_code == 422 and "x0 < x1" in r.text, bad
    by_axis = client.get("/api/datasets/qm9/scatter/nearest", params={**params, "color": "axis"}).json()
    assert by_axis["color"] == "axis" and by_axis["value"].startswith("axis 1")


def test_a_bad_scatter_click_is_a_clear_4xx(client):
    base = {"prop": "zpve", "x": 0, "y": 0, "dx": 1, "dy": 1}
    r = client.get("/api/datasets/qm9/scatter/nearest", params={**base, "prop": "mass"})
    assert r.status_code == 422 and "unknown property 'mass'" in r.text
    assert client.get("/api/datasets/qm9/scatter/nearest", params={**base, "dx": 0}).status_code == 422
    assert client.get("/api/datasets/qm9/scatter/nearest", params={**base, "coord": "w"}).status_code == 422
    assert client.get("/api/datasets/nope/scatter/nearest", params=base).status_code == 404


def test_the_image_of_a_region_is_a_png_of_the_size_asked_for(client):
    from io import BytesIO

    from PIL import Image

    params = {"prop": "zpve", "x0": -90, "x1": 90, "y0": 0, "y1": 0.3, "width": 120, "height": 80}
    r = client.get("/api/datasets/qm9/scatter/image", params=params)
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    image = np.asarray(Image.open(BytesIO(r.content)))
    assert image.shape == (80, 120, 4) and image[..., 3].any()  # molecules drawn
    empty = client.get("/api/datasets/qm9/scatter/image", params={**params, "y0": 5, "y1": 6})
    assert not np.asarray(Image.open(BytesIO(empty.content)))[..., 3].any()  # no molecule there
    assert client.get("/api/datasets/qm9/scatter/image", params={**params, "x1": -100}).status_code == 422


def test_the_image_of_a_region_is_coloured_as_asked_and_a_bad_colour_is_a_422(client):
    params = {"prop": "zpve", "x0": -90, "x1": 90, "y0": 0, "y1": 0.3, "width": 60, "height": 40}
    counted = client.get("/api/datasets/qm9/scatter/image", params=params)
    coloured = client.get("/api/datasets/qm9/scatter/image", params={**params, "color": "prop:u0"})
    assert coloured.status_code == 200 and coloured.headers["content-type"] == "image/png"
    assert coloured.content != counted.content
    bad = client.get("/api/datasets/qm9/scatter/image", params={**params, "color": "prop:nope"})
    assert bad.status_code == 422 and "unknown property 'nope'" in bad.text


def test_a_scatter_hover_carries_the_card_and_a_shared_pixel_lists_its_molecules(client, api_data):
    """/scatter/preview is /scatter/nearest plus the card and the words; /scatter/shared pages the molecules of the
    pixel, the picked one first; without the region shown there is no pixel to share: a clear 422."""
    view = get_view(api_data, "qm9")
    zpve = view.property_values[:, view.property_names.index("zpve")]
    lat = np.degrees(np.arcsin(view.rotations[:, 0, 2]))
    row = int(np.argsort(zpve)[len(zpve) // 2])
    region = {"x0": -90.0, "x1": 90.0, "y0": float(zpve.min()), "y1": float(zpve.max()), "width": 40, "height": 30}
    params = {"prop": "zpve", "x": float(lat[row]), "y": float(zpve[row]), "dx": 4.5,
              "dy": (region["y1"] - region["y0"]) / 30, **region}  # fmt: skip
    hit = client.get("/api/datasets/qm9/scatter/nearest", params=params).json()
    r = client.get("/api/datasets/qm9/scatter/preview", params=params)
    assert r.status_code == 200
    preview = r.json()
    assert {k: preview[k] for k in hit} == hit and hit["shared"] > 1
    assert preview["caption"] == {"id": hit["id"], "formula": hit["formula"], "axis": 1, "value": hit["value"],
                                  "value_text": hit["value"], "color": "axis"}  # fmt: skip
    assert preview["depiction"] == client.get(f"/api/datasets/qm9/molecules/{hit['id']}/depiction.svg").text
    assert preview["text"] == (
        f"molecule {hit['id']} · {hit['formula']} · axis: {hit['value']} · "
        f"{hit['shared']} molecules share this pixel (click to choose)"
    )
    pages = [
        client.get("/api/datasets/qm9/scatter/shared", params={**params, "offset": k, "limit": 3}).json()
        for k in range(0, hit["shared"], 3)
    ]
    ids = [m["id"] for p in pages for m in p["molecules"]]
    assert ids[0] == hit["id"] and len(ids) == len(set(ids)) == hit["shared"] == pages[0]["total"]
    no_region = {k: v for k, v in params.items() if k not in region}
    r = client.get("/api/datasets/qm9/scatter/shared", params=no_region)
    assert r.status_code == 422 and "region shown" in r.text
    far = client.get("/api/datasets/qm9/scatter/preview", params={**params, "y": 10.0}).json()
    assert far["id"] is None and far["caption"] is None and far["text"] is None
