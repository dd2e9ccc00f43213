"""The first paint at work before Dash has loaded (app/first_paint.py, frontend_assets/first_paint.js), in real
headless Chromium: a click on the page HTML's static map opens the nearest molecule within 5 px in the static
molecule panel, hovering shows what the pixel holds, a dot of the sphere opens its molecule, and Dash's
page takes the panel over when it renders."""

from __future__ import annotations

import re
from urllib.parse import unquote

import numpy as np
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from orientscope.app.sphere_paint import SPHERE_RIGHT, SPHERE_UP
from orientscope.services.map_data import load_map_data
from tests.browser.chrome import (
    SPHERE_CAMERA_JS,
    SPHERE_CANVAS,
    SPHERE_PAINT_JS,
    PageRequests,
    lone_front_dot,
    make_driver,
    map_drawn,
    quit_driver,
)
from tests.browser.pages import (
    FIRST_PAINT,
    FIRST_PAINT_JS,
    HOLD_JS,
    PANEL_JS,
    map_pixels,
    static_map,
    text_of,
    wait_for,
)

pytestmark = pytest.mark.browser
TOOLTIP_JS = (
    "const t = document.querySelector('#orientation-map[data-first-paint] .map-tooltip');"
    "return t && !t.hidden && t.textContent"
)


def _targets(driver, md, n: int, seed: int = 0):
    """(row, click offset) 2.2 px beside the first axis of up to ``n`` molecules, well inside the drawing."""
    rng = np.random.default_rng(seed)
    out = []
    for row in rng.permutation(md.n_molecules)[:60]:
        target = map_pixels(driver, md, [row])[0, 0] + [2, -1]
        if np.abs(target).max() < 150:
            out.append((row, target))
        if len(out) == n:
            break
    return out


def test_the_static_map_opens_the_nearest_molecule_and_hovers_with_no_script_file_loaded(
    without_scripts,
    image_url,
    qm9_store,
):
    driver = without_scripts
    svg = static_map(driver, image_url + "/?dataset=qm9&view=map")
    md = load_map_data(qm9_store, "qm9")
    for row, _ in _targets(driver, md, 10):  # hover a molecule's own point (an offset may fall on an empty pixel)
        at = map_pixels(driver, md, [row])[0, 0]
        ActionChains(driver).move_to_element_with_offset(svg, int(at[0]), int(at[1])).perform()
        try:
            tip = wait_for(lambda: driver.execute_script(TOOLTIP_JS), timeout=5, what="the tooltip")
        except AssertionError:
            continue  # the point's pixel edge fell beside the cursor: try another
        assert re.match(r"molecule \S+ · axis [123]", tip), tip  # the hovered point's molecule and axis
        break
    else:
        pytest.fail("no hover over 10 molecules' points showed a tooltip")
    clicks = 0
    for _row, target in _targets(driver, md, 3, seed=1):
        ActionChains(driver).move_to_element_with_offset(svg, int(target[0]), int(target[1])).click().perform()
        chosen = wait_for(lambda: driver.execute_script(FIRST_PAINT_JS, FIRST_PAINT, "clicked"), what="the nearest")
        # the opened molecule has a shown point within 5 px of the click (+1: clicks land on whole pixels)
        where = map_pixels(driver, md, [md.row_of(chosen)])[0]
        assert np.hypot(*(where - np.round(target)).T).min() <= 5.0 + 1.0
        # named under the map and shown in the page's static molecule panel (3Dmol.js is a blocked script file
        # here: the structure is not drawn), ringed on the map, and handed to Dash through the page URL
        assert driver.find_element(By.CSS_SELECTOR, FIRST_PAINT + " .map-hint").text == f"Molecule {chosen}"
        wait_for(lambda c=chosen: driver.execute_script(PANEL_JS, "molecule-id") == c, what="the static panel")
        assert "formula" in driver.execute_script(PANEL_JS, "molecule-info")
        assert f"molecule={chosen}" in driver.current_url
        assert len(driver.find_elements(By.CSS_SELECTOR, FIRST_PAINT + " svg.selection-ring circle")) == 1
        driver.execute_script(f"document.querySelector('{FIRST_PAINT}').dataset.clicked = ''")
        clicks += 1
    assert clicks == 3
    # outside the Mollweide ellipse: nothing near, and the hint says so
    size = svg.size
    ActionChains(driver).move_to_element_with_offset(
        svg, -size["width"] // 2 + 8, size["height"] // 2 - 8
    ).click().perform()
    wait_for(lambda: driver.execute_script(FIRST_PAINT_JS, FIRST_PAINT, "clicked") == "none", what="no molecule")
    assert "No molecule within 5 px" in driver.find_element(By.CSS_SELECTOR, FIRST_PAINT + " .map-hint").text


