"""The map's renderer (frontend_assets/map_draw.js) in real headless Chromium: the same code draws the plane views on
the page's first paint and inside Dash; a wheel zoom redraws the region from GET .../map/paint and goes into the URL
(?zoom=), which the back button restores; a lasso or a box selects the molecules inside it (a box kept by a reload); a
click opens the molecule under it; PNG and SVG export (the page's buttons, the only ones) give what is shown; the
density view's two maps hover together; Dash takes the first paint's drawing over without drawing it again."""

from __future__ import annotations

import base64
import re
from urllib.parse import parse_qs, unquote, urlparse

import numpy as np
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
from selenium.webdriver.common.by import By

from orientscope.services.map_data import load_map_data
from tests.browser.chrome import map_drawn
from tests.browser.pages import FIRST_PAINT, HOLD_JS, wait_for

pytestmark = pytest.mark.browser
MAP_SCALE = 10_000
HOOK_JS = "const m = document.getElementById('orientation-map'); return m && [m.dataset.token, m.dataset.zoom];"
# what a drawing is made of, tag and class per element in document order: two drawings of one paint agree
STRUCTURE_JS = """
const plane = document.querySelector(arguments[0] + ' .map-plane');
return plane && [...plane.querySelectorAll('*')].filter(e => !e.closest('.map-legend'))
  .map(e => e.tagName.toLowerCase() + '.' + (e.getAttribute('class') || ''));
"""
# on-screen offsets from the stage's centre (ActionChains' origin) of Mollweide points, from the drawing's viewBox
PIXELS_JS = """
const host = document.getElementById('orientation-map'), stage = host.querySelector('.map-stage');
const svg = stage.querySelector('svg'), vb = svg.viewBox.baseVal, r = stage.getBoundingClientRect();
const cx = Math.floor(r.left + r.width / 2), cy = Math.floor(r.top + r.height / 2);  // WebDriver's centre
return arguments[0].map(p => [r.left + (p[0] * 1e4 - vb.x) / vb.width * r.width - cx,
                              r.top + (-p[1] * 1e4 - vb.y) / vb.height * r.height - cy]);
"""


def _stage(driver, selector="#orientation-map"):
    return driver.find_element(By.CSS_SELECTOR, f"{selector} .map-stage")


def _open(driver, url):
    driver.get(url)
    wait_for(lambda: map_drawn(driver), what="Dash's map drawn")
    stage = _stage(driver)
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", stage)
    return stage


def _wheel_in(driver, stage, notches=3, first_paint=False):
    before = driver.execute_script(HOOK_JS)
    origin = ScrollOrigin.from_element(stage, 10, 5)
    for _ in range(notches):
        ActionChains(driver).scroll_from_origin(origin, 0, -120).perform()
    # the new state: a region's paint on screen (its own token) with the zoom in the hook
    return wait_for(
        lambda: (
            (h := driver.execute_script(HOOK_JS))
            and h[0] != before[0]
            and h[1]
            and map_drawn(driver, first_paint)
            and h
        ),
        what="the zoomed region's paint",
    )


def test_the_dash_map_is_the_renderers_and_a_wheel_zoom_redraws_the_region_into_the_url_and_back(driver, base_url):
    stage = _open(driver, base_url + "/?dataset=qm9&view=map")
    assert driver.execute_script("return document.getElementById('orientation-graph-box').hidden") is True
    assert driver.execute_script("return !!document.querySelector('#orientation-map canvas.map-points')")
    token, zoom = _wheel_in(driver, stage)
    region = [float(v) for v in zoom.split(",")]
    assert region[1] - region[0] < 5.9 * 0.8  # zoomed in
    # the region's own paint at full resolution: asked of the REST resource for exactly the region shown
    paint = driver.execute_script("return document.getElementById('orientation-map')._mapHandle.paint()")
    assert [paint["region"][k] for k in ("x0", "x1", "y0", "y1")] == pytest.approx(region, abs=1e-4)
    assert paint["hook"]["token"] == token and paint["hook"]["mode"] == "points"
    wait_for(lambda: "zoom=" in driver.current_url, what="the zoom in the URL")
    assert parse_qs(urlparse(driver.current_url).query)["zoom"][0] == zoom
    # the back button restores the whole map, the region drawn again
    driver.back()
    wait_for(lambda: "zoom=" not in driver.current_url, what="the URL without its zoom")
    wait_for(lambda: driver.execute_script(HOOK_JS)[1] == "" and map_drawn(driver), what="the whole map again")
    driver.forward()
    wait_for(lambda: driver.execute_script(HOOK_JS)[1] == zoom and map_drawn(driver), what="the zoom again")


