"""Zoom and pan keep the region asked for, in real headless Chromium (the map's renderer, map_draw.js): the drawing's
view box, not only what the server was asked, is checked; the image covers the visible region, points mode draws every
point in it; double-click and home return to the whole map; the zoom goes into the URL and back."""

from __future__ import annotations

import numpy as np
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from orientscope.figures.plots import MAP_RANGE_X, MAP_RANGE_Y, MAP_SCALE
from orientscope.services.map_data import load_map_data
from tests.browser.chrome import map_drawn
from tests.browser.pages import TO_PIXEL_JS, open_map, wait_for

pytestmark = pytest.mark.browser

# What the drawing shows (map_draw.js): its view box's ranges (map units, y up), the stage's pixel size, the drawn
# paint's token, mode and image (map units, y up).
SHOWN_JS = """
const host = document.getElementById('orientation-map'), stage = host.querySelector('.map-stage');
const vb = stage.querySelector('svg').viewBox.baseVal, p = host._mapHandle.paint(), im = p.image;
return {x: [vb.x, vb.x + vb.width], y: [-(vb.y + vb.height), -vb.y], px: [stage.clientWidth, stage.clientHeight],
        token: host.dataset.token, mode: p.hook.mode,
        image: im ? [im.x, im.x + im.width, -(im.y + im.height), -im.y] : null};
"""
# Map units (y up) of pixel offsets from the drawing's centre (as ActionChains offsets are).
TO_VALUE_JS = """
const stage = document.querySelector('#orientation-map .map-stage'), vb = stage.querySelector('svg').viewBox.baseVal;
const r = stage.getBoundingClientRect();
const cx = Math.floor(r.left + r.width / 2), cy = Math.floor(r.top + r.height / 2);  // WebDriver's centre
return arguments[0].map(p => [vb.x + (cx + p[0] - r.left) / r.width * vb.width,
                              -(vb.y + (cy + p[1] - r.top) / r.height * vb.height)]);
"""
# Every drawn point of the points layers, map units (y up).
POINTS_JS = """
const p = document.getElementById('orientation-map')._mapHandle.paint(), out = [];
const dec = s => { const b = atob(s.bdata), u = new Uint8Array(b.length);
  for (let i = 0; i < b.length; i++) u[i] = b.charCodeAt(i); return new Int16Array(u.buffer); };
p.layers.forEach(l => { if (l.kind === 'points') { const x = dec(l.x), y = dec(l.y);
  for (let i = 0; i < x.length; i++) out.push([x[i], -y[i]]); } });
return out;
"""


def _shown(driver) -> dict:
    return driver.execute_script(SHOWN_JS)


def _redrawn(driver, before: dict) -> dict:
    """What the plot shows once a new figure (not ``before``'s) is drawn and its hook is set."""
    wait_for(lambda: map_drawn(driver) and _shown(driver)["token"] != before["token"], what="the region's figure")
    return _shown(driver)


def _tool(driver, name: str) -> None:
    """Click a button of the map's toolbar: a drag mode (zoom, pan, lasso) or "reset" (the whole map)."""
    css = ".map-reset" if name == "reset" else f".map-mode[data-mode='{name}']"
    driver.find_element(By.CSS_SELECTOR, f"#orientation-map {css}").click()
    if name != "reset":
        wait_for(lambda: driver.execute_script(
            "return document.getElementById('orientation-map').dataset.drag") == name, what=f"the {name} mode")  # fmt: skip


