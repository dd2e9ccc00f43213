"""GET /api/datasets/{id}/map, /map/nearest, /map/preview, /map/shared and /map/pixel over real HTTP."""

from __future__ import annotations

import base64
from io import BytesIO

import numpy as np
import pytest
from PIL import Image

from orientscope.services.map_data import load_map_data


def _png(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(BytesIO(data)))


def test_below_the_budget_the_map_is_the_real_points(client, api_data):
    body = client.get("/api/datasets/qm9/map").json()
    md = load_map_data(api_data, "qm9")
    assert body["mode"] == "points" and body["image"] is None
    # Every defined axis: methane (no orientation) is not drawn, the oblate top shows its one axis.
    shown = (~np.isnan(md.x)).sum(axis=1)
    assert body["n_points"] == shown.sum() and body["n_drawn"] == (shown > 0).sum() == md.n_molecules - 1
    pts = body["points"]
    assert len(pts["id"]) == body["n_points"] and set(pts["id"]) == set(md.ids[shown > 0].tolist())
    row = md.row_of(pts["id"][0])
    assert pts["x"][0] == pytest.approx(float(md.x[row, pts["axis"][0] - 1]))
    assert body["scale"]["kind"] == "categorical" and len(body["scale"]["labels"]) == 3


def test_above_the_budget_the_map_is_an_image_of_the_viewport(client, monkeypatch):
    monkeypatch.setenv("ORIENTSCOPE_MAP_POINT_BUDGET", "100")
    body = client.get("/api/datasets/qm9/map", params={"width": 300, "height": 150, "color": "score"}).json()
    assert body["mode"] == "image" and body["points"] is None
    assert body["image"].startswith("data:image/png;base64,")
    image = _png(base64.b64decode(body["image"].split(",", 1)[1]))
    assert image.shape == (150, 300, 4) and image[..., 3].any()
    assert body["scale"]["kind"] == "continuous" and body["scale"]["cmin"] < body["scale"]["cmax"]


def test_png_is_always_the_image_with_counts_in_headers(client, api_data):
    r = client.get("/api/datasets/qm9/map", params={"format": "png", "width": 64, "height": 32, "axes": "1"})
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    md = load_map_data(api_data, "qm9")
    assert _png(r.content).shape == (32, 64, 4)
    # axis 1 of every molecule that defines it (not methane, not the oblate top, whose one axis is 3)
    axis_1 = int((~np.isnan(md.x[:, 0])).sum())
    assert int(r.headers["x-map-points"]) == axis_1 == int(r.headers["x-map-drawn"]) == md.n_molecules - 2


def test_a_click_on_a_point_finds_its_molecule_and_a_click_on_nothing_finds_none(client, api_data):
    md = load_map_data(api_data, "qm9")
    row = 17
    x, y = float(md.x[row, 0]), float(md.y[row, 0])
    body = client.get("/api/datasets/qm9/map/nearest", params={"x": x, "y": y, "axes": "1"}).json()
    assert body["id"] == md.ids[row] and body["axis"] == 1 and body["distance_px"] == pytest.approx(0.0, abs=1e-3)
    empty = client.get("/api/datasets/qm9/map/nearest", params={"x": 2.8, "y": 1.4}).json()
    assert empty == {"id": None, "axis": None, "x": None, "y": None, "distance_px": None, "shared": None}


def test_a_hovers_preview_is_the_nearest_point_with_its_molecules_caption_and_depiction(client, api_data):
    md = load_map_data(api_data, "qm9")
    params = {"x": float(md.x[17, 0]), "y": float(md.y[17, 0]), "width": 8, "height": 4, "color": "prop:gap"}
    r = client.get("/api/datasets/qm9/map/preview", params=params)
    assert r.status_code == 200
    body = r.json()
    hit = client.get("/api/datasets/qm9/map/nearest", params=params).json()
    assert {k: body[k] for k in hit} == hit and hit["shared"] > 1  # the same pick, on a pixel shared by several
    mol = hit["id"]
    # the caption of the picked point: its axis's point of that molecule, not the molecule's first shown point
    axis_params = {"color": "prop:gap", "axis": hit["axis"]}
    caption = client.get(f"/api/datasets/qm9/map/molecules/{mol}", params=axis_params).json()
    assert body["caption"] == caption and "gap" in caption["color"] and caption["value"] is not None
    assert caption["axis"] == hit["axis"] == 1
    assert body["depiction"] == client.get(f"/api/datasets/qm9/molecules/{mol}/depiction.svg").text
    # the pixel on the same grid as "shared": its molecules are the shared ones, its points at least as many
    assert body["pixel"]["molecules"] == hit["shared"] <= body["pixel"]["count"]
    assert body["text"].startswith(f"molecule {mol} · axis 1 · {hit['shared']} molecules share this pixel")
    empty = client.get("/api/datasets/qm9/map/preview", params={"x": 2.8, "y": 1.4}).json()
    assert empty["id"] is None and empty["caption"] is None and empty["depiction"] is None
    assert empty["pixel"] is None and empty["text"] is None
    bad = client.get(f"/api/datasets/qm9/map/molecules/{mol}", params={"axis": 4})
    assert bad.status_code == 422 and "axis" in bad.text