def test_a_lasso_selects_the_molecules_inside_it(driver, base_url, qm9_store):
    stage = _open(driver, base_url + "/?dataset=qm9&view=map")
    driver.find_element(By.CSS_SELECTOR, "#orientation-map .map-mode[data-mode='lasso']").click()
    corners = np.array([[-1.2, -0.6], [0.8, -0.7], [0.9, 0.6], [-1.0, 0.7]])
    pixels = np.array(driver.execute_script(PIXELS_JS, corners.tolist()))
    chain = (
        ActionChains(driver).move_to_element_with_offset(stage, int(pixels[0, 0]), int(pixels[0, 1])).click_and_hold()
    )
    for a, b in zip(pixels, np.roll(pixels, -1, axis=0), strict=True):
        for t in np.linspace(0.25, 1.0, 4):
            p = a + (b - a) * t
            chain.move_to_element_with_offset(stage, int(p[0]), int(p[1]))
    chain.release().perform()
    sel = wait_for(lambda: parse_qs(urlparse(driver.current_url).query).get("sel"), what="the selection in the URL")[0]
    assert sel.startswith("lasso:")
    values = [float(v) for v in unquote(sel)[len("lasso:") :].split(",")]
    polygon = np.array(values).reshape(-1, 2)
    assert np.abs(polygon[:4].min(0) - corners.min(0)).max() < 0.15  # the polygon drawn, in Mollweide units
    md = load_map_data(qm9_store, "qm9")
    inside = _inside(md.x, md.y, polygon)  # (n_molecules, 3): a shown axis point in the polygon
    expected = int(inside.any(axis=1).sum())
    assert expected > 0
    text = wait_for(
        lambda: (t := driver.find_element(By.ID, "selection-panel").text) and re.search(r"[\d,]+ molecule", t) and t,
        what="the selection's molecules",
    )
    assert f"{expected:,} molecule" in text, (expected, text)
    assert driver.execute_script("return !!document.querySelector('#orientation-map path.lasso')")


def test_a_box_selection_selects_the_molecules_inside_it_and_a_reload_keeps_it(driver, base_url, qm9_store):
    stage = _open(driver, base_url + "/?dataset=qm9&view=map")
    driver.find_element(By.CSS_SELECTOR, "#orientation-map .map-mode[data-mode='box']").click()
    wait_for(
        lambda: driver.execute_script("return document.getElementById('orientation-map').dataset.drag") == "box",
        what="the box select mode",
    )
    _drag_box(driver, stage, [[-1.3, 0.7], [0.6, -0.5]])  # a drag from the upper left to the lower right
    sel = wait_for(lambda: parse_qs(urlparse(driver.current_url).query).get("sel"), what="the selection in the URL")[0]
    assert sel.startswith("box:")
    x0, x1, y0, y1 = (float(v) for v in unquote(sel)[len("box:") :].split(","))
    assert x0 < x1 and y0 < y1  # the box's edges, ordered, in Mollweide units (y up)
    assert np.abs(np.array([x0, x1, y0, y1]) - [-1.3, 0.6, -0.5, 0.7]).max() < 0.03  # within a pixel or two
    md = load_map_data(qm9_store, "qm9")
    expected = _in_box(md, x0, x1, y0, y1)
    assert 0 < expected < md.n_molecules
    count = "#selection-count"
    text = wait_for(
        lambda: (t := driver.find_element(By.CSS_SELECTOR, count).text) and "molecule" in t and t,
        what="the selection's molecules",
    )
    assert text.startswith(f"{expected:,} molecule"), (expected, text)
    box_js = "const p = document.querySelector('#orientation-map path.lasso'); return p && p.getAttribute('d')"
    drawn = driver.execute_script(box_js)
    assert drawn and drawn.endswith("Z") and drawn.count("L") == 3  # the box stays outlined: four corners
    # a reload (the URL alone) keeps the box: listed and outlined again
    driver.get(driver.current_url)
    wait_for(lambda: map_drawn(driver), what="the map after the reload")
    assert parse_qs(urlparse(driver.current_url).query)["sel"][0] == sel
    again = wait_for(
        lambda: (t := driver.find_element(By.CSS_SELECTOR, count).text) and "molecule" in t and t,
        what="the selection's molecules after the reload",
    )
    assert again == text
    outline = wait_for(lambda: driver.execute_script(box_js), what="the box's outline after the reload")
    vertices = np.array([[float(v) for v in q.split()] for q in outline[1:-1].split("L")]) / MAP_SCALE
    assert np.allclose(np.sort(vertices[:, 0]), [x0, x0, x1, x1], atol=1e-4)
    assert np.allclose(np.sort(-vertices[:, 1]), [y0, y0, y1, y1], atol=1e-4)  # SVG's y down


