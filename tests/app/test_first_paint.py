"""The map's first paint in the page HTML: the layout's own image, its outline and the test hook (real HTTP)."""

import base64
import html
import json
import re
import shutil

import httpx
import numpy as np
import pytest

from orientscope.app.first_paint import first_paint_html, polyline_path, sphere_paint_html
from orientscope.figures.plots import MAP_SCALE, ColorSpec
from orientscope.pipeline.sharded_ingest import ingest_files
from orientscope.pipeline.synth import SynthSpec, write_synth
from orientscope.server import create_app
from orientscope.services.cache import WouldBlock, get_view, warm_only
from orientscope.services.map_data import load_map_data
from tests.api.conftest import ServerThread
from tests.app.components import map_settings, props_of


def test_a_polyline_becomes_svg_path_data_in_map_units_with_y_down_and_breaks_at_nan():
    x = np.array([0.0, 1.0, np.nan, 2.0, 2.5])
    y = np.array([0.0, 0.5, np.nan, -1.0, -1.0])
    assert polyline_path(x, y) == "M0 0L10000 -5000M20000 10000L25000 10000"


def test_a_points_mode_figure_has_no_first_paint():
    payload = {"data": [], "layout": {"meta": {"map": {"view": "map", "mode": "points", "drawn": 5}}}}
    assert first_paint_html(payload) == ""


def _image_source(text: str) -> str:
    return re.search(r'<image href="(data:image/png;base64,[^"]+)"', text).group(1)