def test_a_dot_of_the_first_paints_sphere_opens_its_molecule(without_scripts, image_url, qm9_store):
    driver = without_scripts
    driver.get(image_url + "/?dataset=qm9&view=sphere")
    wait_for(lambda: map_drawn(driver, first_paint=True), what="the first paint's test hook")
    cam = wait_for(lambda: driver.execute_script(SPHERE_CAMERA_JS), what="the sphere")
    sphere = driver.execute_script(SPHERE_PAINT_JS)
    md = load_map_data(qm9_store, "qm9")
    # a dot on the near side, alone within 6 px, seen along plotly's default camera as the server projects it
    k = lone_front_dot(sphere, cam)
    v = np.array(sphere["vectors"][3 * k : 3 * k + 3])
    r = cam["width"] / 2 / 1.1
    target = np.array([v @ SPHERE_RIGHT, -(v @ SPHERE_UP)]) * r  # from the drawing's centre, y down
    canvas = driver.find_element(By.CSS_SELECTOR, SPHERE_CANVAS)
    ActionChains(driver).move_to_element_with_offset(
        canvas, int(round(target[0])), int(round(target[1]))
    ).click().perform()
    chosen = wait_for(lambda: driver.execute_script(FIRST_PAINT_JS, FIRST_PAINT, "clicked"), what="the clicked dot")
    assert chosen == sphere["ids"][k] and f"molecule={chosen}" in driver.current_url
    # that dot is one of the chosen molecule's axes, its key naming the axis
    axis = sphere["keys"][k] % 3 + 1
    assert sphere["keys"][k] // 3 == md.row_of(chosen)
    assert np.allclose(md.vectors(np.array([md.row_of(chosen)]), np.array([axis]))[0], v, atol=1e-3)


# [when the first paint's mark was set, when the first plotly.js script finished arriving (null: not yet)], in ms.
FIRST_PAINT_BEFORE_PLOTLY_JS = (
    "const m = performance.getEntriesByName('orientscope:first-paint')[0];"
    "const p = performance.getEntriesByType('resource').filter(e => /plotly/i.test(e.name)).map(e => e.responseEnd);"
    "return [m ? m.startTime : null, p.length ? Math.min(...p) : null];"
)


def test_a_click_on_the_static_map_while_dash_loads_opens_the_molecule_in_the_panel(image_url, qm9_store):
    # A browser that does not wait for pages to load, on a slow network: the page's scripts arrive
    # seconds after its first paint, and the click lands in between.
    drv = make_driver(page_load_strategy="none")
    try:
        drv.execute_cdp_cmd("Network.enable", {})
        drv.execute_cdp_cmd(
            "Network.emulateNetworkConditions",
            {"offline": False, "latency": 2000, "downloadThroughput": -1, "uploadThroughput": -1},
        )
        drv.get(image_url + "/?dataset=qm9&view=map")
        wait_for(lambda: map_drawn(drv, first_paint=True), what="the first paint's test hook")
        # The map was on screen before plotly.js had arrived (read from the page's own timings: a loaded CI machine
        # may look at the hook only after the scripts, 2 s later, have run).
        painted, plotly = drv.execute_script(FIRST_PAINT_BEFORE_PLOTLY_JS)
        assert painted is not None and (plotly is None or painted < plotly), (painted, plotly)
        svg = drv.find_element(By.CSS_SELECTOR, FIRST_PAINT + " svg")
        md = load_map_data(qm9_store, "qm9")
        (_, target), *_ = _targets(drv, md, 1, seed=2)
        every = map_pixels(drv, md, np.arange(md.n_molecules))  # where each molecule is drawn when clicked
        ActionChains(drv).move_to_element_with_offset(svg, int(target[0]), int(target[1])).click().perform()
        # the first paint answered the click (whether Dash takes it over through the URL or its store), or Dash had
        # taken the first paint's drawing over by the time the click landed (the same drawing, Dash's hooks) ...
        wait_for(
            lambda: drv.execute_script(
                "return performance.getEntriesByName('orientscope:first-paint-click').length"
                " || /[?&]molecule=/.test(location.search)"
            ),
            what="the click's answer",
        )
        # ... and once Dash is up, its molecule panel shows the molecule the URL names
        chosen = wait_for(
            lambda: (q := drv.current_url.partition("molecule=")[2]) and unquote(q.split("&")[0]),
            what="the URL to name it",
        )
        wait_for(lambda: text_of(drv, "molecule-id") == chosen, what=f"molecule {chosen} in the panel")
        where = every[md.row_of(chosen)]
        assert np.hypot(*(where - np.round(target)).T).min() <= 5.0 + 1.0
        # the interactive plot takes over (the panel may show the molecule before the plot has drawn)
        drawn = wait_for(lambda: map_drawn(drv), what="the interactive plot's test hook")
        assert drawn == {"drawn": int(md.axis_counts[1:].sum()), "mode": "image"}  # molecules with an orientation
    finally:
        quit_driver(drv)


