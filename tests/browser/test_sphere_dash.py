"""Dash's page draws the 3D sphere with the first paint's renderer (frontend_assets/map_sphere.js through map_draw.js),
in real headless Chromium: Dash takes the first paint's canvas over (the same element, not drawn again); a click on a
dot opens its molecule (panel, URL, viewer) and Dash rings that molecule's three axes through its ring store; the
views switch map → sphere → scatter → density → sphere and the back button returns to the sphere; a colour change
redraws it; the export buttons give the sphere's drawing.

The oracle is the turntable camera written from its definition (tests/browser/chrome.py sphere_screen) and the map's
own arrays (MapData.vectors)."""

from __future__ import annotations

import numpy as np
import pytest
from plotly.colors import sample_colorscale
from selenium.webdriver.common.by import By

from orientscope.core.palette import CIVIDIS
from orientscope.services.map_data import load_map_data
from tests.browser.chrome import (
    DASH_SPHERE_CAMERA_JS,
    DASH_SPHERE_CANVAS,
    DASH_SPHERE_PAINT_JS,
    after_frames,
    css_rgb,
    dash_sphere,
    lone_front_dot,
    make_driver,
    map_drawn,
    point_at_dot,
    quit_driver,
    sphere_pixel,
    sphere_screen,
)
from tests.browser.pages import choose, open_map, text_of, wait_for

pytestmark = pytest.mark.browser
DASH = "#orientation-map:not([data-first-paint])"
# the selection ring's centres, px from the canvas's top left
RING_JS = f"""
const h = document.querySelector('{DASH}'), c = h && h.querySelector('canvas.sphere-canvas');
if (!c) return null;
const b = c.getBoundingClientRect(), o = h.getBoundingClientRect();
return Array.from(h.querySelectorAll('svg.selection-ring circle'), e =>
  [Number(e.getAttribute('cx')) - (b.left - o.left), Number(e.getAttribute('cy')) - (b.top - o.top)]);
"""
VIEW_JS = f"const h = document.querySelector('{DASH}'), s = h && h._mapHandle; return s ? s.paint().view : null"


def _axes(md, mol: str) -> np.ndarray:
    return md.vectors(np.full(3, md.row_of(mol)), np.arange(1, 4))  # its axes 1..3, as the server rings them


def _ring_on(driver, cam, axes) -> list | None:
    got = driver.execute_script(RING_JS)
    want = sphere_screen(cam, axes)[0]
    return got if got and len(got) == 3 and np.abs(np.array(got) - want).max() < 0.01 else None


def test_dash_takes_the_first_paints_sphere_over_and_a_click_opens_and_rings_the_dot_under_it(image_url, qm9_store):
    drv = make_driver()
    try:  # the first paint's canvas is marked as soon as it exists: Dash's box must show that very element
        mark = """
new MutationObserver((_, o) => { const c = document.querySelector('[data-first-paint] canvas.sphere-canvas');
  if (c) { c.dataset.fromFirstPaint = '1'; o.disconnect(); } }).observe(document, {childList: true, subtree: true});"""
        drv.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": mark})
        open_map(drv, image_url + "/?dataset=qm9&view=sphere")
        cam, sphere = dash_sphere(drv)
        assert drv.execute_script(
            "return document.querySelectorAll('#orientation-map canvas.sphere-canvas').length === 1 && "
            f"document.querySelector('{DASH_SPHERE_CANVAS}').dataset.fromFirstPaint === '1' && "
            "!document.querySelector('[data-first-paint]')"
        )
        assert not drv.find_element(By.ID, "orientation-graph-box").is_displayed()  # no plotly graph on the sphere
        # a click on a lone dot on the near side: its molecule in the panel, the URL and the viewer
        k = lone_front_dot(sphere, cam)
        mol = sphere["ids"][k]
        point_at_dot(drv, DASH_SPHERE_CANVAS, cam, sphere, k, click=True)
        wait_for(lambda: text_of(drv, "molecule-id") == mol, what=f"molecule {mol} in the panel")
        wait_for(lambda: f"molecule={mol}" in drv.current_url, what="the URL to name it")
        wait_for(lambda: drv.execute_script("return document.getElementById('molecule-viewer').dataset.molecule")
                 == mol, what="the viewer")  # fmt: skip
        # Dash's ring store rings its three axes (the server's vectors) where the camera puts them
        wait_for(lambda: _ring_on(drv, cam, _axes(load_map_data(qm9_store, "qm9"), mol)), what="the ring")
    finally:
        quit_driver(drv)


