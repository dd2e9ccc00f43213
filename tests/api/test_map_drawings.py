"""What the dashboard draws of the map, as REST resources (real HTTP): GET .../map/paint (what map_draw.js draws of a
region, flat map or density pair, is the paint the map callback answers for it), .../map/panel/{id} (the
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


PAINT = "/api/datasets/qm9/map/paint"


def _params(st: ViewState, vp: dict) -> dict:
    return {"axes": st.axes, "color": st.color, "grouping": st.grouping, "table": st.table, **vp}


def test_the_region_painted_is_the_map_callbacks_paint_of_that_viewport(client, qm9_store):
    st = ViewState(dataset="qm9", view="map", color="axis")
    vp = {"x0": -0.5, "x1": 0.4, "y0": -0.2, "y1": 0.3, "width": 640, "height": 320}
    r = client.get(PAINT, params=_params(st, vp))
    assert r.status_code == 200
    paint = r.json()
    assert paint["region"] == {k: vp[k] for k in ("x0", "x1", "y0", "y1")}
    expected = orjson.loads(orjson.dumps(panels.map_outputs(qm9_store, st, vp).paint))
    assert paint == expected  # cached: the same paint, token included, so the hook waits for no other


def test_the_retired_plotly_region_routes_are_gone(client):
    for path in ("/api/datasets/qm9/map/figure", "/api/datasets/qm9/map/cells"):
        assert client.get(path).status_code == 404


def test_a_density_zoom_paints_both_maps_of_the_region_as_the_map_callback_does(client, qm9_store):
    st = ViewState(dataset="qm9", view="density")
    vp = {"x0": -0.5, "x1": 0.4, "y0": -0.2, "y1": 0.3, "width": 640, "height": 320}
    r = client.get(PAINT, params={**_params(st, vp), "view": "density"})
    assert r.status_code == 200
    paint = r.json()
    assert paint["region"] == {k: vp[k] for k in ("x0", "x1", "y0", "y1")} and len(paint["maps"]) == 2
    shown = panels.map_outputs(qm9_store, st, vp)  # a later colour change keeps the region (the viewport store)
    assert orjson.loads(orjson.dumps(shown.paint)) == paint


def test_a_zooms_paint_is_sent_uncompressed(client, monkeypatch):
    """Its bulk is a base64 PNG or typed arrays: gzip saved a quarter of a 10M-molecule map's 2 MB for 100-600 ms
    of a loaded server's CPU."""
    from orientscope.core.settings import MAP_POINT_BUDGET_ENV

    monkeypatch.setenv(MAP_POINT_BUDGET_ENV, "0")
    st = ViewState(dataset="qm9", view="map", color="axis")
    vp = {"x0": -2.0, "x1": 2.0, "y0": -1.0, "y1": 1.0, "width": 800, "height": 400}
    r = client.get(PAINT, params=_params(st, vp), headers={"Accept-Encoding": "gzip"})
    assert r.status_code == 200 and len(r.content) > 4096
    assert "content-encoding" not in r.headers and r.json()["image"]["source"].startswith("data:image/png")


def test_an_image_from_cell_sums_is_placed_on_its_own_grid_in_the_region_asked_for(client, monkeypatch):
    """A wide zoom of a large view is drawn on a cell-aligned grid around the region (services/map_cells.py): the
    paint keeps the region asked for, and the image is placed where its pixels are."""
    from orientscope.core.settings import MAP_POINT_BUDGET_ENV
    from orientscope.figures.plots import MAP_SCALE
    from orientscope.services import map_cells

    monkeypatch.setenv(MAP_POINT_BUDGET_ENV, "0")
    monkeypatch.setattr(map_cells, "CELL_PATH_MIN_POINTS", 0)  # the test store is small
    st = ViewState(dataset="qm9", view="map", color="axis")
    vp = {"x0": -2.1, "x1": 1.9, "y0": -0.95, "y1": 1.05, "width": 300, "height": 150}
    paint = client.get(PAINT, params=_params(st, vp)).json()
    assert paint["hook"]["mode"] == "image" and paint["region"] == {k: vp[k] for k in ("x0", "x1", "y0", "y1")}
    image = paint["image"]  # map units, SVG's y down
    x0, y1 = image["x"] / MAP_SCALE, -image["y"] / MAP_SCALE
    x1, y0 = x0 + image["width"] / MAP_SCALE, y1 - image["height"] / MAP_SCALE
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


def _decoded(spec: dict):
    import base64

    import numpy as np

    return np.frombuffer(base64.b64decode(spec["bdata"]), np.dtype(spec["dtype"])).astype(float)


