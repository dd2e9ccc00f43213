"""The map's click, hover and density words are written once (frontend_assets/map_component.js), as a user sees it
in real headless Chromium: the same hover and click at the same place on the sky name the same molecule, axis and
words on the page's first paint (its script files blocked: no Dash, no plotly.js) and on Dash's map (both drawn by
map_draw.js), and
hovering a density cell gives the same words on both, with the control's beside the dataset's."""

from __future__ import annotations

import numpy as np
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from orientscope.figures.plots import MAP_SCALE
from orientscope.services.map_data import load_map_data
from tests.browser.chrome import first_paint_pixels
from tests.browser.pages import FIRST_PAINT, open_map, static_map, wait_for

pytestmark = pytest.mark.browser
# What a map's tooltip says now, and of what (None while hidden or empty).
TIP_JS = """
const h = document.querySelector(arguments[0]), t = h && h.querySelector(':scope > .map-tooltip');
return t && !t.hidden && t.textContent ? {text: t.textContent, molecule: t.dataset.molecule, axis: t.dataset.axis}
                                       : null;
"""
CLICKED_JS = "const m = document.querySelector(arguments[0]); return (m && m.dataset.clicked) || null"
# Offsets from the centre of Dash's drawing (as ActionChains offsets are) of Mollweide points.
DASH_PIXELS_JS = """
const stage = document.querySelector(arguments[0] + ' .map-stage'), vb = stage.querySelector('svg').viewBox.baseVal;
const r = stage.getBoundingClientRect(), s = arguments[2];
const cx = Math.floor(r.left + r.width / 2), cy = Math.floor(r.top + r.height / 2);  // WebDriver's centre
return arguments[1].map(p => [r.left + (p[0] * s - vb.x) / vb.width * r.width - cx,
                              r.top + (-p[1] * s - vb.y) / vb.height * r.height - cy]);
"""
CONTROL_FIRST_PAINT = '[data-first-paint] .map-drawing[data-table="control"]'
CONTROL_DASH = '#orientation-map:not([data-first-paint]) .map-drawing[data-table="control"]'


def _isolated_points(md, n: int, seed: int = 0) -> list[tuple[float, float, str]]:
    """``n`` shown axis points (Mollweide x, y and the point's molecule) near the map's centre with no other point
    within 0.03 units (several pixels of either drawing), so that a cursor a fraction of a pixel off still picks that
    very point."""
    x, y = md.x.ravel(), md.y.ravel()
    ok = np.isfinite(x) & (np.abs(x) < 1.2) & (np.abs(y) < 0.6)
    out = []
    for k in np.random.default_rng(seed).permutation(np.flatnonzero(ok)):
        near = np.hypot(x[ok] - x[k], y[ok] - y[k])
        if np.sum(near < 0.03) == 1:
            out.append((float(x[k]), float(y[k]), str(md.ids[k // md.x.shape[1]])))
        if len(out) == n:
            break
    return out


def _hover_and_click(driver, element, host: str, offset) -> dict:
    """Hover ``offset`` (px from ``element``'s centre) of map ``host``, then click there: the tooltip's words and
    what they name, and the molecule the click opened. Each waits for the state its action brings."""
    driver.execute_script(
        "const m = document.querySelector(arguments[0]); m.dataset.clicked = '';"
        "const t = m.querySelector(':scope > .map-tooltip'); if (t) { t.hidden = true; t.textContent = ''; }",
        host,
    )
    ActionChains(driver).move_to_element_with_offset(element, int(round(offset[0])), int(round(offset[1]))).perform()
    tip = wait_for(lambda: driver.execute_script(TIP_JS, host), what=f"the tooltip of {host}")
    ActionChains(driver).click().perform()
    clicked = wait_for(lambda: driver.execute_script(CLICKED_JS, host), what=f"the click on {host}")
    return {**tip, "clicked": clicked}


def test_a_hover_and_a_click_name_the_same_molecule_on_the_first_paint_and_on_dashs_map(
    without_scripts, image_url, qm9_store
):
    driver = without_scripts
    md = load_map_data(qm9_store, "qm9")
    points = _isolated_points(md, 3)
    url = image_url + "/?dataset=qm9&view=map"
    svg = static_map(driver, url)
    # each point's place read just before its hover: a click's panel may change the page's layout
    on_first_paint = [
        _hover_and_click(driver, svg, FIRST_PAINT, first_paint_pixels(driver, [[x * MAP_SCALE, -y * MAP_SCALE]])[0])
        for x, y, _ in points
    ]
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})  # Dash's page now
    graph = open_map(driver, url)
    assert driver.execute_script("return document.querySelector('[data-first-paint]')") is None
    on_dash = [
        _hover_and_click(
            driver,
            graph,
            "#orientation-map",
            driver.execute_script(DASH_PIXELS_JS, "#orientation-map", [[x, y]], MAP_SCALE)[0],
        )
        for x, y, _ in points
    ]
    assert on_dash == on_first_paint
    for seen, (_, _, molecule) in zip(on_dash, points, strict=True):  # the point hovered, and its molecule opened
        assert seen["text"].startswith(f"molecule {molecule} · axis {seen['axis']}")
        assert seen["clicked"] == seen["molecule"] == molecule


# The cells grid a density map's words come from: the paint the renderer drew.
CELLS_JS = "return document.querySelector(arguments[0])._mapHandle.paint().maps[0].grid"


def test_a_density_cell_hover_gives_the_same_words_on_the_first_paint_and_on_dashs_map(without_scripts, base_url):
    driver = without_scripts
    svg = static_map(driver, base_url + "/")
    grid = driver.execute_script(CELLS_JS, FIRST_PAINT)
    nx, z = grid["nx"], np.array([np.nan if v is None else v for v in grid["z"]])
    rng = np.random.default_rng(0)
    # the centres of cells with a density near the map's centre (a cursor a pixel off stays in its cell)
    cells = [int(k) for k in rng.permutation(np.flatnonzero(np.isfinite(z)))]
    spots = []
    for k in cells:
        j, i = divmod(k, nx)
        x, y = (grid["x0"] + (i + 0.5) * grid["dx"]) / MAP_SCALE, (grid["y0"] + (j + 0.5) * grid["dy"]) / MAP_SCALE
        if abs(x) < 1.5 and abs(y) < 0.7:
            spots.append((x, y))
        if len(spots) == 3:
            break
    assert len(spots) == 3

    def hover(element, host, control, offset):
        for h in (host, control):
            driver.execute_script("const t = document.querySelector(arguments[0]).querySelector(':scope > .map-tooltip');"
                                  "if (t) { t.hidden = true; t.textContent = ''; }", h)  # fmt: skip
        ActionChains(driver).move_to_element_with_offset(
            element, int(round(offset[0])), int(round(offset[1]))
        ).perform()
        own = wait_for(lambda: driver.execute_script(TIP_JS, host), what=f"the density words of {host}")
        linked = wait_for(lambda: driver.execute_script(TIP_JS, control), what=f"the linked words of {control}")
        return own["text"], linked["text"]

    offsets = first_paint_pixels(driver, [[x * MAP_SCALE, -y * MAP_SCALE] for x, y in spots])
    on_first_paint = [hover(svg, FIRST_PAINT, CONTROL_FIRST_PAINT, at) for at in offsets]
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
    graph = open_map(driver, base_url + "/")
    wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, CONTROL_DASH + " .map-stage"), what="the control map")
    offsets = driver.execute_script(DASH_PIXELS_JS, "#orientation-map", spots, MAP_SCALE)
    on_dash = [hover(graph, "#orientation-map", CONTROL_DASH, at) for at in offsets]
    assert on_dash == on_first_paint
    for own, linked in on_dash:
        assert own.startswith("density ") and own.endswith("× uniform") and linked.endswith("× uniform")


