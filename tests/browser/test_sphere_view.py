"""The 3D sphere drawn by its one renderer (frontend_assets/map_sphere.js) in the page's first paint, in real headless
Chromium with every script file blocked: a drag turns the sphere as the camera says, a molecule's dot is then where
the turned camera puts it and a click there opens that molecule; continuous colours are drawn from the first paint.

The oracle is the turntable camera written here from its definition (z up, starting at plotly's default eye
(1.25, 1.25, 1.25)), the server's paint (GET .../map/first-paint) and plotly's own colour scale."""

from __future__ import annotations

import httpx
import numpy as np
import pytest
from plotly.colors import sample_colorscale
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
from selenium.webdriver.common.by import By

from orientscope.core.palette import CIVIDIS
from orientscope.services.map_data import load_map_data
from tests.browser.chrome import (
    SPHERE_CAMERA_JS,
    SPHERE_CANVAS,
    after_frames,
    css_rgb,
    lone_front_dot,
    map_drawn,
    sphere_pixel,
    sphere_screen,
)
from tests.browser.pages import FIRST_PAINT, FIRST_PAINT_JS, wait_for

pytestmark = pytest.mark.browser
CANVAS = SPHERE_CANVAS
TOOLTIP_JS = f"""
const t = document.querySelector('{FIRST_PAINT} .map-tooltip');
return t && !t.hidden ? {{text: t.textContent, molecule: t.dataset.molecule, axis: t.dataset.axis}} : null;
"""
# the selection ring's centres, px from the canvas's top left
RING_JS = f"""
const h = document.querySelector('{FIRST_PAINT}'), c = h.querySelector('canvas').getBoundingClientRect();
const o = h.getBoundingClientRect();
return Array.from(h.querySelectorAll('svg.selection-ring circle'), e =>
  [Number(e.getAttribute('cx')) - (c.left - o.left), Number(e.getAttribute('cy')) - (c.top - o.top)]);
"""


