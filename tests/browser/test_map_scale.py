"""The map at any size, in real headless Chromium: above a (lowered) point budget the map is the
server's image; a click anywhere opens the nearest molecule within 5 px, zooming in brings back
real points with hover, and the 3D sphere is clickable."""

from __future__ import annotations

import json
import math
import re
import urllib.parse
import urllib.request

import numpy as np
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from orientscope.figures.plots import MAP_SCALE
from orientscope.services.map_data import load_map_data
from orientscope.services.molecules import molecule_detail
from tests.browser.chrome import (
    DASH_SPHERE_CANVAS,
    PageRequests,
    dash_sphere,
    finite_pixels,
    lone_front_dot,
    map_drawn,
    point_at_dot,
)
from tests.browser.pages import BUDGET, TO_PIXEL_JS, open_map, settle, text_of, viewer_molecule, wait_for

pytestmark = pytest.mark.browser

# A zoom to x and y ranges (map units), as the renderer's own zoom (map_draw.js handle.zoom) makes it.
ZOOM_JS = """
const s = 1e4;
document.getElementById('orientation-map')._mapHandle.zoom(
  {x0: arguments[0][0] / s, x1: arguments[0][1] / s, y0: arguments[1][0] / s, y1: arguments[1][1] / s});
"""
PIXEL_SIZE_JS = """
const stage = document.querySelector('#orientation-map .map-stage'), vb = stage.querySelector('svg').viewBox.baseVal;
return [vb.width / stage.clientWidth, vb.height / stage.clientHeight];
"""


def _pixels(driver, md, rows) -> np.ndarray:
    """(len(rows), 3, 2) on-screen offsets from the plot centre of each molecule's three axis points."""
    pts = [[float(md.x[r, a]) * MAP_SCALE, float(md.y[r, a]) * MAP_SCALE] for r in rows for a in range(3)]
    return finite_pixels(driver, TO_PIXEL_JS, pts).reshape(len(rows), 3, 2)


FORGET_CLICK_JS = "document.getElementById('orientation-map').dataset.clicked = ''"


def _clicked(driver) -> str | None:
    """The molecule id the last map click found (set by orientscope.js when the server answers)."""
    return driver.execute_script("return document.getElementById('orientation-map').dataset.clicked") or None


def test_a_click_on_the_image_opens_a_molecule_within_5_px(driver, image_url, qm9_store):
    requests = PageRequests(driver)
    graph = open_map(driver, image_url + "/?dataset=qm9&view=map")
    md = load_map_data(qm9_store, "qm9")
    assert map_drawn(driver) == {"drawn": int(md.axis_counts[1:].sum()), "mode": "image"}  # with an orientation
    assert driver.execute_script("return !!document.getElementById('orientation-map')._mapHandle.paint().image")
    rng = np.random.default_rng(0)
    clicks = 0
    for row in rng.permutation(np.flatnonzero(~np.isnan(md.x[:, 0])))[:40]:  # axis 1 drawn
        target = _pixels(driver, md, [row])[0, 0] + [2, -1]  # 2.2 px from the molecule's first axis
        if np.abs(target).max() > 150:  # keep clicks well inside the plot
            continue
        driver.execute_script(FORGET_CLICK_JS)  # the last click's answer is not this one's
        ActionChains(driver).move_to_element_with_offset(graph, int(target[0]), int(target[1])).click().perform()
        chosen = wait_for(lambda: _clicked(driver), what="the server's nearest molecule")
        wait_for(lambda c=chosen: text_of(driver, "molecule-id") == c, what=f"molecule {chosen} to open")
        # the opened molecule has a shown point within 5 px of the click
        where = _pixels(driver, md, [md.row_of(chosen)])[0]
        assert np.hypot(*(where - np.round(target)).T).min() <= 5.0 + 1.0  # +1: the click lands on whole pixels
        wait_for(lambda c=chosen: f"molecule={c}" in driver.current_url, what="the URL to name it")
        clicks += 1
        if clicks == 3:
            break
    assert clicks >= 3
    assert any("/map/nearest" in u for u in requests.urls())
    assert requests.off_origin(image_url) == []


