"""The landing page's first paint, in real headless Chromium: ``/`` (the density view beside its control)
carries both density maps in its HTML, so that the map is drawn, hovered and clicked before Dash has loaded,
and Dash's page then takes the chosen molecule over (app/first_paint.py, app/density_paint.py,
frontend_assets/first_paint.js)."""

from __future__ import annotations

import numpy as np
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from orientscope.figures.plots import MAP_SCALE
from orientscope.services.map_data import density_grids, load_map_data
from tests.browser.chrome import after_frames, first_paint_pixels, make_driver, map_drawn, quit_driver
from tests.browser.pages import FIRST_PAINT, FIRST_PAINT_JS, HOLD_JS, PANEL_JS, text_of, wait_for

pytestmark = pytest.mark.browser
TIP_JS = (
    "const t = document.querySelector(arguments[0]).querySelector(':scope > .map-tooltip');"
    "return t && !t.hidden ? t.textContent : null"
)
CONTROL = "[data-first-paint] .map-drawing[data-table='control']"
# The last mouse position over the static map, and it in Mollweide units (SVG y is down).
WATCH_CURSOR_JS = (
    f"document.querySelector('{FIRST_PAINT} svg')"
    ".addEventListener('mousemove', e => { window.__cursor = [e.clientX, e.clientY]; }, true)"
)
CURSOR_JS = f"""
const s = document.querySelector('{FIRST_PAINT} svg'), v = s.viewBox.baseVal, r = s.getBoundingClientRect();
const [cx, cy] = window.__cursor;
return [(v.x + (cx - r.left) / r.width * v.width) / {MAP_SCALE}, -(v.y + (cy - r.top) / r.height * v.height) / {MAP_SCALE}];
"""


def _static_landing(driver, url):
    driver.get(url)
    drawn = wait_for(lambda: map_drawn(driver, first_paint=True), what="the first paint's test hook")
    assert driver.execute_script("return typeof window.Plotly + typeof window.DashRenderer") == "undefinedundefined"
    return drawn, driver.find_element(By.CSS_SELECTOR, FIRST_PAINT + " svg")


def _points(driver, md, rows) -> np.ndarray:
    """(len(rows), 3, 2) offsets of each molecule's three axis points on the static map (SVG y is down)."""
    pts = [[float(md.x[r, a]) * MAP_SCALE, -float(md.y[r, a]) * MAP_SCALE] for r in rows for a in range(3)]
    return first_paint_pixels(driver, pts).reshape(len(rows), 3, 2)


def _target(driver, md, seed: int) -> np.ndarray:
    """A click offset 2 px beside the first axis point of a random molecule, well inside the drawing."""
    for row in np.random.default_rng(seed).permutation(md.n_molecules):
        target = _points(driver, md, [row])[0, 0] + [2, -1]
        if np.abs(target).max() < 120:
            return target
    raise AssertionError("no molecule's point well inside the static map")


def _cell_text(grid, x: float, y: float) -> str | None:
    """What the heatmap's hover says of the cell holding Mollweide (x, y) of a density grid (None: no cell)."""
    dx = float(grid.x_centers[1] - grid.x_centers[0])
    dy = float(grid.y_centers[1] - grid.y_centers[0])
    i = int(np.floor((x - (grid.x_centers[0] - dx / 2)) / dx))
    j = int(np.floor((y - (grid.y_centers[0] - dy / 2)) / dy))
    z = grid.ratio[j, i]
    return None if not np.isfinite(z) else f"density {z:.2f}× uniform"


# Per map drawing of the first paint: whether its image is the page's own element, loaded, and whether it lies within
# its SVG drawing's box and spans most of it.
LAYERS_JS = """
return [...document.querySelectorAll('[data-first-paint] .maps > .map-drawing .map-stage')].map(d => {
  const im = d.querySelector(':scope > img.first-paint-layer[id^="first-paint-layer-"]');
  const s = d.querySelector(':scope > svg').getBoundingClientRect(), r = im.getBoundingClientRect();
  return [im.complete && im.naturalWidth > 0, r.left >= s.left - 1 && r.right <= s.right + 1 && r.top >= s.top - 1
          && r.bottom <= s.bottom + 1 && r.width > s.width / 2 && r.height > s.height / 2];
});
"""