def sphere_of(base_url: str, query: dict) -> dict:
    r = httpx.get(f"{base_url}/api/datasets/qm9/map/first-paint", params={"view": "sphere", **query}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()["sphere"]


def drawn_sphere(driver, url: str) -> dict:
    driver.get(url)
    wait_for(lambda: map_drawn(driver, first_paint=True), what="the first paint's test hook")
    assert driver.execute_script("return typeof window.Plotly + typeof window.DashRenderer") == "undefinedundefined"
    return wait_for(lambda: driver.execute_script(SPHERE_CAMERA_JS), what="the sphere")


def test_a_drag_turns_the_sphere_as_its_camera_says_and_a_click_then_opens_the_dot_under_it(without_scripts, base_url):
    driver = without_scripts
    sphere = sphere_of(base_url, {})
    vectors = np.array(sphere["vectors"]).reshape(-1, 3)
    start = drawn_sphere(driver, base_url + "/?dataset=qm9&view=sphere")
    # the renderer starts at plotly's default camera
    assert start["azimuth"] == pytest.approx(np.pi / 4) and start["elevation"] == pytest.approx(np.arcsin(3**-0.5))
    canvas = driver.find_element(By.CSS_SELECTOR, CANVAS)
    # turn it: 60 px to the right and 30 px down, from a press beside the sphere's centre
    ActionChains(driver).move_to_element_with_offset(canvas, -20, 10).click_and_hold().move_by_offset(
        60, 30
    ).release().perform()
    cam = wait_for(lambda: (c := driver.execute_script(SPHERE_CAMERA_JS)) and c["azimuth"] != start["azimuth"] and c,
                   what="the turned camera")  # fmt: skip
    assert cam["azimuth"] == pytest.approx(start["azimuth"] - 60 / start["radius"], abs=1e-9)
    assert cam["elevation"] == pytest.approx(start["elevation"] + 30 / start["radius"], abs=1e-9)
    assert driver.execute_script(FIRST_PAINT_JS, FIRST_PAINT, "clicked") is None  # a drag is no click
    before, _ = sphere_screen(start, vectors)
    after, _ = sphere_screen(cam, vectors)
    k = lone_front_dot(sphere, cam)
    # near the centre the front turned with the drag: right and down
    assert after[k, 0] > before[k, 0] and after[k, 1] > before[k, 1]
    # the dot is drawn where the turned camera puts it: its colour at its centre
    color = sphere["color"]["palette"][sphere["color"]["code"][k]]
    after_frames(driver)  # the turned camera's frame drawn
    pixel = sphere_pixel(driver, *after[k])
    assert np.abs(np.array(pixel[:3]) - css_rgb(color)).max() <= 3 and pixel[3] == 255
    # a click on it opens its molecule and rings it there
    w, h = cam["width"], cam["height"]
    ActionChains(driver).move_to_element_with_offset(
        canvas, int(round(after[k, 0] - w / 2)), int(round(after[k, 1] - h / 2))
    ).click().perform()
    mol = sphere["ids"][k]
    wait_for(lambda: driver.execute_script(FIRST_PAINT_JS, FIRST_PAINT, "clicked") == mol, what="the clicked dot")
    assert f"molecule={mol}" in driver.current_url
    wait_for(lambda: mol in (driver.find_element(By.CSS_SELECTOR, "[data-first-paint] #molecule-id").text or ""),
             what="the molecule panel")  # fmt: skip
    rings = driver.find_elements(By.CSS_SELECTOR, FIRST_PAINT + " svg.selection-ring circle")
    offset = driver.execute_script(
        f"const c = document.querySelector('{CANVAS}').getBoundingClientRect(),"
        f" h = document.querySelector('{FIRST_PAINT}').getBoundingClientRect(); return [c.left - h.left, c.top - h.top]"
    )
    centres = np.array([[float(c.get_attribute("cx")), float(c.get_attribute("cy"))] for c in rings]) - offset
    assert np.hypot(*(centres - after[k]).T).min() < 0.01
    # a double click returns to the start
    ActionChains(driver).move_to_element_with_offset(canvas, 0, int(h / 2 - 4)).double_click().perform()
    back = wait_for(lambda: (c := driver.execute_script(SPHERE_CAMERA_JS)) and c["azimuth"] == start["azimuth"] and c,
                    what="the camera back at its start")  # fmt: skip
    assert back["elevation"] == start["elevation"]


def test_the_first_paint_draws_continuous_colours_on_the_scale_of_the_colour_bar(without_scripts, base_url):
    driver = without_scripts
    sphere = sphere_of(base_url, {"color": "prop:u0"})
    color = sphere["color"]
    assert color["kind"] == "continuous"
    cam = drawn_sphere(driver, base_url + "/?dataset=qm9&view=sphere&color=prop:u0")
    # the colour bar, with the server's words
    ticks = [e.text for e in driver.find_elements(By.CSS_SELECTOR, FIRST_PAINT + " .sphere-colorbar-tick")]
    assert ticks == [t[1] for t in color["ticks"]] and len(set(ticks)) == 3
    assert driver.find_element(By.CSS_SELECTOR, FIRST_PAINT + " .sphere-colorbar-title").text == color["title"]
    vectors = np.array(sphere["vectors"]).reshape(-1, 3)
    xy, _ = sphere_screen(cam, vectors)
    k = lone_front_dot(sphere, cam)
    t = color["values"][k]
    assert t is not None
    expected = css_rgb(sample_colorscale(list(CIVIDIS), [t])[0])
    pixel = sphere_pixel(driver, *xy[k])
    # drawn in 64 steps of the scale: within half a step of plotly's colour
    assert np.abs(np.array(pixel[:3]) - expected).max() <= 4 and pixel[3] == 255
    # a rest on it names its molecule and axis (map_component.js's tooltip, as on the map)
    canvas = driver.find_element(By.CSS_SELECTOR, CANVAS)
    w, h = cam["width"], cam["height"]
    ActionChains(driver).move_to_element_with_offset(
        canvas, int(round(xy[k, 0] - w / 2)), int(round(xy[k, 1] - h / 2))
    ).perform()
    mol, axis = sphere["ids"][k], sphere["keys"][k] % 3 + 1
    tip = wait_for(lambda: driver.execute_script(TOOLTIP_JS), what="the hover's tooltip")
    assert tip == {"text": f"molecule {mol} · axis {axis}", "molecule": mol, "axis": str(axis)}


def test_a_page_opened_on_a_molecule_rings_its_three_axes_and_the_ring_turns_with_the_sphere(
    without_scripts, base_url, qm9_store
):
    driver = without_scripts
    md = load_map_data(qm9_store, "qm9")
    mol = str(md.ids[7])
    axes = md.vectors(np.full(3, md.row_of(mol)), np.arange(1, 4))  # its axes 1..3, as the flat map rings them

    def ringed() -> np.ndarray | None:
        got = driver.execute_script(RING_JS)
        return np.array(got) if got and len(got) == 3 else None

    cam = drawn_sphere(driver, f"{base_url}/?dataset=qm9&view=sphere&molecule={mol}")
    want = sphere_screen(cam, axes)[0]
    got = wait_for(
        lambda: (r := ringed()) is not None and np.abs(r - want).max() < 0.01 and r.tolist(), what="the ring"
    )
    # a wheel step zooms in: the ring follows to the zoomed camera's positions
    canvas = driver.find_element(By.CSS_SELECTOR, SPHERE_CANVAS)
    ActionChains(driver).scroll_from_origin(ScrollOrigin.from_element(canvas), 0, -200).perform()
    zoomed = wait_for(lambda: (c := driver.execute_script(SPHERE_CAMERA_JS)) and c["zoom"] > 1 and c, what="the zoom")
    after_frames(driver)
    moved = sphere_screen(zoomed, axes)[0]
    assert np.abs(ringed() - moved).max() < 0.01 and np.abs(moved - np.array(got)).max() > 1
