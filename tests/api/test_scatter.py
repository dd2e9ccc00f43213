"""GET /api/datasets/{id}/scatter/nearest over real HTTP."""

from __future__ import annotations

import numpy as np

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
    assert far == {"id": None, "x": None, "y": None, "distance_px": None}


def test_a_bad_scatter_click_is_a_clear_4xx(client):
    base = {"prop": "zpve", "x": 0, "y": 0, "dx": 1, "dy": 1}
    r = client.get("/api/datasets/qm9/scatter/nearest", params={**base, "prop": "mass"})
    assert r.status_code == 422 and "unknown property 'mass'" in r.text
    assert client.get("/api/datasets/qm9/scatter/nearest", params={**base, "dx": 0}).status_code == 422
    assert client.get("/api/datasets/qm9/scatter/nearest", params={**base, "coord": "w"}).status_code == 422
    assert client.get("/api/datasets/nope/scatter/nearest", params=base).status_code == 404