def _in_box(md, x0: float, x1: float, y0: float, y1: float) -> int:
    """How many molecules have an axis point inside the box (Mollweide units, y up)."""
    with np.errstate(invalid="ignore"):  # NaN: an axis the molecule's symmetry leaves undefined, never inside
        inside = (md.x >= x0) & (md.x <= x1) & (md.y >= y0) & (md.y <= y1)  # (n_molecules, 3)
    return int(inside.any(axis=1).sum())


def _drag_box(driver, stage, corners) -> None:
    """A box dragged on ``stage`` between two Mollweide points, in a few steps."""
    pixels = np.array(driver.execute_script(PIXELS_JS, np.asarray(corners).tolist()))
    chain = ActionChains(driver).move_to_element_with_offset(stage, int(pixels[0, 0]), int(pixels[0, 1]))
    chain.click_and_hold()
    for t in np.linspace(0.25, 1.0, 4):
        p = pixels[0] + (pixels[1] - pixels[0]) * t
        chain.move_to_element_with_offset(stage, int(p[0]), int(p[1]))
    chain.release().perform()


@pytest.mark.parametrize("hold", ["renderer", "layout"])
def test_a_box_drawn_on_the_first_paint_before_dash_is_ready_is_listed_once_dash_takes_over(image_url, qm9_store, hold):
    """Dash held back (its renderer not started, or its layout asked for with the page's URL of before the box and
    not yet answered): the first paint's box goes into the URL at once, and once Dash has taken the drawing over
    it lists the box's molecules and keeps its outline."""
    from tests.browser.chrome import make_driver, quit_driver

    drv = make_driver()
    try:
        drv.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": HOLD_JS.replace("HOLD", repr(hold))})
        drv.get(image_url + "/?dataset=qm9&view=map")
        wait_for(lambda: map_drawn(drv, first_paint=True), what="the first paint's test hook")
        if hold == "layout":  # Dash's renderer has asked for its layout, with the URL as it is now
            wait_for(lambda: drv.execute_script("return !!document.querySelector('#react-entry-point ._dash-loading')"))
        stage = drv.find_element(By.CSS_SELECTOR, FIRST_PAINT + " .map-stage")
        drv.execute_script("arguments[0].scrollIntoView({block: 'center'})", stage)
        drv.find_element(By.CSS_SELECTOR, FIRST_PAINT + " .map-mode[data-mode='box']").click()
        wait_for(
            lambda: drv.execute_script(f"return document.querySelector('{FIRST_PAINT}').dataset.drag") == "box",
            what="the first paint's box select mode",
        )
        _drag_box(drv, stage, [[-1.3, 0.7], [0.6, -0.5]])
        sel = wait_for(lambda: parse_qs(urlparse(drv.current_url).query).get("sel"), what="the box in the URL")[0]
        assert sel.startswith("box:")
        assert not drv.find_elements(By.CSS_SELECTOR, "#react-entry-point #selection-count")  # Dash not rendered
        x0, x1, y0, y1 = (float(v) for v in unquote(sel)[len("box:") :].split(","))
        expected = _in_box(load_map_data(qm9_store, "qm9"), x0, x1, y0, y1)
        assert expected > 0
        drv.execute_script("window.__release()")
        wait_for(lambda: map_drawn(drv), what="Dash's map, the first paint's drawing taken over")
        text = wait_for(
            lambda: (t := drv.find_element(By.CSS_SELECTOR, "#selection-count").text) and "molecule" in t and t,
            what="the box's molecules listed by Dash",
        )
        assert text.startswith(f"{expected:,} molecule"), (expected, text)
        assert parse_qs(urlparse(drv.current_url).query)["sel"][0] == sel
        box_js = "const p = document.querySelector('#orientation-map path.lasso'); return p && p.getAttribute('d')"
        assert wait_for(lambda: drv.execute_script(box_js), what="the box's outline on Dash's map").endswith("Z")
    finally:
        quit_driver(drv)