def test_the_views_switch_through_the_sphere_and_back_with_its_colours_ring_and_export(driver, base_url, qm9_store):
    md = load_map_data(qm9_store, "qm9")
    mol = str(md.ids[5])
    open_map(driver, f"{base_url}/?dataset=qm9&view=map&molecule={mol}")
    driver.find_element(By.CSS_SELECTOR, '#view-mode input[value="sphere"]').click()
    wait_for(lambda: driver.execute_script(VIEW_JS) == "sphere" and map_drawn(driver), what="the sphere")
    cam, _ = dash_sphere(driver)  # the page's molecule ringed on the sphere too
    wait_for(lambda: _ring_on(driver, cam, _axes(md, mol)), what="the ring on the sphere")
    driver.find_element(By.CSS_SELECTOR, '#view-mode input[value="scatter"]').click()
    # a plotly chart: the renderer's drawing is gone
    wait_for(lambda: driver.execute_script(VIEW_JS) is None and map_drawn(driver), what="the scatter view")
    assert not driver.find_elements(By.CSS_SELECTOR, "#orientation-map canvas.sphere-canvas")
    driver.find_element(By.CSS_SELECTOR, '#view-mode input[value="density"]').click()
    wait_for(lambda: driver.execute_script(VIEW_JS) == "density" and map_drawn(driver), what="the density view")
    assert not driver.find_elements(By.CSS_SELECTOR, "#orientation-map canvas.sphere-canvas")
    # the back button: the scatter view, then the sphere, drawn again with its ring
    driver.back()
    wait_for(lambda: "view=scatter" in driver.current_url and driver.execute_script(VIEW_JS) is None, what="back")
    driver.back()
    wait_for(lambda: "view=sphere" in driver.current_url and driver.execute_script(VIEW_JS) == "sphere", what="back")
    # the sphere drawn anew (the wait above saw its paint): its camera and paint as they are now
    cam, sphere = driver.execute_script(DASH_SPHERE_CAMERA_JS), driver.execute_script(DASH_SPHERE_PAINT_JS)
    wait_for(lambda: _ring_on(driver, cam, _axes(md, mol)), what="the ring after the back button")
    # a colour change: the sphere is drawn anew in the new colours (a continuous property, with its colour bar)
    choose(driver, "color-by", "property: u0")
    cam, sphere = wait_for(
        lambda: (got := dash_sphere(driver)) and got[1]["color"]["kind"] == "continuous" and got, what="u0's colours"
    )
    wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, f"{DASH} .sphere-colorbar"), what="the colour bar")
    after_frames(driver)
    k = lone_front_dot(sphere, cam)
    xy = sphere_screen(cam, np.asarray(sphere["vectors"], float)[3 * k : 3 * k + 3])[0][0]
    pixel = sphere_pixel(driver, *xy, canvas=DASH_SPHERE_CANVAS)
    t = sphere["color"]["values"][k]
    want = css_rgb(sphere["color"]["missing"] if t is None else sample_colorscale(list(CIVIDIS), [t])[0])
    assert pixel[3] == 255 and np.abs(pixel[:3] - want).max() <= 4  # 64 steps of the scale: within half a step
    # the export buttons give the sphere as drawn: a PNG of the canvas (with its title)
    driver.find_element(By.ID, "export-png").click()
    got = wait_for(lambda: driver.execute_script(f"return document.querySelector('{DASH}').dataset.exported"),
                   what="the export")  # fmt: skip
    assert got.startswith("png:") and int(got.split(":")[1]) > 1000


def test_a_molecule_with_no_defined_axis_is_not_ringed_at_the_spheres_centre(driver, base_url, qm9_store):
    md = load_map_data(qm9_store, "qm9")
    row = int(np.flatnonzero(np.isnan(md.x).all(axis=1))[0])  # methane: a spherical top, no axis defined
    mol = str(md.ids[row])
    open_map(driver, f"{base_url}/?dataset=qm9&view=sphere&molecule={mol}")
    dash_sphere(driver)
    # the ring store's three axes, all null, reached the drawing; a frame later nothing is ringed
    wait_for(lambda: driver.execute_script(f"const h = document.querySelector('{DASH}'); return h._ring && h._ring.length")
             == 3, what="the ring store's axes")  # fmt: skip
    after_frames(driver)
    assert driver.execute_script(RING_JS) == []