@pytest.mark.dash_canary  # app/first_paint.py DASH_LOADING: Dash's placeholder markup in its index page
def test_the_map_page_carries_the_layouts_image_under_the_hook_and_other_views_do_not(qm9_store, tmp_path, monkeypatch):
    data_dir = tmp_path / "store"  # its own map caches: the budget below is not part of their keys
    shutil.copytree(qm9_store, data_dir)
    monkeypatch.setenv("ORIENTSCOPE_MAP_POINT_BUDGET", "0")  # the small store's map becomes an image
    with ServerThread(create_app(data_dir, dashboard=True)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        page = c.get("/?dataset=qm9&view=map").text
        layout = c.get("/_dash-layout", headers={"Referer": f"{srv.url}/?dataset=qm9&view=map"}).json()
        density = c.get("/?dataset=qm9&view=density").text
        sphere = c.get("/?dataset=qm9&view=sphere").text
    shipped = json.dumps(layout)
    sources = re.findall(r"data:image/png;base64,[A-Za-z0-9+/=]+", shipped)
    assert page.count('id="orientation-map"') == 1 and 'data-first-paint="1"' in page
    assert "_dash-loading" not in page and 'id="react-entry-point"' in page
    src = _image_source(page)
    assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert src in sources  # the same image the interactive plot then draws
    # what first_paint.js needs to ask the server for clicks and hover: the layout's own REST query and the
    # image's pixel grid, on which its hover and its clicks pick (as the interactive map's over an image)
    meta = props_of(layout, "orientation-map")["figure"]["layout"]["meta"]["map"]
    assert map_settings(page) == {
        "view": "map", "dataset": "qm9", "query": meta["query"], "kind": "color", "grid": meta["grid"],
        "scale": MAP_SCALE,
    }  # fmt: skip
    assert all(f'"map/{route}"' in page for route in ("nearest", "preview", "shared"))
    drawn = re.search(r"setAttribute\('data-drawn','(\d+)'\)", page).group(1)
    assert f'"drawn": {drawn},' in shipped
    assert 'data-first-paint="1"' in density and "_dash-loading" not in density  # tests/app/test_density_paint.py
    # the sphere's sample, one dot per point of the 3D scene, with the scene's drawn count
    md = load_map_data(data_dir, "qm9")  # small: every defined axis point is in the scene
    points, drawn = md.points()[0].size, int((md.axis_counts[1:]).sum())  # methane has no orientation: no dot
    assert sphere.count('r=".012"') == points and f"setAttribute('data-drawn','{drawn}')" in sphere
    assert "nearestDot" in sphere  # first_paint.js, once per page


def _panel(page: str) -> str:
    return re.search(r'<div id="molecule-panel".*?(?=<script>)', page, re.S).group(0)


def test_the_page_carries_dashs_molecule_panel_and_its_route_answers_what_the_callback_shows(
    qm9_store, tmp_path, monkeypatch
):
    data_dir = tmp_path / "store"
    shutil.copytree(qm9_store, data_dir)
    monkeypatch.setenv("ORIENTSCOPE_MAP_POINT_BUDGET", "0")
    mol = str(load_map_data(data_dir, "qm9").ids[3])
    query = f"?dataset=qm9&view=map&molecule={mol}"
    with ServerThread(create_app(data_dir, dashboard=True)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        page = c.get("/" + query).text
        plain = c.get("/?dataset=qm9&view=map").text
        layout = c.get("/_dash-layout", headers={"Referer": f"{srv.url}/{query}"}).json()
        answer = c.get("/_first-paint/molecule-panel" + query)
        unknown = c.get("/_first-paint/molecule-panel?dataset=qm9&view=map&molecule=no-such-molecule").json()
    # the panel of the layout, filled as the layout's own props fill it, as HTML; its viewer spec beside it
    shown = {k: props_of(layout, k) for k in ("molecule-id", "molecule-info", "viewer-spec")}
    assert f'<span id="molecule-id" class="molecule-id">{mol}</span>' in _panel(page)
    viewer = json.loads(html.unescape(re.search(r'data-viewer="([^"]*)"', page).group(1)))
    assert viewer == shown["viewer-spec"]["data"] and viewer["molecule"] == mol
    assert 'class="page first-paint-page"' in page and page.index('id="molecule-panel"') < page.index("nearestDot")
    # a page without a molecule: the panel's hint, as the layout shows it, and no viewer
    assert "Click a point on the map to see that molecule." in _panel(plain) and 'data-viewer=""' in plain
    # the route answers the show_molecule callback's outputs (components as Dash encodes them) and the info's HTML
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    body = answer.json()
    assert body["molecule_id"] == mol and body["viewer"] == shown["viewer-spec"]["data"]
    assert body["info"] == shown["molecule-info"]["children"]
    assert body["info_html"] in _panel(page)
    # an unknown molecule: the panel's hint, no viewer
    assert unknown["molecule_id"] == "" and unknown["viewer"] is None and "Click a point" in unknown["info_html"]


def test_the_static_sphere_looks_along_plotlys_default_camera_back_to_front_with_the_far_side_faded():
    payload = {"layout": {"title": {"text": "t"}, "meta": {"map": {"view": "sphere", "mode": "points", "drawn": 3}}}}
    towards = np.array([1.0, 1.0, 1.0]) / np.sqrt(3.0)
    vectors = np.array([towards, [0.0, 0.0, 1.0], -towards])  # near centre, top, far centre
    color = ColorSpec("categorical", np.array([0, 1, 2], np.float32), ["1", "2", "3"], ["#a00", "#0a0", "#00a"])
    text = sphere_paint_html(payload, vectors, color, ["a", "b", "c"], [0, 4, 8])
    circles = re.findall(r'<circle cx="([-\d.]+)" cy="([-\d.]+)" r="\.012" fill="(#\w+)"( fill-opacity)?', text)
    # drawn far to near: the far point first (faded), the near one last, both at the centre
    assert circles[0] == ("0.000", "0.000", "#00a", " fill-opacity")
    assert circles[-1][:3] == ("0.000", "0.000", "#a00") and circles[-1][3] == ""
    # the pole is straight up on screen (SVG y down), at 2/sqrt(6) of the radius
    assert circles[1][:3] == ("0.000", f"{-2 / np.sqrt(6):.3f}", "#0a0")
    assert "setAttribute('data-mode','points')" in text and "setAttribute('data-drawn','3')" in text
    # each dot's molecule and tie-break key, in the dots' order, for first_paint.js's clicks
    assert map_settings(text) == {"view": "sphere", "dataset": None, "ids": ["c", "b", "a"], "keys": [8, 4, 0]}
    assert text.count("<script>") == 1  # the hook; first_paint.js comes once per page (page_html)
    continuous = ColorSpec("continuous", np.zeros(3, np.float32))
    assert sphere_paint_html(payload, vectors, continuous, ["a", "b", "c"], [0, 4, 8]) == ""


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
        layout = c.get("/_dash-layout", headers={"Referer": srv.url + url}).json()
    assert page.count('id="orientation-map"') == 1 and 'data-first-paint="1"' in page
    md = load_map_data(data_dir, dataset_id)  # the synthetic set's methane copies have no orientation
    points, drawn = md.points()[0].size, int((md.axis_counts[1:]).sum())
    assert f"setAttribute('data-drawn','{drawn}')" in page and "setAttribute('data-mode','image')" in page
    assert 'data-first-paint="1"' in landing and landing.count("<image ") == 2
    assert f"{points:,} axis points of {n:,} molecules" in page  # its title, from the stored report
    meta = props_of(layout, "orientation-map")["figure"]["layout"]["meta"]["map"]
    assert (meta["mode"], meta["drawn"]) == ("image", drawn) and _image_source(page) in json.dumps(layout)
    assert not (tmp_path / "columns").exists() or not any((tmp_path / "columns").glob("map-*"))  # the stored map
