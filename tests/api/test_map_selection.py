"""GET /api/datasets/{id}/map/selection and /map/selection.csv over real HTTP."""

from __future__ import annotations

import csv
import io

import numpy as np

from orientscope.services.map_data import load_map_data


def _in_box(md, x0, x1, y0, y1, axes=(0, 1, 2)):
    x, y = md.x[:, list(axes)], md.y[:, list(axes)]
    return [str(i) for i in md.ids[((x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)).any(axis=1)]]


def test_a_box_lists_its_molecules_paged_and_the_csv_holds_them_all(client, api_data):
    md = load_map_data(api_data, "qm9")
    box = (-0.5, 0.5, -0.25, 0.25)
    expected = _in_box(md, *box, axes=[0])
    assert 10 < len(expected) < len(md.ids)
    sel = "box:" + ",".join(f"{v:.4f}" for v in box)
    params = {"sel": sel, "axes": "1", "color": "prop:zpve"}
    pages = [
        client.get("/api/datasets/qm9/map/selection", params={**params, "offset": k, "limit": 7})
        for k in range(0, len(expected), 7)
    ]
    assert {r.status_code for r in pages} == {200}
    assert [m["id"] for r in pages for m in r.json()["molecules"]] == expected
    assert {r.json()["total"] for r in pages} == {len(expected)}
    r = client.get("/api/datasets/qm9/map/selection.csv", params=params)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert r.headers["content-disposition"] == 'attachment; filename="qm9-selection.csv"'
    rows = list(csv.reader(io.StringIO(r.text)))
    assert rows[0][:2] == ["id", "formula"] and rows[0][2].startswith("zpve")
    assert [row[0] for row in rows[1:]] == expected
    props = client.get(f"/api/datasets/qm9/molecules/{expected[0]}").json()["properties"]
    zpve = next(p["value"] for p in props if p["name"] == "zpve")
    assert np.float32(rows[1][2]) == np.float32(zpve)  # the map's colour values are float32, written shortest


def test_a_lasso_selects_inside_its_polygon(client, api_data):
    md = load_map_data(api_data, "qm9")
    # a triangle: x >= 0, y >= 0 and x / 2 + y <= 1 (no point lies on an edge)
    sel = "lasso:0,0,2,0,0,1"
    body = client.get("/api/datasets/qm9/map/selection", params={"sel": sel, "limit": 100}).json()
    inside = ((md.x > 0) & (md.y > 0) & (md.x / 2 + md.y < 1)).any(axis=1)
    assert body["total"] == int(inside.sum()) > 0
    assert [m["id"] for m in body["molecules"]] == [str(i) for i in md.ids[inside]][:100]


def test_a_bad_selection_or_dataset_is_a_clear_4xx(client):
    r = client.get("/api/datasets/qm9/map/selection", params={"sel": "circle:0,0,1"})
    assert r.status_code == 422 and "box:, lasso:" in r.text
    r = client.get("/api/datasets/qm9/map/selection.csv", params={"sel": "box:0,1,0"})
    assert r.status_code == 422 and "four numbers" in r.text
    assert client.get("/api/datasets/qm9/map/selection", params={}).status_code == 422  # sel is required
    assert client.get("/api/datasets/nope/map/selection.csv", params={"sel": "box:0,1,0,1"}).status_code == 404