def _inside(x: np.ndarray, y: np.ndarray, polygon: np.ndarray) -> np.ndarray:
    """Even-odd rule: which of the points (x, y) lie inside ``polygon`` (k, 2); NaN points are outside."""
    inside = np.zeros(x.shape, bool)
    for (x0, y0), (x1, y1) in zip(polygon, np.roll(polygon, -1, axis=0), strict=True):
        with np.errstate(invalid="ignore", divide="ignore"):
            crosses = ((y0 > y) != (y1 > y)) & (x < (x1 - x0) * (y - y0) / (y1 - y0) + x0)
        inside ^= crosses
    return inside


def test_a_click_opens_the_molecule_under_it_and_export_gives_what_is_shown(driver, base_url, qm9_store):
    stage = _open(driver, base_url + "/?dataset=qm9&view=map")
    md = load_map_data(qm9_store, "qm9")
    rng = np.random.default_rng(0)
    for row in rng.permutation(md.n_molecules)[:20]:
        at = driver.execute_script(PIXELS_JS, [[float(md.x[row, 0]), float(md.y[row, 0])]])[0]
        if at[0] is None or abs(at[0]) > 300 or abs(at[1]) > 150:
            continue
        ActionChains(driver).move_to_element_with_offset(stage, int(at[0]), int(at[1])).click().perform()
        chosen = wait_for(
            lambda: driver.execute_script("return document.getElementById('orientation-map').dataset.clicked"),
            what="the pick",
        )
        if chosen == "none":
            continue
        # the molecule chosen has a point within 5 px of the click, and is opened in the panel and the URL
        points = np.array(
            driver.execute_script(
                PIXELS_JS,
                [
                    [float(md.x[md.row_of(chosen), a]), float(md.y[md.row_of(chosen), a])]
                    for a in range(3)
                    if np.isfinite(md.x[md.row_of(chosen), a])
                ],
            )
        )
        assert np.hypot(*(points - np.round(at)).T).min() <= 6.0
        wait_for(lambda c=chosen: driver.find_element(By.ID, "molecule-id").text == c, what="the molecule's panel")
        wait_for(lambda c=chosen: f"molecule={c}" in driver.current_url, what="the molecule in the URL")
        assert (
            driver.execute_script(
                "return document.querySelectorAll('#orientation-map svg.selection-ring circle').length"
            )
            >= 1
        )
        break
    else:
        pytest.fail("no click on 20 molecules' points picked one")
    # one set of export buttons, the page's (they serve every view): none in the renderer's toolbar
    buttons = "return [...document.querySelectorAll('button')].filter(b => /^(PNG|SVG)$/.test(b.textContent.trim()))"
    assert sorted(driver.execute_script(buttons + ".map(b => b.id)")) == ["export-png", "export-svg"]
    for fmt in ("png", "svg"):
        driver.find_element(By.ID, f"export-{fmt}").click()
        wait_for(
            lambda f=fmt: (
                driver.execute_script("return document.getElementById('orientation-map').dataset.exported") or ""
            ).startswith(f + ":"),
            what=f"the {fmt} export",
        )
        data = driver.execute_async_script("""
const done = arguments[arguments.length - 1], r = new FileReader();
r.onload = () => done(r.result.split(',')[1]);
r.readAsDataURL(document.getElementById('orientation-map')._exported);""")
        raw = base64.b64decode(data)
        if fmt == "png":
            assert raw[:8] == b"\x89PNG\r\n\x1a\n"
            width, height = int.from_bytes(raw[16:20], "big"), int.from_bytes(raw[20:24], "big")
            stage_w = driver.execute_script("return arguments[0].clientWidth", stage)
            assert width == 2 * stage_w and height > width / 2.2  # twice the pixels of what is shown
        else:
            text = raw.decode()
            drawn = driver.execute_script(
                "return document.getElementById('orientation-map')._mapHandle.paint().layers.reduce((s, l) => s + l.n, 0)"
            )
            assert text.startswith("<svg") and text.count("<circle") == drawn > 0  # every point shown
            assert 'class="outline"' in text and 'class="graticule"' in text


