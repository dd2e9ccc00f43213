"""The map's first paint in the page HTML: the first paint's data (the layout's own image, lines, sphere points and
molecule panel) and the script that draws it, after Dash's root element (real HTTP)."""

import json
import shutil

import httpx
import numpy as np
import pytest

from orientscope.app.map_paint import frame, map_paint
from orientscope.app.sphere_paint import sphere_paint
from orientscope.core.numbers import format_number
from orientscope.figures.mapfigure import map_figure_json
from orientscope.figures.plots import MAP_SCALE, ColorSpec
from orientscope.figures.state import ViewState
from orientscope.pipeline.sharded_ingest import ingest_files
from orientscope.pipeline.synth import SynthSpec, write_synth
from orientscope.server import create_app
from orientscope.services.cache import WouldBlock, get_view, warm_only
from orientscope.services.map_data import load_map_data
from orientscope.services.map_view import color_range
from tests.api.conftest import ServerThread
from tests.app.components import carried_paint, props_of


def test_the_frame_is_polylines_in_map_units_with_y_down_and_breaks_as_null():
    lines = frame()
    outline = [p for p in lines["outline"] if p is not None]
    xs, ys = np.array(outline).T
    assert xs.max() == pytest.approx(2 * np.sqrt(2) * MAP_SCALE, abs=1) and ys.min() == pytest.approx(
        -np.sqrt(2) * MAP_SCALE, abs=1
    )
    assert None in lines["graticule"]  # one polyline per meridian and parallel


def test_a_points_mode_figure_has_no_first_paint():
    payload = {"data": [], "layout": {"meta": {"map": {"view": "map", "mode": "points", "drawn": 5}}}}
    assert map_paint(payload) is None