# Counts the molecule viewer's draws (each writes its scenes' captions afresh), notes, when the viewer
# shows a new molecule, the molecule the page URL names then (Dash updates the URL from the selection),
# and lists each viewer spec's molecule that Dash's viewer callback has finished with (`handled`).
VIEWER_PROBE_JS = """
const v = document.getElementById('molecule-viewer');
window.__viewer = {captions: 0, urlAtDraw: {}, handled: []};
const ns = window.dash_clientside.orientscope, render = ns.renderViewer;
ns.renderViewer = function (spec, id) {
  const out = render.apply(this, arguments);
  Promise.resolve(out).then(() => { if (id === 'molecule-viewer') window.__viewer.handled.push(spec && spec.molecule); });
  return out;
};
new MutationObserver(records => records.forEach(r => {
  if (r.type === 'attributes' && v.dataset.molecule) {
    window.__viewer.urlAtDraw[v.dataset.molecule] = new URLSearchParams(location.search).get('molecule');
  }
  r.addedNodes.forEach(n => { if (n.classList && n.classList.contains('viewer-caption')) window.__viewer.captions++; });
})).observe(v, {subtree: true, childList: true, attributes: true, attributeFilter: ['data-molecule']});
"""


def _get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


@pytest.mark.parametrize("server", ["image_url", "base_url"])  # the small store's whole map is points in base_url
def test_a_click_draws_the_servers_nearest_molecule_once_before_dash_and_a_miss_changes_nothing(
    driver, server, request, qm9_store
):
    url = request.getfixturevalue(server)
    graph = open_map(driver, url + "/?dataset=qm9&view=map")
    assert map_drawn(driver)["mode"] == ("image" if server == "image_url" else "points")
    md = load_map_data(qm9_store, "qm9")
    requests = PageRequests(driver)
    driver.execute_script(VIEWER_PROBE_JS)
    row = next(r for r in range(md.n_molecules) if np.abs(_pixels(driver, md, [r])[0, 0]).max() < 150)
    target = _pixels(driver, md, [row])[0, 0] + [2, -1]
    ActionChains(driver).move_to_element_with_offset(graph, int(target[0]), int(target[1])).click().perform()
    chosen = wait_for(lambda: _clicked(driver), what="the server's nearest molecule")
    wait_for(lambda: viewer_molecule(driver) == chosen, what=f"the viewer to show {chosen}")
    # the server's nearest point of that click, asked again: the molecule the viewer shows
    # (the hover there asks the same: one pick rule for hover and click)
    nearest = [u for u in requests.urls() if "/map/nearest?" in u]
    assert nearest and {_get_json(u)["id"] for u in nearest} == {chosen}
    # drawn before Dash had heard of it (the URL is one of Dash's answers to the selection) ...
    assert driver.execute_script("return window.__viewer.urlAtDraw")[chosen] != chosen
    # ... and then the Dash panel agrees: id, info, URL, ring and neighbour lists
    detail = molecule_detail(qm9_store, "qm9", chosen)
    wait_for(lambda: text_of(driver, "molecule-id") == chosen, what="the panel's molecule id")
    wait_for(lambda: detail["formula"] in text_of(driver, "molecule-info"), what="the panel's info")
    wait_for(lambda: f"molecule={chosen}" in driver.current_url, what="the URL to name it")
    wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#orientation-map svg.selection-ring circle"), what="ring")
    wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#molecule-extra .link-button"), what="neighbour lists")
    # Dash's copy of the spec (it came with the info) has reached the viewer, which did not draw it again
    wait_for(lambda: chosen in driver.execute_script("return window.__viewer.handled"), what="Dash's copy of the spec")
    n_atoms = len(detail["elements"])
    assert driver.execute_script("return document.getElementById('molecule-viewer').dataset.atoms") == (
        f"{n_atoms},{n_atoms}"
    )
    assert driver.execute_script("return window.__viewer.captions") == 2  # one draw of the two poses, not two
    # a click with no point within 5 px (outside the Mollweide ellipse): a hint, and nothing else changes
    settle(driver)
    shown = (text_of(driver, "molecule-id"), viewer_molecule(driver), driver.current_url)
    asked = len(requests.urls())
    size = graph.size
    ActionChains(driver).move_to_element_with_offset(
        graph, -size["width"] // 2 + 25, size["height"] // 2 - 60
    ).click().perform()
    wait_for(lambda: _clicked(driver) == "none", what="the server's answer")
    assert "No molecule within 5 px" in text_of(driver, "map-hint")
    settle(driver)  # a selection would have reached Dash (a pending callback) or the viewer (a frame) by now
    assert (text_of(driver, "molecule-id"), viewer_molecule(driver), driver.current_url) == shown
    assert driver.execute_script("return window.__viewer.captions") == 2
    since = requests.urls()[asked:]
    assert [u for u in since if "/_dash-update-component" in u or "/_molecule-viewer" in u] == [], since
    # a viewer spec of another molecule arriving now (an earlier selection's late answer) is not drawn
    other = str(md.ids[(md.row_of(chosen) + 1) % md.n_molecules])
    driver.execute_script(
        "fetch('/api/datasets/qm9/map/panel/' + encodeURIComponent(arguments[0])).then(r => r.json())"
        ".then(p => window.dash_clientside.set_props('viewer-spec', {data: p.viewer}))",
        other,
    )
    wait_for(lambda: other in driver.execute_script("return window.__viewer.handled"), what="the late spec handled")
    assert viewer_molecule(driver) == chosen and driver.execute_script("return window.__viewer.captions") == 2