def _box_zoom(driver, graph, start, size) -> np.ndarray:
    """Drag a zoom box from pixel offset ``start`` over ``size`` pixels; the box's [[x0, x1], [y0, y1]], map units."""
    _tool(driver, "zoom")
    # wholly in view: WebDriver's offsets are from the centre of the element's part in view
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", graph)
    chain = ActionChains(driver).move_to_element_with_offset(graph, *start).click_and_hold()
    for k in range(1, 6):
        chain.move_to_element_with_offset(graph, start[0] + size[0] * k // 5, start[1] + size[1] * k // 5)
    box = np.array(driver.execute_script(TO_VALUE_JS, [start, [start[0] + size[0], start[1] + size[1]]]))
    chain.release().perform()
    return np.sort(box.T, axis=1)


def _assert_region_holds_box(shown: dict, box: np.ndarray) -> None:
    ranges = np.sort(np.array([shown["x"], shown["y"]]), axis=1)
    tol = (ranges[:, 1] - ranges[:, 0]) / np.array(shown["px"])  # a pixel
    assert (ranges[:, 0] <= box[:, 0] + tol).all() and (ranges[:, 1] >= box[:, 1] - tol).all(), (ranges, box)
    # on the side that bounds it, the region is the box (the other is widened to keep the aspect)
    assert ((ranges[:, 1] - ranges[:, 0]) / (box[:, 1] - box[:, 0])).min() <= 1.1, (ranges, box)
    per_px = (ranges[:, 1] - ranges[:, 0]) / np.array(shown["px"])
    assert np.isclose(per_px[0], per_px[1], rtol=0.02)  # equal-area map: square pixels


def _assert_image_covers(shown: dict) -> None:
    """The image covers the plot's visible part of the map (no blank band), within a pixel."""
    x0, x1 = sorted(shown["x"])
    y0, y1 = sorted(shown["y"])
    px = (x1 - x0) / shown["px"][0]
    ix0, ix1, iy0, iy1 = shown["image"]
    assert ix0 <= max(x0, MAP_RANGE_X[0]) + px and ix1 >= min(x1, MAP_RANGE_X[1]) - px, (shown["image"], x0, x1)
    assert iy0 <= max(y0, MAP_RANGE_Y[0]) + px and iy1 >= min(y1, MAP_RANGE_Y[1]) - px, (shown["image"], y0, y1)


def test_a_box_zoom_on_the_image_shows_that_region_re_aggregated(driver, image_url):
    graph = open_map(driver, image_url + "/?dataset=qm9&view=map")
    before = _shown(driver)
    assert before["mode"] == "image"
    box = _box_zoom(driver, graph, (-260, -130), (440, 220))  # more than BUDGET points: still an image
    shown = _redrawn(driver, before)
    assert shown["mode"] == "image", shown["px"]
    _assert_region_holds_box(shown, box)
    _assert_image_covers(shown)
    # a pan of that region: the new region is drawn whole
    _tool(driver, "pan")
    ActionChains(driver).move_to_element_with_offset(graph, 0, 0).click_and_hold().move_by_offset(
        60, 30
    ).move_by_offset(60, 30).release().perform()
    panned = _redrawn(driver, shown)
    assert panned["x"][0] < shown["x"][0] and panned["y"][0] > shown["y"][0]  # dragged right and down
    assert np.isclose(panned["x"][1] - panned["x"][0], shown["x"][1] - shown["x"][0], rtol=0.01)
    _assert_image_covers(panned)


def test_a_box_zoom_in_points_mode_draws_every_point_of_the_region(driver, image_url, qm9_store):
    graph = open_map(driver, image_url + "/?dataset=qm9&view=map")
    md = load_map_data(qm9_store, "qm9")
    before = _shown(driver)
    box = _box_zoom(driver, graph, (-40, -20), (80, 40))  # about 1/40 of the map: under the budget
    shown = _redrawn(driver, before)
    assert shown["mode"] == "points"
    _assert_region_holds_box(shown, box)
    (x0, x1), (y0, y1) = np.sort(np.array([shown["x"], shown["y"]]) / MAP_SCALE, axis=1)
    inside = (md.x >= x0) & (md.x <= x1) & (md.y >= y0) & (md.y <= y1)
    want = np.round(np.column_stack([md.x[inside], md.y[inside]]) * MAP_SCALE)
    drawn = np.array(driver.execute_script(POINTS_JS)).reshape(-1, 2)
    assert len(want) > 0 and len(drawn) == len(want)
    assert sorted(map(tuple, drawn.tolist())) == sorted(map(tuple, want.tolist()))


def test_double_click_and_home_return_to_the_whole_map(driver, image_url):
    graph = open_map(driver, image_url + "/?dataset=qm9&view=map")
    whole = _shown(driver)
    for back in ("double-click", "home"):
        shown = _shown(driver)
        _box_zoom(driver, graph, (-100, -50), (160, 80))
        zoomed = _redrawn(driver, shown)
        assert zoomed["x"][1] - zoomed["x"][0] < 0.5 * (whole["x"][1] - whole["x"][0])
        wait_for(lambda: "zoom=" in driver.current_url, what="the zoom in the URL")
        if back == "home":
            _tool(driver, "reset")
        else:
            ActionChains(driver).move_to_element_with_offset(graph, 10, 10).double_click().perform()
        again = _redrawn(driver, zoomed)
        assert np.allclose(again["x"], whole["x"], atol=2) and np.allclose(again["y"], whole["y"], atol=2), back
        wait_for(lambda: "zoom=" not in driver.current_url, what="the URL to drop the zoom")


def test_the_zoom_goes_into_the_url_and_the_back_button_restores_it(driver, image_url):
    graph = open_map(driver, image_url + "/?dataset=qm9&view=map")
    whole = _shown(driver)
    first_box = _box_zoom(driver, graph, (-260, -130), (440, 220))
    first = _redrawn(driver, whole)
    wait_for(lambda: "zoom=" in driver.current_url, what="the zoom in the URL")
    first_url = driver.current_url
    graph = driver.find_element(By.CSS_SELECTOR, "#orientation-map .map-stage")
    _box_zoom(driver, graph, (-40, -20), (80, 40))
    second = _redrawn(driver, first)
    wait_for(lambda: driver.current_url != first_url, what="the second zoom in the URL")
    driver.back()
    wait_for(lambda: driver.current_url == first_url, what="the URL of the first zoom")
    restored = _redrawn(driver, second)
    assert np.allclose(restored["x"], first["x"], atol=2) and np.allclose(restored["y"], first["y"], atol=2)
    driver.back()
    back_home = _redrawn(driver, restored)
    assert np.allclose(back_home["x"], whole["x"], atol=2) and np.allclose(back_home["y"], whole["y"], atol=2)
    # a link to the zoom opens it: the plot shows (at least) the box, the image covers what is shown
    open_map(driver, first_url)
    opened = _shown(driver)
    _assert_region_holds_box(opened, first_box)
    _assert_image_covers(opened)


@pytest.mark.parametrize(
    "box",
    [(-2.0, -1.8, -0.8, 0.6), (1.8, 2.0, -1.2, -0.2), (-1.0, 1.5, 0.9, 1.1)],  # tall at the left and right, wide
    ids=["tall-left", "tall-right", "wide-top"],
)
def test_a_zoom_box_is_kept_and_widened_about_its_own_centre(driver, image_url, box):
    """A tall box is widened to the map's aspect (a wide one heightened): the region drawn holds the box with as much
    added on each side, in the direction the aspect needs (plotly.js once widened it by one side only)."""
    graph = open_map(driver, image_url + "/?dataset=qm9&view=map")
    _tool(driver, "zoom")
    before = _shown(driver)
    x0, x1, y0, y1 = (v * MAP_SCALE for v in box)
    corner, opposite = np.round(driver.execute_script(TO_PIXEL_JS, [[x0, y1], [x1, y0]]))
    drawn_box = np.array(driver.execute_script(TO_VALUE_JS, [corner.tolist(), opposite.tolist()]))  # the pixels hit
    ActionChains(driver).move_to_element_with_offset(
        graph, int(corner[0]), int(corner[1])
    ).click_and_hold().move_by_offset(
        int((opposite[0] - corner[0]) / 2), int((opposite[1] - corner[1]) / 2)
    ).move_to_element_with_offset(graph, int(opposite[0]), int(opposite[1])).release().perform()
    shown = _redrawn(driver, before)
    bx = sorted(drawn_box[:, 0])
    by = sorted(drawn_box[:, 1])
    centre = ((bx[0] + bx[1]) / 2, (by[0] + by[1]) / 2)
    pixel = (bx[1] - bx[0]) / abs(opposite[0] - corner[0])  # map units per pixel of the box as drawn
    assert (shown["x"][0] + shown["x"][1]) / 2 == pytest.approx(centre[0], abs=2 * pixel)  # as much on each side
    assert (shown["y"][0] + shown["y"][1]) / 2 == pytest.approx(centre[1], abs=2 * pixel)
    assert shown["x"][0] <= bx[0] + 2 * pixel and shown["x"][1] >= bx[1] - 2 * pixel  # the box is inside
    assert shown["y"][0] <= by[0] + 2 * pixel and shown["y"][1] >= by[1] - 2 * pixel
    tall = (bx[1] - bx[0]) / (by[1] - by[0]) < shown["px"][0] / shown["px"][1]
    kept = by if tall else bx  # the box's long side is the region's
    side = shown["y"] if tall else shown["x"]
    assert side == pytest.approx(kept, abs=2 * pixel)