DASH_JS = (
    "const v = document.querySelector('#react-entry-point #molecule-viewer'), i = document.querySelector("
    "'#react-entry-point #molecule-id'); return v && !document.querySelector('[data-first-paint]') && "
    "[i.textContent, v.dataset.molecule || null, !!v.querySelector('canvas[data-first-paint-canvas]')]"
)


@pytest.mark.parametrize("hold", ["renderer", "layout"])
def test_a_click_before_dash_is_ready_shows_the_molecule_panel_which_dash_takes_over(image_url, qm9_store, hold):
    drv = make_driver()
    try:
        drv.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": HOLD_JS.replace("HOLD", repr(hold))})
        requests = PageRequests(drv)  # at once: the browser's own start page may still be loading in the tab
        drv.get(image_url + "/?dataset=qm9&view=map")
        wait_for(lambda: map_drawn(drv, first_paint=True), what="the first paint's test hook")
        if hold == "layout":  # Dash's renderer has replaced the page's content; the first paint stays on screen
            wait_for(lambda: drv.execute_script("return !!document.querySelector('#react-entry-point ._dash-loading')"))
        svg = drv.find_element(By.CSS_SELECTOR, FIRST_PAINT + " svg")
        assert svg.is_displayed()
        md = load_map_data(qm9_store, "qm9")
        (_, target), *_ = _targets(drv, md, 1, seed=3)
        ActionChains(drv).move_to_element_with_offset(svg, int(target[0]), int(target[1])).click().perform()
        chosen = wait_for(lambda: drv.execute_script(FIRST_PAINT_JS, FIRST_PAINT, "clicked"), what="the nearest")
        # the static panel shows it: id, info and the structure drawn by 3Dmol.js, while Dash has not rendered
        static_viewer = "[data-first-paint] #molecule-viewer"
        wait_for(
            lambda: drv.execute_script(f"return document.querySelector('{static_viewer}').dataset.molecule") == chosen,
            what="the structure in the static panel",
        )
        assert drv.execute_script(PANEL_JS, "molecule-id") == chosen
        assert "formula" in drv.execute_script(PANEL_JS, "molecule-info")
        atoms = drv.execute_script(f"return document.querySelector('{static_viewer}').dataset.atoms")
        n_atoms = drv.execute_script(
            "return [...document.querySelectorAll('[data-first-paint] #molecule-info th')]"
            ".find(th => th.textContent === 'atoms').nextElementSibling.textContent"
        )
        assert atoms == f"{n_atoms},{n_atoms}"  # both poses drawn, every atom
        dash_panels = (
            "return [...document.querySelectorAll('#molecule-panel')].filter(p => !p.closest('[data-first-paint]'))"
        )
        assert drv.execute_script(dash_panels) == []  # Dash's own panel is not there yet
        drv.execute_script(f"document.querySelector('{static_viewer} canvas').dataset.firstPaintCanvas = '1'")
        # Dash renders: its panel shows the same molecule in the same WebGL canvas, and opens it in the rest of
        # the page (the neighbour lists); no frame in between showed the panel without it
        drv.execute_script("window.__release()")
        assert wait_for(lambda: drv.execute_script(DASH_JS), what="Dash's panel") == [chosen, chosen, True]
        wait_for(lambda: "Nearest in pose" in text_of(drv, "molecule-extra"), what="the neighbour lists")
        assert drv.execute_script(DASH_JS) == [chosen, chosen, True]
        assert f"molecule={chosen}" in drv.current_url
        assert drv.execute_script("return [window.__frames > 0, window.__blank]") == [True, 0]
        assert wait_for(lambda: map_drawn(drv), what="the interactive map")["mode"] == "image"
        assert requests.off_origin(image_url) == []
        assert sum("/map/panel/" in u for u in requests.urls()) == 1
    finally:
        quit_driver(drv)