def test_the_page_html_shows_the_image_map_with_its_hook_before_dash_draws_the_plot(driver, image_url, qm9_store):
    # Every request 0.5 s late: the page's own first paint (its image inline) is drawn before Dash's scripts arrive,
    # as on a first visit. With this module's warm cache Dash could otherwise take the page over before the first
    # paint's image had decoded, and no hook was ever set (a CI run once ended so).
    driver.execute_cdp_cmd("Network.enable", {})
    slow = {"offline": False, "latency": 500, "downloadThroughput": -1, "uploadThroughput": -1}
    try:
        driver.execute_cdp_cmd("Network.emulateNetworkConditions", slow)
        driver.get(image_url + "/?dataset=qm9&view=map")
        wait_for(lambda: map_drawn(driver), what="the interactive map's test hook")
    finally:
        driver.execute_cdp_cmd("Network.emulateNetworkConditions", slow | {"latency": 0})
    # the static first paint's image loaded and set the hook (frontend_assets/first_paint.js) ...
    assert driver.execute_script("return performance.getEntriesByName('orientscope:first-paint').length") == 1
    # ... and Dash's page replaced it with the plot, which carries the hook again
    assert driver.find_elements(By.CSS_SELECTOR, "[data-first-paint]") == []
    drawn = int(load_map_data(qm9_store, "qm9").axis_counts[1:].sum())  # the molecules with an orientation
    assert map_drawn(driver) == {"drawn": drawn, "mode": "image"}


def test_a_click_far_from_every_point_selects_nothing_and_says_so(driver, image_url, qm9_store):
    graph = open_map(driver, image_url + "/?dataset=qm9&view=map")
    before = text_of(driver, "molecule-id")
    # just inside the plot's lower left corner: outside the Mollweide ellipse, where no point lies
    size = graph.size
    ActionChains(driver).move_to_element_with_offset(
        graph, -size["width"] // 2 + 25, size["height"] // 2 - 60
    ).click().perform()
    wait_for(lambda: "No molecule within 5 px" in text_of(driver, "map-hint"), what="the hint")
    assert text_of(driver, "molecule-id") == before


