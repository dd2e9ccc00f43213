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
from selenium.webdriver.common.by import By

from orientscope.core.palette import CIVIDIS
from tests.browser.chrome import map_drawn
from tests.browser.pages import FIRST_PAINT, FIRST_PAINT_JS, wait_for

pytestmark = pytest.mark.browser
CANVAS = FIRST_PAINT + " canvas.sphere-canvas"
CAMERA_JS = f"const h = document.querySelector('{FIRST_PAINT}'); return h && h._sphere ? h._sphere.camera() : null"
# the canvas's pixel [r, g, b, a] at (x, y) css px of its drawing
PIXEL_JS = f"""
const c = document.querySelector('{CANVAS}'), k = window.devicePixelRatio || 1;
return Array.from(c.getContext('2d').getImageData(Math.round(arguments[0] * k - 0.5), Math.round(arguments[1] * k - 0.5), 1, 1).data);
"""


def camera_basis(azimuth: float, elevation: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Screen right, screen up and towards the viewer of a turntable camera with z up."""
    ca, sa, ce, se = np.cos(azimuth), np.sin(azimuth), np.cos(elevation), np.sin(elevation)
    return np.array([-sa, ca, 0.0]), np.array([-se * ca, -se * sa, ce]), np.array([ce * ca, ce * sa, se])


def screen(cam: dict, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """((n, 2) css px from the drawing's top left, (n,) depth) of unit vectors under the renderer's camera."""
    right, up, towards = camera_basis(cam["azimuth"], cam["elevation"])
    r = min(cam["width"], cam["height"]) / 2 / 1.1 * cam["zoom"]  # the 3D scene's ±1.1 ranges
    xy = np.stack([cam["width"] / 2 + r * vectors @ right, cam["height"] / 2 - r * vectors @ up], axis=1)
    return xy, vectors @ towards


def lone_front_dot(xy: np.ndarray, depth: np.ndarray, cam: dict, clear_px: float, avoid=()) -> int:
    """A dot on the near hemisphere, well inside the drawing, with no other dot within ``clear_px``."""
    centre = np.array([cam["width"], cam["height"]]) / 2
    for i in np.argsort(np.hypot(*(xy - centre).T)):
        d = np.hypot(*(xy - xy[i]).T)
        d[i] = np.inf
        if depth[i] > 0.2 and d.min() > clear_px and all(np.hypot(*(xy[i] - a)) > 14 for a in avoid):
            return int(i)
    pytest.fail("no dot stands alone on the near hemisphere")


def sphere_of(base_url: str, query: dict) -> dict:
    r = httpx.get(f"{base_url}/api/datasets/qm9/map/first-paint", params={"view": "sphere", **query}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()["sphere"]


def drawn_sphere(driver, url: str) -> dict:
    driver.get(url)
    wait_for(lambda: map_drawn(driver, first_paint=True), what="the first paint's test hook")
    assert driver.execute_script("return typeof window.Plotly + typeof window.DashRenderer") == "undefinedundefined"
    return wait_for(lambda: (c := driver.execute_script(CAMERA_JS)) and c["width"] > 0 and c, what="the sphere")


def rgb(color: str) -> np.ndarray:
    if color.startswith("#"):
        return np.array([int(color[i : i + 2], 16) for i in (1, 3, 5)], float)
    return np.array([float(c) for c in color[color.index("(") + 1 : -1].split(",")[:3]])


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
    cam = wait_for(lambda: (c := driver.execute_script(CAMERA_JS)) and c["azimuth"] != start["azimuth"] and c,
                   what="the turned camera")  # fmt: skip
    assert cam["azimuth"] == pytest.approx(start["azimuth"] - 60 / start["radius"], abs=1e-9)
    assert cam["elevation"] == pytest.approx(start["elevation"] + 30 / start["radius"], abs=1e-9)
    assert driver.execute_script(FIRST_PAINT_JS, FIRST_PAINT, "clicked") is None  # a drag is no click
    before, _ = screen(start, vectors)
    after, depth = screen(cam, vectors)
    refs = screen(cam, np.array([r["v"] for r in sphere["reference"]]).reshape(-1, 3))[0]
    k = lone_front_dot(after, depth, cam, clear_px=max(sphere["size"], 6.0), avoid=refs)
    # near the centre the front turned with the drag: right and down
    assert after[k, 0] > before[k, 0] and after[k, 1] > before[k, 1]
    # the dot is drawn where the turned camera puts it: its colour at its centre
    color = sphere["color"]["palette"][sphere["color"]["code"][k]]
    pixel = wait_for(lambda: driver.execute_script(PIXEL_JS, *after[k]), what="the canvas's pixel")
    assert np.abs(np.array(pixel[:3]) - rgb(color)).max() <= 3 and pixel[3] == 255
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
    back = wait_for(lambda: (c := driver.execute_script(CAMERA_JS)) and c["azimuth"] == start["azimuth"] and c,
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
    xy, depth = screen(cam, vectors)
    refs = screen(cam, np.array([r["v"] for r in sphere["reference"]]).reshape(-1, 3))[0]
    k = lone_front_dot(xy, depth, cam, clear_px=max(sphere["size"], 6.0), avoid=refs)
    t = color["values"][k]
    assert t is not None
    expected = rgb(sample_colorscale(list(CIVIDIS), [t])[0])
    pixel = driver.execute_script(PIXEL_JS, *xy[k])
    # drawn in 64 steps of the scale: within half a step of plotly's colour
    assert np.abs(np.array(pixel[:3]) - expected).max() <= 4 and pixel[3] == 255
