"""What the dashboard draws of the map, as REST resources (real HTTP): GET .../map/figure (a zoom's figure of a
region is the one the map callback answers for it), .../map/cells (the density view's pair), .../map/panel/{id} (the
molecule panel) and .../map/first-paint (what the page's first paint draws, the same data the page carries)."""

import httpx
import orjson
import pytest

from orientscope.api.schemas import FirstPaintPublic
from orientscope.app import panels
from orientscope.figures.state import ViewState
from orientscope.server import create_app
from tests.api.conftest import ServerThread
from tests.app.components import carried_paint


@pytest.fixture(scope="module")
def client(qm9_store):
    with ServerThread(create_app(qm9_store, dashboard=True)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        yield c


FIGURE, CELLS = "/api/datasets/qm9/map/figure", "/api/datasets/qm9/map/cells"


def _params(st: ViewState, vp: dict) -> dict:
    return {"axes": st.axes, "color": st.color, "grouping": st.grouping, "table": st.table, **vp}


def test_the_region_drawn_is_the_map_callbacks_figure_of_that_viewport(client, qm9_store):
    st = ViewState(dataset="qm9", view="map", color="axis")
    vp = {"x0": -0.5, "x1": 0.4, "y0": -0.2, "y1": 0.3, "width": 640, "height": 320}
    r = client.get(FIGURE, params=_params(st, vp))
    assert r.status_code == 200
    fig = r.json()["figure"]
    meta = fig["layout"]["meta"]["map"]
    assert meta["viewport"] == vp and meta["state"] == st.map_state()  # a later zoom asks with this state
    expected = orjson.loads(orjson.dumps(panels.map_outputs(qm9_store, st, vp).figure))
    assert fig == expected  # cached: the same figure, token included, so the hook waits for no other


def test_bad_regions_are_422_naming_the_bound_and_unknown_datasets_404(client):
    vp = {"x0": -1, "x1": 1, "y0": -0.5, "y1": 0.5, "width": 400, "height": 200}
    st = ViewState(dataset="qm9", view="map")
    for path in (FIGURE, CELLS):
        assert client.get(path, params={**_params(st, vp), "width": 0}).status_code == 422
        assert client.get(path, params={**_params(st, vp), "state": "{}"}).status_code == 422  # no such parameter
        for bad in ({"x0": "nan"}, {"x0": "inf"}, {"x0": 1, "x1": 1}, {"x0": 2, "x1": 1}, {"y0": -1e308}):
            r = client.get(path, params=_params(st, {**vp, **bad}))
            assert r.status_code == 422 and ("x0" in r.text or "y0" in r.text or "x1" in r.text), (bad, r.text)
        r = client.get(path.replace("qm9", "no-such-set"), params=_params(st, vp))
        assert r.status_code == 404 and "no-such-set" in r.json()["detail"]
    r = client.get(FIGURE, params={**_params(st, vp), "axes": "45"})
    assert r.status_code == 422 and "axes" in r.text


def test_a_density_zoom_draws_both_maps_of_the_region_as_the_map_callback_does(client, qm9_store):
    st = ViewState(dataset="qm9", view="density")
    vp = {"x0": -0.5, "x1": 0.4, "y0": -0.2, "y1": 0.3, "width": 640, "height": 320}
    r = client.get(CELLS, params=_params(st, vp))
    assert r.status_code == 200
    main, control = r.json()["dataset"], r.json()["control"]
    assert main["layout"]["meta"]["map"]["viewport"] == vp == control["layout"]["meta"]["map"]["viewport"]
    assert [f["layout"]["meta"]["map"]["query"]["table"] for f in (main, control)] == ["original", "control"]
    shown = panels.map_outputs(qm9_store, st, vp)  # a later colour change keeps the region (the viewport store)
    assert orjson.loads(orjson.dumps(shown.figure)) == main and orjson.loads(orjson.dumps(shown.control)) == control


def test_a_zooms_figure_is_sent_uncompressed(client):
    """Its bulk is a base64 PNG or typed arrays: gzip saved a quarter of a 10M-molecule map's 2 MB for 100-600 ms
    of a loaded server's CPU."""
    st = ViewState(dataset="qm9", view="map", color="axis")
    vp = {"x0": -2.0, "x1": 2.0, "y0": -1.0, "y1": 1.0, "width": 800, "height": 400}
    r = client.get(FIGURE, params=_params(st, vp), headers={"Accept-Encoding": "gzip"})
    assert r.status_code == 200 and len(r.content) > 4096
    assert "content-encoding" not in r.headers and r.json()["figure"]["layout"]["meta"]["map"]["viewport"] == vp


def test_an_image_from_cell_sums_is_placed_on_its_own_grid_in_the_region_asked_for(client, monkeypatch):
    """A wide zoom of a large view is drawn on a cell-aligned grid around the region (services/map_cells.py): the
    axes keep the region asked for, the image is placed where its pixels are, and the hook's viewport is the one
    the browser asked for (it waits for that one)."""
    from orientscope.core.settings import MAP_POINT_BUDGET_ENV
    from orientscope.figures.plots import MAP_SCALE
    from orientscope.services import map_cells

    monkeypatch.setenv(MAP_POINT_BUDGET_ENV, "0")
    monkeypatch.setattr(map_cells, "CELL_PATH_MIN_POINTS", 0)  # the test store is small
    st = ViewState(dataset="qm9", view="map", color="axis")
    vp = {"x0": -2.1, "x1": 1.9, "y0": -0.95, "y1": 1.05, "width": 300, "height": 150}
    fig = client.get(FIGURE, params=_params(st, vp)).json()["figure"]
    meta, layout = fig["layout"]["meta"]["map"], fig["layout"]
    assert meta["mode"] == "image" and meta["viewport"] == vp
    assert layout["xaxis"]["range"] == pytest.approx([vp["x0"] * MAP_SCALE, vp["x1"] * MAP_SCALE])
    image = layout["images"][0]
    x0, y1 = image["x"] / MAP_SCALE, image["y"] / MAP_SCALE
    x1, y0 = x0 + image["sizex"] / MAP_SCALE, y1 - image["sizey"] / MAP_SCALE
    assert x0 <= vp["x0"] and x1 >= vp["x1"] and y0 <= vp["y0"] and y1 >= vp["y1"]  # covers the region
    assert (x0, y0) != (vp["x0"], vp["y0"])  # on the cell grid, not the region's own edges
    assert x1 - x0 < (vp["x1"] - vp["x0"]) * (1 + 2 / vp["width"])  # at most a pixel more on each side


def test_the_panel_route_answers_what_the_molecule_callback_shows_and_404_for_an_unknown_molecule(client, qm9_store):
    from orientscope.services.map_data import load_map_data

    mol = str(load_map_data(qm9_store, "qm9").ids[3])
    r = client.get(f"/api/datasets/qm9/map/panel/{mol}")
    assert r.status_code == 200
    shown = orjson.loads(orjson.dumps(panels.molecule_outputs(qm9_store, ViewState(dataset="qm9"), mol)._asdict(),
                                      default=lambda c: c.to_plotly_json()))  # fmt: skip
    assert r.json() == shown and r.json()["viewer"]["molecule"] == mol
    missing = client.get("/api/datasets/qm9/map/panel/no-such-molecule")
    assert missing.status_code == 404 and "no-such-molecule" in missing.json()["detail"]
    assert client.get(f"/api/datasets/no-such-set/map/panel/{mol}").status_code == 404


def test_the_first_paint_resource_is_what_the_page_carries(client):
    """The map of the small store is points (under the point budget): no first paint; the density view and the sphere
    have one, and the page HTML carries exactly the resource's answer (its images as the ``<img>`` elements first_paint.js
    places under its drawing)."""
    assert client.get("/api/datasets/qm9/map/first-paint", params={"view": "map"}).json() == {"view": None}
    for view in ("density", "sphere"):
        r = client.get("/api/datasets/qm9/map/first-paint", params={"view": view})
        assert r.status_code == 200 and r.json()["view"] == view
        page = client.get(f"/?dataset=qm9&view={view}").text
        assert carried_paint(page) == r.json()  # its images as <img> elements ahead of the data
    # the sphere for every colouring, as its schema says: a colour bar's values (null: none), and the ring of a
    # molecule whose symmetry leaves its axes undefined (methane: null, no ring drawn)
    for params in ({"color": "prop:u0"}, {"molecule": "1"}, {"smarts": "C=O"}):
        r = client.get("/api/datasets/qm9/map/first-paint", params={"view": "sphere", **params})
        assert r.status_code == 200 and FirstPaintPublic.model_validate(r.json()).sphere is not None
    sphere = client.get("/api/datasets/qm9/map/first-paint", params={"view": "sphere", "color": "prop:u0"}).json()
    assert sphere["sphere"]["color"]["kind"] == "continuous" and len(sphere["sphere"]["color"]["values"]) == len(
        sphere["sphere"]["ids"]
    )
    assert client.get("/api/datasets/qm9/map/first-paint", params={"molecule": "nope"}).status_code == 404
    assert client.get("/api/datasets/nope/map/first-paint").status_code == 404
    assert client.get("/api/datasets/qm9/map/first-paint", params={"view": "scatter"}).status_code == 422