def test_hovering_the_image_shows_the_pixels_count_and_dominant_axis(driver, image_url, qm9_store):
    graph = open_map(driver, image_url + "/?dataset=qm9&view=map")
    md = load_map_data(qm9_store, "qm9")
    for row in np.flatnonzero(~np.isnan(md.x[:, 0]))[:40]:  # molecules whose axis 1 is drawn
        target = _pixels(driver, md, [row])[0, 0]
        if np.abs(target).max() > 150:
            continue
        ActionChains(driver).move_to_element_with_offset(graph, int(target[0]), int(target[1])).perform()
        try:
            text = wait_for(
                lambda: driver.execute_script(
                    "const t = document.querySelector('#orientation-map .map-tooltip');"
                    "return t && !t.hidden && t.textContent"
                ),
                timeout=5,
                what="the tooltip",
            )
        except AssertionError:
            continue  # the point's pixel edge fell beside the cursor: try another
        assert re.match(r"molecule \S+ · axis [123]", text), text  # the hovered point's molecule and axis
        return
    pytest.fail("no hover over 40 molecules' points showed a tooltip")


# What the map's paint was drawn for: its token and the region (Mollweide units) the server drew.
FIGURE_META_JS = """
const p = document.getElementById('orientation-map')._mapHandle.paint();
return {token: p.hook.token, viewport: p.region};
"""


# Records the figure on screen when the map's test hook (data-drawn) is next set: cleared by the zoom, the hook
# must come back only with the zoomed region's figure.
FIRST_HOOK_JS = """
window.__firstHook = null;
const host = document.getElementById('orientation-map');
const watch = new MutationObserver(() => {
  if (!host.hasAttribute('data-drawn') || host.hasAttribute('data-first-paint')) return;
  const p = host._mapHandle.paint();
  window.__firstHook = {token: p.hook.token, viewport: p.region};
  watch.disconnect();
});
watch.observe(host, {attributes: true, attributeFilter: ['data-drawn']});
"""


def test_after_a_zoom_the_hook_waits_for_the_zoomed_regions_figure(driver, image_url):
    open_map(driver, image_url + "/?dataset=qm9&view=map")
    # the zoom scales the old image at once: that is not the region drawn, so the hook must stay unset until the
    # server's paint of the region is drawn
    for y0, y1 in ((-0.6, 0.4), (0.1, 0.3)):
        before = driver.execute_script(FIGURE_META_JS)
        driver.execute_script(FIRST_HOOK_JS)
        driver.execute_script(ZOOM_JS, [-0.5 * MAP_SCALE, 0.5 * MAP_SCALE], [y0 * MAP_SCALE, y1 * MAP_SCALE])
        # the ranges shown once the region is fitted to the map's aspect ratio
        region = driver.execute_script("return document.getElementById('orientation-map')._mapHandle.region()")
        ranges = [
            [region["x0"] * MAP_SCALE, region["x1"] * MAP_SCALE],
            [region["y0"] * MAP_SCALE, region["y1"] * MAP_SCALE],
        ]
        # the figure the hook was first set for after the zoom: not the old one, echoed at the new ranges
        hooked = wait_for(lambda: driver.execute_script("return window.__firstHook"), what="the zoomed map's hook")
        assert hooked["token"] != before["token"]
        vp = hooked["viewport"]
        drawn_for = [sorted((vp["x0"], vp["x1"])), sorted((vp["y0"], vp["y1"]))]
        assert np.allclose(drawn_for, np.sort(np.array(ranges) / MAP_SCALE, axis=1))


# The paint requests the page made (GET .../map/paint) and the drawings' tokens seen, from now on.
PAINTS_JS = """
window.__tokens = [];
const host = document.getElementById('orientation-map');
if (!host.__watched) { host.__watched = true;
  new MutationObserver(() => { if (host.hasAttribute('data-drawn')) window.__tokens.push(host.dataset.token); })
    .observe(host, {attributes: true, attributeFilter: ['data-drawn']}); }
return performance.getEntriesByType('resource').filter(e => e.name.includes('/map/paint?')).length;
"""
ASKED_JS = "return performance.getEntriesByType('resource').filter(e => e.name.includes('/map/paint?')).length"