def test_a_points_regions_paint_holds_every_point_of_the_callbacks_figure_in_the_region(client, qm9_store):
    """At or below the point budget the renderer's paint is the region's points, one canvas layer per colour, at the
    figure's positions (map units, y down) in the figure's colours; its legend names the figure's categories."""
    import numpy as np

    from orientscope.app.density_paint import payload_array

    st = ViewState(dataset="qm9", view="map", color="axis")
    vp = {"x0": -0.5, "x1": 0.4, "y0": -0.2, "y1": 0.3, "width": 640, "height": 320}
    r = client.get(PAINT, params={**_params(st, vp), "view": "map"})
    assert r.status_code == 200
    paint = r.json()
    assert paint["view"] == "map" and paint["image"] is None and paint["hook"]["mode"] == "points"
    assert paint["region"] == {k: vp[k] for k in ("x0", "x1", "y0", "y1")}
    from orientscope.figures.mapfigure import map_figure_json, viewport_of

    fig = orjson.loads(orjson.dumps(map_figure_json(qm9_store, st, viewport_of(vp))[0]))
    traces = [t for t in fig["data"] if (t.get("meta") or {}).get("kind") == "points"]
    want = sorted(
        (round(x), round(-y), t["marker"]["color"])
        for t in traces
        for x, y in zip(payload_array(t["x"]), payload_array(t["y"]), strict=True)
    )
    got = sorted(
        (x, y, layer["color"])
        for layer in paint["layers"]
        for x, y in zip(_decoded(layer["x"]), _decoded(layer["y"]), strict=True)
    )
    assert len(got) == sum(layer["n"] for layer in paint["layers"]) > 10 and got == want
    xs = np.array([g[0] for g in got]) / 10_000
    assert xs.min() >= vp["x0"] - 0.01 and xs.max() <= vp["x1"] + 0.01  # the region's points, not the whole map
    from orientscope.services.map_view import AXIS_NAMES

    labels = [i["label"] for i in paint["legend"]["items"]]
    assert labels == ["reference orientation", *AXIS_NAMES.values(), "selected molecule"], labels


def test_an_image_regions_paint_is_the_figures_image_and_a_density_paint_has_both_maps(client, qm9_store, monkeypatch):
    from orientscope.core.settings import MAP_POINT_BUDGET_ENV

    monkeypatch.setenv(MAP_POINT_BUDGET_ENV, "0")
    st = ViewState(dataset="qm9", view="map", color="axis")
    vp = {"x0": -2.0, "x1": 2.0, "y0": -1.0, "y1": 1.0, "width": 500, "height": 250}
    paint = client.get(PAINT, params={**_params(st, vp), "view": "map"}).json()
    from orientscope.figures.mapfigure import map_figure_json, viewport_of

    fig = orjson.loads(orjson.dumps(map_figure_json(qm9_store, st, viewport_of(vp))[0]))
    im = fig["layout"]["images"][0]
    assert paint["hook"]["mode"] == "image" and paint["layers"] == []
    assert paint["image"] == {"source": im["source"], "x": im["x"], "y": -im["y"], "width": im["sizex"],
                              "height": im["sizey"]}  # fmt: skip
    assert paint["settings"]["grid"] == fig["layout"]["meta"]["map"]["grid"]  # a pick counts on the image's pixels
    density = client.get(PAINT, params={**_params(st, vp), "view": "density"}).json()
    assert density["view"] == "density" and len(density["maps"]) == 2
    assert density["region"] == {k: vp[k] for k in ("x0", "x1", "y0", "y1")}
    assert all(m["legend"]["colorbar"]["title"] == "density ÷ uniform" for m in density["maps"])
    assert density["maps"][1]["title"].startswith("Control")


def test_bad_paint_requests_are_422_naming_the_parameter(client):
    vp = {"x0": -1, "x1": 1, "y0": -0.5, "y1": 0.5, "width": 400, "height": 200}
    st = ViewState(dataset="qm9", view="map")
    for bad in ({"view": "sphere"}, {"width": 0}, {"x0": "nan"}, {"x0": 2, "x1": 1}, {"axes": "45"}):
        r = client.get(PAINT, params={**_params(st, vp), **bad})
        assert r.status_code == 422 and any(k in r.text for k in bad), (bad, r.text)
    assert client.get(PAINT.replace("qm9", "nope"), params=_params(st, vp)).status_code == 404


def test_fuzzed_paint_requests_never_answer_500(client):
    """Hypothesis-drawn query strings (any text for each parameter, any of them left out) get 200, 404 or 422."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as hs

    names = ("view", "x0", "x1", "y0", "y1", "width", "height", "axes", "color", "grouping", "group", "table")
    value = hs.one_of(
        hs.text(max_size=12), hs.floats(allow_nan=True).map(repr), hs.integers(-(10**20), 10**20).map(str)
    )

    @settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(hs.dictionaries(hs.sampled_from(names), value, max_size=6))
    def check(params):
        r = client.get(PAINT, params=params)
        assert r.status_code in (200, 404, 422), (params, r.status_code, r.text[:300])

    check()
