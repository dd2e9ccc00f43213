"""A SMARTS highlight on the 3D sphere in real headless Chromium: as on the flat map, the molecules that do
not match are drawn grey and dimmed, the matches over them in the highlight colour, and no colour bar of the
colouring set aside stays up; the first paint and Dash's page draw it with the same renderer (map_sphere.js)."""

from __future__ import annotations

import numpy as np
import pytest
from selenium.webdriver.common.by import By

from orientscope.app.state import parse_query
from orientscope.core.palette import HIGHLIGHT, OTHER_GREY
from orientscope.figures.mapview import map_layers
from orientscope.figures.plots import MUTED_OPACITY
from tests.browser.chrome import (
    DASH_SPHERE_CANVAS,
    SPHERE_CAMERA_JS,
    SPHERE_CANVAS,
    SPHERE_PAINT_JS,
    after_frames,
    css_rgb,
    dash_sphere,
    lone_front_dot,
    map_drawn,
    sphere_pixel,
    sphere_screen,
)
from tests.browser.pages import FIRST_PAINT, wait_for

pytestmark = pytest.mark.browser

QUERY = "?dataset=qm9&view=sphere&color=prop:u0&smarts=C%3DO"


def _highlighted(driver, qm9_store, cam: dict, sphere: dict, host: str, canvas: str) -> None:
    """The server's matches over faded grey others on ``canvas``, whatever the u0 colours were, with no colour bar."""
    color = sphere["color"]
    layers = map_layers(qm9_store, parse_query(QUERY)[0])
    assert color["kind"] == "highlight" and color["palette"] == [OTHER_GREY, HIGHLIGHT]
    assert np.array(color["code"], bool).tolist() == layers.sphere_highlight.tolist()
    assert sphere["ids"] == layers.md.ids[layers.rows].astype(str).tolist()
    assert not driver.find_elements(By.CSS_SELECTOR, host + " .sphere-colorbar")
    legend = driver.find_element(By.CSS_SELECTOR, host + " .sphere-legend").text
    assert "SMARTS match" in legend and "no SMARTS match" in legend
    # on the canvas: a lone match in the highlight colour; a lone other dot grey, faded over the sphere's face
    code = np.array(color["code"])
    for matched in (1, 0):
        only = {**sphere, "vectors": np.array(sphere["vectors"]).reshape(-1, 3)[code == matched].reshape(-1).tolist()}
        k = lone_front_dot(only, cam)
        at = sphere_screen(cam, np.array(only["vectors"][3 * k : 3 * k + 3]))[0][0]
        pixel = sphere_pixel(driver, *at, canvas=canvas)
        face = np.array([0xF4, 0xF4, 0xF4])
        want = css_rgb(HIGHLIGHT) if matched else face + MUTED_OPACITY * (css_rgb(OTHER_GREY) - face)
        assert np.abs(pixel[:3] - want).max() <= 3, (matched, pixel, want)


def test_a_highlight_greys_the_sphere_under_its_matches_with_no_stale_colour_bar(driver, base_url, qm9_store):
    driver.get(base_url + "/" + QUERY)
    wait_for(lambda: map_drawn(driver), what="the sphere")
    cam, sphere = dash_sphere(driver)
    after_frames(driver)
    _highlighted(driver, qm9_store, cam, sphere, "#orientation-map:not([data-first-paint])", DASH_SPHERE_CANVAS)


def test_the_first_paint_of_a_highlighted_sphere_draws_the_matches_over_faded_grey_dots(
    without_scripts, base_url, qm9_store
):
    driver = without_scripts
    driver.get(base_url + "/" + QUERY)
    wait_for(lambda: map_drawn(driver, first_paint=True), what="the first paint's test hook")
    cam = wait_for(lambda: driver.execute_script(SPHERE_CAMERA_JS), what="the sphere")
    sphere = driver.execute_script(SPHERE_PAINT_JS)
    _highlighted(driver, qm9_store, cam, sphere, FIRST_PAINT, SPHERE_CANVAS)