def test_a_zoom_asks_for_the_regions_paint_once_and_draws_it_once(driver, image_url):
    """A zoom scales the shown drawing at once, then asks the REST resource for the region's paint once and draws it:
    one request and one new drawing per zoom (no second draw of an echo, as dcc.Graph's once was)."""
    open_map(driver, image_url + "/?dataset=qm9&view=map")
    for y0, y1 in ((-0.6, 0.4), (0.1, 0.3), (-0.2, 0.2)):
        before = driver.execute_script(FIGURE_META_JS)["token"]
        asked = driver.execute_script(PAINTS_JS)
        driver.execute_script(ZOOM_JS, [-0.5 * MAP_SCALE, 0.5 * MAP_SCALE], [y0 * MAP_SCALE, y1 * MAP_SCALE])
        wait_for(lambda b=before: map_drawn(driver) and driver.execute_script(FIGURE_META_JS)["token"] != b,
                 what="the zoomed map's test hook")  # fmt: skip
        settle(driver)  # a second draw would be a pending callback or a frame
        tokens = driver.execute_script("return window.__tokens")
        assert driver.execute_script(ASKED_JS) == asked + 1 and len(set(tokens)) == 1, tokens


def test_zooming_into_a_small_region_switches_to_points_with_hover(driver, image_url, qm9_store):
    graph = open_map(driver, image_url + "/?dataset=qm9&view=map")
    md = load_map_data(qm9_store, "qm9")
    # a region around a molecule's first axis, small enough to hold fewer than BUDGET points
    first = int(np.flatnonzero(~np.isnan(md.x[:, 0]))[0])  # molecule 0 is methane: no axis is drawn
    cx, cy = float(md.x[first, 0]), float(md.y[first, 0])
    half = 0.4
    driver.execute_script(
        ZOOM_JS,
        [(cx - half) * MAP_SCALE, (cx + half) * MAP_SCALE],
        [(cy - half / 2) * MAP_SCALE, (cy + half / 2) * MAP_SCALE],
    )
    shown = wait_for(lambda: (m := map_drawn(driver)) and m["mode"] == "points" and m, what="points mode")
    x0, x1, y0, y1 = driver.execute_script(
        "const v = document.getElementById('orientation-map')._mapHandle.paint().region;return [v.x0, v.x1, v.y0, v.y1]"
    )
    inside = (md.x >= x0) & (md.x <= x1) & (md.y >= y0) & (md.y <= y1)
    assert 0 < inside.sum() <= BUDGET and shown["drawn"] == inside.any(axis=1).sum()
    # hover the molecule's point: the tooltip names the molecule a click there opens
    target = _pixels(driver, md, [first])[0, 0]
    ActionChains(driver).move_to_element_with_offset(graph, int(target[0]), int(target[1])).perform()
    label = wait_for(
        lambda: driver.execute_script(
            "const t = document.querySelector('#orientation-map .map-tooltip'); return t && !t.hidden && t.textContent"
        ),
        what="a hover label",
    )
    names = {w for w in label.replace("molecule", " ").split()}
    near = [str(md.ids[r]) for r in np.flatnonzero(inside.any(axis=1))]
    assert names & set(near), (label, near[:5])
    # and a click there opens a molecule (points mode: the same server lookup)
    ActionChains(driver).click().perform()
    wait_for(lambda: text_of(driver, "molecule-id") in near, what="the clicked molecule")
    sx, sy = driver.execute_script(PIXEL_SIZE_JS)
    assert math.isclose(sx, sy, rel_tol=0.02)  # equal-area map: square pixels