# Offsets from the first paint's control drawing's centre of points in its SVG units.
CONTROL_PIXELS_JS = f"""
const svg = document.querySelector('{CONTROL_FIRST_PAINT} svg');
const vb = svg.viewBox.baseVal, r = svg.getBoundingClientRect();
const cx = Math.floor(r.left + r.width / 2), cy = Math.floor(r.top + r.height / 2);  // WebDriver's centre
return arguments[0].map(p => [r.left + (p[0] - vb.x) / vb.width * r.width - cx,
                              r.top + (p[1] - vb.y) / vb.height * r.height - cy]);
"""


def test_a_click_on_the_control_map_opens_the_same_control_molecule_on_the_first_paint_and_on_dashs_map(
    without_scripts, base_url, qm9_store
):
    driver = without_scripts
    points = _isolated_points(load_map_data(qm9_store, "qm9", "control"), 2, seed=1)

    def click(element, host, offset):
        driver.execute_script("document.querySelector(arguments[0]).dataset.clicked = ''", host)
        ActionChains(driver).move_to_element_with_offset(
            element, int(round(offset[0])), int(round(offset[1]))
        ).click().perform()
        return wait_for(lambda: driver.execute_script(CLICKED_JS, host), what=f"the click on {host}")

    static_map(driver, base_url + "/")
    svg = driver.find_element(By.CSS_SELECTOR, CONTROL_FIRST_PAINT + " svg")
    on_first_paint = [
        click(svg, CONTROL_FIRST_PAINT, driver.execute_script(CONTROL_PIXELS_JS, [[x * MAP_SCALE, -y * MAP_SCALE]])[0])
        for x, y, _ in points
    ]
    assert f"molecule={on_first_paint[-1]}" in driver.current_url  # handed to Dash
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
    open_map(driver, base_url + "/")
    graph = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, CONTROL_DASH + " .map-stage"),
                     what="the control map")[0]  # fmt: skip
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", graph)
    on_dash = [
        click(graph, CONTROL_DASH, driver.execute_script(DASH_PIXELS_JS, CONTROL_DASH, [[x, y]], MAP_SCALE)[0])
        for x, y, _ in points
    ]
    assert on_dash == on_first_paint == [molecule for _, _, molecule in points]