def test_the_landing_page_draws_hovers_and_opens_a_molecule_with_no_script_file_loaded(
    without_scripts, base_url, qm9_store
):
    driver = without_scripts
    md = load_map_data(qm9_store, "qm9")
    drawn, svg = _static_landing(driver, base_url + "/")
    assert drawn == {"drawn": int(md.axis_counts[1:].sum()), "mode": "image"}  # molecules with an orientation
    # the dataset's density beside its control's, in the layout's map cells
    # each map's cells: the page's own <img> (in its HTML, ahead of the scripts), loaded and placed under its drawing
    assert driver.execute_script(LAYERS_JS) == [[True, True], [True, True]]
    # hover: the cell's density, as the heatmap's own hover names it (the grid of every axis point)
    shown = ~np.isnan(md.x.ravel())  # the defined axes
    (grid, _), _ = density_grids([(md.x.ravel()[shown], md.y.ravel()[shown])] * 2)
    driver.execute_script(WATCH_CURSOR_JS)
    hovered = 0
    for row in np.random.default_rng(0).permutation(np.flatnonzero(~np.isnan(md.x[:, 0])))[:40]:
        at = _points(driver, md, [row])[0, 0]
        if np.abs(at).max() > 120:
            continue
        ActionChains(driver).move_to_element_with_offset(svg, int(round(at[0])), int(round(at[1]))).perform()
        after_frames(driver)  # the move's handler has run: the tooltip is the new one, or hidden
        expected = _cell_text(grid, *driver.execute_script(CURSOR_JS))
        if expected is None:  # a cell of the rim whose centre lies outside the ellipse: no hover, as plotly's
            assert driver.execute_script(TIP_JS, FIRST_PAINT) is None
            continue
        # the text asked for, not any tooltip: the previous hover's may still be up
        wait_for(lambda e=expected: driver.execute_script(TIP_JS, FIRST_PAINT) == e, timeout=5, what=expected)
        hovered += 1
        if hovered == 5:
            break
    assert hovered == 5
    assert driver.execute_script(f"return document.querySelector('{FIRST_PAINT} > .map-tooltip').dataset.kind") == (
        "density"
    )
    # the control's map hovers too
    control = driver.find_element(By.CSS_SELECTOR, CONTROL + " svg")
    ActionChains(driver).move_to_element(control).perform()
    assert "× uniform" in wait_for(lambda: driver.execute_script(TIP_JS, CONTROL), what="the control's tooltip")
    # click: the nearest molecule within 5 px opens in the static panel, ringed, and named in the URL with its view
    target = _target(driver, md, seed=1)
    ActionChains(driver).move_to_element_with_offset(svg, int(target[0]), int(target[1])).click().perform()
    chosen = wait_for(lambda: driver.execute_script(FIRST_PAINT_JS, FIRST_PAINT, "clicked"), what="the nearest")
    assert chosen != "none"
    where = _points(driver, md, [md.row_of(chosen)])[0]
    assert np.hypot(*(where - np.round(target)).T).min() <= 5.0 + 1.0
    wait_for(lambda: driver.execute_script(PANEL_JS, "molecule-id") == chosen, what="the static panel")
    assert driver.find_element(By.CSS_SELECTOR, "[data-first-paint] #molecule-panel").is_displayed()
    assert "formula" in driver.execute_script(PANEL_JS, "molecule-info")
    assert f"molecule={chosen}" in driver.current_url and "view=density" in driver.current_url
    assert len(driver.find_elements(By.CSS_SELECTOR, FIRST_PAINT + " svg.selection-ring circle")) == 1


@pytest.mark.parametrize("hold", ["renderer", "layout"])
def test_a_click_on_the_landing_page_before_dash_is_ready_is_taken_over_by_dash(base_url, qm9_store, hold):
    drv = make_driver()
    try:
        drv.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": HOLD_JS.replace("HOLD", repr(hold))})
        drv.get(base_url + "/")
        # the hook is set by the page HTML while Dash is held back: its callbacks have not run
        wait_for(lambda: map_drawn(drv, first_paint=True), what="the first paint's test hook")
        assert drv.execute_script("return document.querySelectorAll('.js-plotly-plot').length") == 0
        md = load_map_data(qm9_store, "qm9")
        svg = drv.find_element(By.CSS_SELECTOR, FIRST_PAINT + " svg")
        target = _target(drv, md, seed=2)
        ActionChains(drv).move_to_element_with_offset(svg, int(target[0]), int(target[1])).click().perform()
        chosen = wait_for(lambda: drv.execute_script(FIRST_PAINT_JS, FIRST_PAINT, "clicked"), what="the nearest")
        assert chosen != "none"
        wait_for(lambda: drv.execute_script(PANEL_JS, "molecule-id") == chosen, what="the static panel")
        drv.execute_script("window.__release()")
        # Dash's page: still the density view beside its control, its panel showing the same molecule
        wait_for(lambda: map_drawn(drv), what="the interactive density map")
        wait_for(lambda: text_of(drv, "molecule-id") == chosen, what=f"molecule {chosen} in Dash's panel")
        assert drv.find_elements(By.CSS_SELECTOR, "[data-first-paint]") == []
        control = "#orientation-map:not([data-first-paint]) .map-drawing[data-table='control']"
        assert drv.find_element(By.CSS_SELECTOR, control).is_displayed()
        assert drv.find_element(By.ID, "molecule-panel").is_displayed()
        wait_for(lambda: f"molecule={chosen}" in drv.current_url, what="the URL")
        assert "view=density" in drv.current_url
    finally:
        quit_driver(drv)


# The first paint's marks, and when the browser says it presented the first paint's images (Element Timing; none
# where the page hid the interface).
MARKS_JS = """
const cb = arguments[0], marks = performance.getEntriesByName('orientscope:first-paint').map(m => m.startTime);
if (!window.PerformanceObserver || !PerformanceObserver.supportedEntryTypes.includes('element')) { cb([marks, []]); }
new PerformanceObserver(l => cb([marks, l.getEntries().filter(e => e.identifier === 'orientscope-first-paint')
  .map(e => e.renderTime)])).observe({type: 'element', buffered: true});
"""


@pytest.mark.parametrize("element_timing", [True, False])
def test_the_first_paints_hook_is_set_once_when_its_image_is_shown_with_or_without_element_timing(
    base_url, qm9_store, element_timing
):
    driver = make_driver()
    try:
        if not element_timing:  # a browser without it: the hook waits for the frame after the image's
            driver.execute_cdp_cmd(
                "Page.addScriptToEvaluateOnNewDocument", {"source": "delete window.PerformanceElementTiming"}
            )
        driver.get(base_url + "/")
        wait_for(lambda: map_drawn(driver), what="Dash's density view")  # after the first paint, which it replaced
        marks, shown = driver.execute_async_script(MARKS_JS)
        assert len(marks) == 1 and marks[0] > 0  # set once, though both ways of knowing the image is shown fire
        assert len(shown) == 2  # the dataset's map and its control's, presented
        if element_timing:  # no later than the browser presented it (the frames can wait behind Dash's scripts)
            assert marks[0] <= min(shown) + 0.5
    finally:
        quit_driver(driver)