def test_the_sphere_view_is_clickable_without_2d_axes(driver, image_url, qm9_store):
    open_map(driver, image_url + "/?dataset=qm9&view=sphere")
    md = load_map_data(qm9_store, "qm9")
    assert map_drawn(driver) == {"drawn": int(md.axis_counts[1:].sum()), "mode": "points"}
    assert driver.find_elements(By.CSS_SELECTOR, "#orientation-map .xtick, #orientation-map .ytick") == []
    cam, sphere = dash_sphere(driver)
    k = lone_front_dot(sphere, cam)
    point_at_dot(driver, DASH_SPHERE_CANVAS, cam, sphere, k, click=True)
    chosen = wait_for(lambda: text_of(driver, "molecule-id"), what="the clicked molecule")
    v = md.vectors(np.full(3, md.row_of(chosen)), np.array([1, 2, 3]))
    assert (
        np.abs(v - np.asarray(sphere["vectors"][3 * k : 3 * k + 3])).sum(axis=1).min() < 2e-3
    )  # its dot, 1e-3 rounded
    wait_for(lambda: viewer_molecule(driver) == chosen, what="the viewer to show it")
    settle(driver)  # the click's callbacks are answered and drawn


def test_exports_of_the_image_map_keep_vectors_and_embed_the_image(driver, image_url, download_dir):
    open_map(driver, image_url + "/?dataset=qm9&view=map")
    assert map_drawn(driver)["mode"] == "image"
    for old in download_dir.iterdir():
        old.unlink()
    for button, suffix in (("export-svg", ".svg"), ("export-png", ".png"), ("download-report-btn", ".html")):
        driver.find_element(By.ID, button).click()
        path = wait_for(
            lambda s=suffix: [p for p in download_dir.iterdir() if p.name.endswith(s)], what=f"a {suffix} file"
        )[0]
        wait_for(lambda p=path: p.stat().st_size > 1000, what=f"{path.name} written")
    svg = next(p for p in download_dir.iterdir() if p.suffix == ".svg").read_text()
    assert "data:image/png;base64," in svg  # the aggregated image, embedded
    assert svg.count("<path") >= 2 and "reference" in svg  # outline, graticule and legend stay vectors
    assert next(p for p in download_dir.iterdir() if p.suffix == ".png").read_bytes()[:4] == b"\x89PNG"
    html = next(p for p in download_dir.iterdir() if p.suffix == ".html").read_text()
    assert "data:image/png;base64," in html  # the report's map is the same image under vectors


def test_a_zoomed_images_export_embeds_the_servers_png(driver, image_url, download_dir):
    # an export embeds the image itself, byte for byte as the server sent it for the region shown
    open_map(driver, image_url + "/?dataset=qm9&view=map")
    before = driver.execute_script(FIGURE_META_JS)["token"]
    driver.execute_script(ZOOM_JS, [-2.0 * MAP_SCALE, 1.6 * MAP_SCALE], [-1.0 * MAP_SCALE, 1.1 * MAP_SCALE])
    wait_for(lambda: map_drawn(driver) and driver.execute_script(FIGURE_META_JS)["token"] != before, what="the zoom")
    assert map_drawn(driver)["mode"] == "image"
    paint = driver.execute_script("return document.getElementById('orientation-map')._mapHandle.paint()")
    stage = driver.execute_script(
        "const s = document.querySelector('#orientation-map .map-stage'); return [s.clientWidth, s.clientHeight]"
    )
    query = urllib.parse.urlencode(
        {**paint["settings"]["query"], **paint["region"], "width": stage[0], "height": stage[1]}
    )
    png = _get_json(f"{image_url}/api/datasets/{paint['settings']['dataset']}/map/paint?{query}")["image"]["source"]
    assert png.startswith("data:image/png;base64,") and png == paint["image"]["source"]
    for old in download_dir.iterdir():
        old.unlink()
    driver.find_element(By.ID, "export-svg").click()
    path = wait_for(lambda: [p for p in download_dir.iterdir() if p.name.endswith(".svg")], what="the SVG")[0]
    wait_for(lambda: path.stat().st_size > 1000, what=f"{path.name} written")
    svg = path.read_text()
    assert png in svg and "blob:" not in svg