def test_the_molecules_sharing_a_clicked_pixel_are_listed_the_clicked_one_first(client, api_data):
    md = load_map_data(api_data, "qm9")
    # a coarse grid (8 x 4 pixels over the map): many molecules share each pixel
    grid = {"width": 8, "height": 4, "axes": "1"}
    x, y = float(md.x[17, 0]), float(md.y[17, 0])
    hit = client.get("/api/datasets/qm9/map/nearest", params={"x": x, "y": y, **grid}).json()
    pages = [
        client.get("/api/datasets/qm9/map/shared", params={"x": x, "y": y, "offset": k, "limit": 7, **grid}).json()
        for k in range(0, hit["shared"], 7)
    ]
    ids = [m["id"] for p in pages for m in p["molecules"]]
    assert hit["shared"] > 1 and ids[0] == hit["id"] and len(ids) == len(set(ids)) == hit["shared"]
    assert {p["total"] for p in pages} == {hit["shared"]} and pages[0]["color"] == "axis"
    # exactly the molecules whose first axis falls in the pixel of the picked point (the grid's pixel rule)
    col = lambda v: np.minimum(((v - -2.95) / (5.9 / 8)).astype(int), 7)  # noqa: E731
    row = lambda v: np.minimum(((v - -1.5) / (3.0 / 4)).astype(int), 3)  # noqa: E731
    picked = md.row_of(hit["id"])
    same = (col(md.x[:, 0]) == col(md.x[picked, 0])) & (row(md.y[:, 0]) == row(md.y[picked, 0]))
    assert set(ids) == set(md.ids[same].tolist())
    first = client.get("/api/datasets/qm9/map/shared", params={"x": x, "y": y, "limit": 1, **grid}).json()
    assert first["molecules"][0]["formula"] and first["molecules"][0]["value"].startswith("axis 1")
    assert client.get("/api/datasets/qm9/map/shared", params={"x": x, "y": y, "limit": 0}).status_code == 422


def test_hover_over_the_image_reports_the_pixel(client, api_data):
    md = load_map_data(api_data, "qm9")
    x, y = float(md.x[5, 0]), float(md.y[5, 0])
    body = client.get("/api/datasets/qm9/map/pixel", params={"x": x, "y": y}).json()
    assert body["count"] >= 1 and body["dominant"].startswith("axis")
    density = client.get("/api/datasets/qm9/map/pixel", params={"x": x, "y": y, "kind": "density"}).json()
    assert density["count"] == body["count"] and density["ratio"] > 0


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("map", {"x0": 1, "x1": 0}, "x1"),
        ("map", {"width": 0}, "width"),
        ("map", {"height": 5000}, "height"),
        ("map", {"axes": "4"}, "axes"),
        ("map", {"color": "prop:nonsense"}, "color"),
        ("map", {"kind": "heat"}, "kind"),
        ("map", {"grouping": "element"}, "grouping"),
        ("map", {"smarts": "C(("}, "smarts"),
        ("map/nearest", {"y": 0}, "x"),
        ("map/preview", {"x": 0}, "y"),
        ("map/pixel", {"x": "left", "y": 0}, "x"),
    ],
)
def test_bad_input_is_422_naming_the_parameter(client, path, params, field):
    r = client.get(f"/api/datasets/qm9/{path}", params=params)
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["query", field]


def test_unknown_dataset_is_404(client):
    r = client.get("/api/datasets/nosuch/map")
    assert r.status_code == 404 and "nosuch" in r.json()["detail"]


def test_an_unknown_parameter_is_422_listing_the_accepted_ones(client):
    r = client.get("/api/datasets/qm9/map/nearest", params={"x": 0, "y": 0, "zoom": 2})
    assert r.status_code == 422 and "x0" in r.json()["detail"][0]["msg"]


def test_with_a_highlight_the_map_names_the_highlight_not_the_colour_it_sets_aside(client, api_data, monkeypatch):
    params = {"width": 300, "height": 150, "color": "prop:u0", "smarts": "C=O"}
    body = client.get("/api/datasets/qm9/map", params=params).json()  # points: below the budget
    scale = body["scale"]
    assert body["mode"] == "points" and scale["kind"] == "highlight" and scale["title"] == "SMARTS C=O"
    assert scale["labels"] == ["no SMARTS match (grey)", "SMARTS match"] and "cmin" not in scale
    assert body["points"]["color"] == [int(m) for m in body["points"]["match"]] and any(body["points"]["match"])
    monkeypatch.setenv("ORIENTSCOPE_MAP_POINT_BUDGET", "100")
    image = client.get("/api/datasets/qm9/map", params=params).json()
    assert image["mode"] == "image" and image["scale"] == scale
    png = client.get("/api/datasets/qm9/map", params={**params, "format": "png"})
    assert png.status_code == 200 and png.headers["x-map-scale"] == "highlight"
    # the density keeps its own scale under the matches, and without a pattern the colour's scale is back
    density = client.get("/api/datasets/qm9/map", params={**params, "kind": "density"}).json()
    assert density["scale"]["kind"] == "continuous" and density["scale"]["title"] == "density / uniform"
    plain = client.get("/api/datasets/qm9/map", params={**params, "smarts": ""}).json()
    assert plain["scale"]["kind"] == "continuous" and plain["scale"]["title"].startswith("u0")