@pytest.mark.dash_canary  # app/compat.py add_after_app_entry: Dash's root element in its index page
def test_the_map_page_carries_the_layouts_image_under_the_hook_and_other_views_do_not(qm9_store, tmp_path, monkeypatch):
    data_dir = tmp_path / "store"  # its own map caches: the budget below is not part of their keys
    shutil.copytree(qm9_store, data_dir)
    monkeypatch.setenv("ORIENTSCOPE_MAP_POINT_BUDGET", "0")  # the small store's map becomes an image
    with ServerThread(create_app(data_dir, dashboard=True)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        page = c.get("/?dataset=qm9&view=map").text
        layout = c.get("/_dash-layout", headers={"X-OrientScope-Page": "?dataset=qm9&view=map"}).json()
        density = c.get("/?dataset=qm9&view=density").text
        sphere = c.get("/?dataset=qm9&view=sphere").text
        scatter = c.get("/?dataset=qm9&view=scatter").text
    paint = carried_paint(page)
    assert page.index('id="react-entry-point"') < page.index('class="page first-paint-page"')
    assert paint["image"]["source"].startswith("data:image/png;base64,")
    drawn = props_of(layout, "map-paint")["data"]  # what Dash's map box then draws (map_draw.js)
    assert paint["image"]["source"] == drawn["image"]["source"]  # the same image
    # what the renderer needs to ask the server for clicks and hover: the layout's own REST query and the
    # image's pixel grid, on which its hover and its clicks pick
    figure, _ = map_figure_json(data_dir, ViewState(dataset="qm9", view="map"))
    meta = figure["layout"]["meta"]["map"]
    assert paint["settings"] == drawn["settings"] == {
        "view": "map", "dataset": "qm9", "query": meta["query"], "kind": "color", "grid": meta["grid"],
        "scale": MAP_SCALE,
    }  # fmt: skip
    assert paint["hook"] == drawn["hook"] == {"mode": "image", "drawn": meta["drawn"], "token": meta["token"]}
    assert all(f'"map/{route}"' in page for route in ("nearest", "preview", "shared"))  # map_component.js, inlined
    assert carried_paint(density)["view"] == "density" and len(carried_paint(density)["maps"]) == 2
    # the sphere's sample, one dot per point of the 3D scene, with the scene's drawn count
    md = load_map_data(data_dir, "qm9")  # small: every defined axis point is in the scene
    points, drawn = md.points()[0].size, int((md.axis_counts[1:]).sum())  # methane has no orientation: no dot
    dots = carried_paint(sphere)
    assert len(dots["sphere"]["ids"]) == points and dots["hook"]["drawn"] == drawn
    assert len(dots["sphere"]["vectors"]) == 3 * points
    assert sphere.count('class="first-paint-data"') == 1 and sphere.count("function nearestPoint") == 1  # once per page
    assert sphere.count("function dragged(") == 1  # map_sphere.js, inlined before first_paint.js
    # the map's and the density view's drawing runs from the head, before the stylesheets hold scripts back; the
    # sphere's after its data
    for text in (page, density):
        assert text.count("function nearestPoint") == 1
        assert "function dragged(" not in text  # nor the sphere's renderer, parsed before the stylesheets are asked for
        assert (
            text.index("function nearestPoint")
            < text.index('rel="stylesheet"')
            < text.index('class="first-paint-data"')
        )
    assert (
        sphere.index('rel="stylesheet"')
        < sphere.index('class="first-paint-data"')
        < sphere.index("function dragged(")
        < sphere.index("function nearestPoint")
    )
    assert "first-paint-data" not in scatter


def test_the_page_carries_dashs_molecule_panel_as_its_components(qm9_store, tmp_path, monkeypatch):
    data_dir = tmp_path / "store"
    shutil.copytree(qm9_store, data_dir)
    monkeypatch.setenv("ORIENTSCOPE_MAP_POINT_BUDGET", "0")
    mol = str(load_map_data(data_dir, "qm9").ids[3])
    query = f"?dataset=qm9&view=map&molecule={mol}"
    with ServerThread(create_app(data_dir, dashboard=True)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        page = c.get("/" + query).text
        plain = c.get("/?dataset=qm9&view=map").text
        layout = c.get("/_dash-layout", headers={"X-OrientScope-Page": query}).json()
    panel = carried_paint(page)["panel"]
    shown = {k: props_of(layout, k) for k in ("molecule-id", "molecule-info", "viewer-spec")}
    assert panel["viewer"] == shown["viewer-spec"]["data"] and panel["viewer"]["molecule"] == mol
    text = json.dumps(panel["layout"])
    assert json.dumps(shown["molecule-info"]["children"]) in text and f'"children": "{mol}"' in text
    # a page without a molecule: the panel's hint, as the layout shows it, and no viewer
    empty = carried_paint(plain)["panel"]
    assert "Click a point on the map to see that molecule." in json.dumps(empty["layout"]) and empty["viewer"] is None


def _sphere_payload(drawn: int, reference=None) -> dict:
    traces = [{"meta": {"kind": "points"}, "marker": {"size": 5.5, "line": {"color": "rgba(0,0,0,0.45)"}}}]
    if reference is not None:
        traces.append({"meta": {"kind": "reference"}, "x": reference[:, 0].tolist(), "y": reference[:, 1].tolist(),
                       "z": reference[:, 2].tolist(), "text": ["ref 1", "ref 2", "ref 3"]})  # fmt: skip
    meta = {"map": {"view": "sphere", "mode": "points", "drawn": drawn, "dataset": "d"}}
    return {"data": traces, "layout": {"title": {"text": "t"}, "meta": meta}}


def test_the_sphere_paint_is_unit_vectors_with_ids_keys_and_every_colour_kind():
    water_axes = np.array([[0.0, 0.0, 1.0], [0.6, 0.8, 0.0], [-1.0, 0.0, 0.0]])  # draw order kept
    ids, keys = ["w", "w", "x"], [0, 1, 5]
    payload = _sphere_payload(2, reference=np.eye(3))
    categorical = ColorSpec("categorical", np.array([0, 1, 2], np.float32), ["1", "2", "3"], ["#a00", "#0a0", "#00a"])
    paint = sphere_paint(payload, water_axes, categorical, ids, keys, ring=[[0.0, 0.0, 1.0]])
    sphere = paint["sphere"]
    assert sphere["vectors"].tolist() == water_axes.reshape(-1).tolist()  # flat x0, y0, z0, x1, ...
    assert sphere["ids"] == ids and sphere["keys"].tolist() == keys and sphere["ring"] == [[0.0, 0.0, 1.0]]
    assert sphere["color"]["kind"] == "categorical" and sphere["color"]["code"].tolist() == [0, 1, 2]
    assert sphere["color"]["palette"] == ["#a00", "#0a0", "#00a"] and sphere["color"]["labels"] == ["1", "2", "3"]
    assert sphere["size"] == 5.5 and sphere["outline"] == "rgba(0,0,0,0.45)"  # the plot's own marker
    assert [r["v"] for r in sphere["reference"]] == np.eye(3).tolist()
    assert [r["label"] for r in sphere["reference"]] == ["ref 1", "ref 2", "ref 3"]
    assert paint["hook"] == {"mode": "points", "drawn": 2, "token": ""} and paint["title"] == "t"
    assert paint["settings"] == {"view": "sphere", "dataset": "d", "query": None}  # the payload's meta has none
    # continuous: each value's place on the colour bar (its 1st to 99th percentile), NaN none, words from core/numbers
    values = np.array([0.0, np.nan, 10.0], np.float32)
    cont = sphere_paint(payload, water_axes, ColorSpec("continuous", values, title="u0"), ids, keys)["sphere"]["color"]
    assert cont["kind"] == "continuous" and cont["title"] == "u0" and len(cont["scale"]) == 10
    assert cont["values"][0] == 0.0 and np.isnan(cont["values"][1]) and cont["values"][2] == 1.0
    lo, hi = color_range(values)
    assert cont["ticks"] == [[0.0, format_number(lo, ".4g")], [0.5, format_number((lo + hi) / 2, ".4g")],
                             [1.0, format_number(hi, ".4g")]]  # fmt: skip
    # a SMARTS highlight: matches 1, the others 0 (grey), whatever the colours were
    lit = sphere_paint(payload, water_axes, categorical, ids, keys, highlight=np.array([False, True, False]))
    assert lit["sphere"]["color"]["code"].tolist() == [0, 1, 0] and lit["sphere"]["color"]["kind"] == "highlight"
    none = sphere_paint(payload, water_axes, ColorSpec("none"), ids, keys)["sphere"]["color"]
    assert none["kind"] == "none" and none["code"].tolist() == [0, 0, 0] and none["labels"] == []
    assert sphere_paint(_sphere_payload(0), np.zeros((0, 3)), categorical, [], []) is None


def test_a_sharded_stores_page_carries_its_first_paint_from_the_stored_map_alone(tmp_path, qm9_small, monkeypatch):
    # A 10M-molecule store's page must not wait for its per-molecule tables (minutes of memory-mapped
    # columns on a server's first load): a small sharded set with its map stored as `orientscope map` does.
    n = 900
    write_synth(tmp_path / "npz", SynthSpec(n=n, bias="qm9", seed=3, shard_size=300), source=qm9_small)
    meta = ingest_files(tmp_path / "data", [tmp_path / "npz"], "big", cluster="in-process", shard_size=300,
                        stages=["frames", "statistics"])  # fmt: skip
    data_dir, dataset_id = tmp_path / "data", meta["id"]  # the ingest's map stage stored its map arrays
    monkeypatch.setenv("ORIENTSCOPE_MAP_POINT_BUDGET", "0")  # its map becomes an image
    monkeypatch.setenv("ORIENTSCOPE_COLUMNS_DIR", str(tmp_path / "columns"))
    url = f"/?dataset={dataset_id}&view=map"
    with ServerThread(create_app(data_dir, dashboard=True)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        page = c.get(url).text
        landing = c.get(f"/?dataset={dataset_id}").text  # the density view and its control
        with pytest.raises(WouldBlock):  # the page requests loaded no view of the dataset
            warm_only(get_view, data_dir, dataset_id)
        layout = c.get("/_dash-layout", headers={"X-OrientScope-Page": url[1:]}).json()
    paint = carried_paint(page)
    md = load_map_data(data_dir, dataset_id)  # the synthetic set's methane copies have no orientation
    points, drawn = md.points()[0].size, int((md.axis_counts[1:]).sum())
    assert {k: paint["hook"][k] for k in ("mode", "drawn")} == {"mode": "image", "drawn": drawn}
    assert len(carried_paint(landing)["maps"]) == 2
    assert f"{points:,} axis points of {n:,} molecules" in paint["title"]  # its title, from the stored report
    hook = props_of(layout, "map-paint")["data"]["hook"]
    assert (hook["mode"], hook["drawn"]) == ("image", drawn) and paint["image"]["source"] in json.dumps(layout)
    assert not (tmp_path / "columns").exists() or not any((tmp_path / "columns").glob("map-*"))  # the stored map