def test_the_density_views_two_maps_hover_together_and_zoom_together(driver, base_url):
    stage = _open(driver, base_url + "/?dataset=qm9&view=density")
    assert len(driver.find_elements(By.CSS_SELECTOR, "#orientation-map .map-drawing")) == 2
    # The density view lists no selection, so its toolbar offers no selection mode.
    modes = [b.get_attribute("data-mode") for b in driver.find_elements(By.CSS_SELECTOR, "#orientation-map .map-mode")]
    assert modes == ["zoom", "pan"], modes
    tips = """
const t = [...document.querySelectorAll('#orientation-map .map-tooltip')].filter(e => !e.hidden && e.textContent);
return t.map(e => e.textContent);"""
    ActionChains(driver).move_to_element_with_offset(stage, 5, 5).perform()
    words = wait_for(lambda: (t := driver.execute_script(tips)) and len(t) == 2 and t, what="both maps' words")
    assert all(re.fullmatch(r"density \d+\.\d\d× uniform", w) for w in words), words
    _wheel_in(driver, stage)
    boxes = driver.execute_script(
        "return [...document.querySelectorAll('#orientation-map .map-svg')].map(s => s.getAttribute('viewBox'))"
    )
    assert len(boxes) == 2 and boxes[0] == boxes[1]  # linked: the control shows the same region
    paint = driver.execute_script("return document.getElementById('orientation-map')._mapHandle.paint()")
    assert paint["view"] == "density" and len(paint["maps"]) == 2 and paint["region"]["x1"] - paint["region"]["x0"] < 5


def test_the_first_paint_and_dash_draw_one_paint_alike_and_a_first_paint_zoom_works(without_scripts, driver, base_url):
    """With Dash's scripts blocked the landing page's first paint (the density view) is map_draw.js's drawing; Dash's
    page of the same paint has the same structure; and the first paint zooms (its region asked of the REST resource)
    before Dash has loaded."""
    drv = without_scripts
    drv.get(base_url + "/")
    wait_for(lambda: map_drawn(drv, first_paint=True), what="the first paint")
    first = drv.execute_script(STRUCTURE_JS, "#orientation-map[data-first-paint]")
    first_token = drv.execute_script(HOOK_JS)[0]
    assert first and "canvas.map-points" in first and "svg.map-svg" in first
    assert first.count("div.map-drawing") == 2 and any(e.startswith("img.") and "map-image" in e for e in first)
    _wheel_in(drv, drv.find_element(By.CSS_SELECTOR, "#orientation-map[data-first-paint] .map-stage"), first_paint=True)
    assert drv.execute_script("return typeof window.DashRenderer") == "undefined"  # no Dash: the first paint zoomed
    drv.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
    _open(driver, base_url + "/")
    assert driver.execute_script(HOOK_JS)[0] == first_token  # the same paint
    assert driver.execute_script(STRUCTURE_JS, "#orientation-map") == first


def test_dash_takes_the_first_paints_drawing_over(image_url):
    """The first paint's drawing (its stage element) is the one Dash's map box shows: moved, not drawn again."""
    from tests.browser.chrome import make_driver, quit_driver

    drv = make_driver()
    try:
        mark = """
new MutationObserver((_, o) => { const s = document.querySelector('[data-first-paint] .map-stage');
  if (s) { s.dataset.fromFirstPaint = '1'; o.disconnect(); } }).observe(document, {childList: true, subtree: true});"""
        drv.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": mark})
        drv.get(image_url + "/?dataset=qm9&view=map")
        wait_for(lambda: map_drawn(drv), what="Dash's map")
        assert drv.execute_script(
            "return document.querySelectorAll('#orientation-map .map-stage').length === 1 && "
            "document.querySelector('#orientation-map .map-stage').dataset.fromFirstPaint === '1' && "
            "!document.querySelector('[data-first-paint]')"
        )
    finally:
        quit_driver(drv)
