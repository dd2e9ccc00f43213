"""A SMARTS highlight on the 3D sphere in real headless Chromium: as on the flat map, the molecules that do
not match are drawn grey and dimmed, the matches over them in the highlight colour, and no colour bar of the
colouring set aside stays up; the static first paint draws the same."""

from __future__ import annotations

import numpy as np
import pytest
from selenium.webdriver.common.by import By

from orientscope.app.state import parse_query
from orientscope.core.palette import HIGHLIGHT, OTHER_GREY
from orientscope.figures.mapview import map_layers
from orientscope.figures.plots import MUTED_OPACITY
from tests.browser.chrome import (
    SPHERE_CAMERA_JS,
    SPHERE_PAINT_JS,
    css_rgb,
    lone_front_dot,
    map_drawn,
    sphere_pixel,
    sphere_screen,
)
from tests.browser.pages import FIRST_PAINT, wait_for

pytestmark = pytest.mark.browser

SPHERE_JS = """
const gd = document.querySelector('#orientation-map .js-plotly-plot');
if (!gd || !gd._fullData || !gd.layout.meta || !gd.layout.meta.map || gd.layout.meta.map.view !== 'sphere') return null;
return gd._fullData.map(t => ({kind: t.meta && t.meta.kind, type: t.type, opacity: t.opacity, n: (t.x || []).length,
  color: t.marker && (typeof t.marker.color === 'string' ? t.marker.color : 'per point'),
  scale: !!(t.marker && t.marker.showscale), legend: t.showlegend ? t.name : null,
  text: t.text ? Array.from(t.text) : null}));
"""
QUERY = "?dataset=qm9&view=sphere&color=prop:u0&smarts=C%3DO"


def test_a_highlight_greys_the_sphere_under_its_matches_with_no_stale_colour_bar(driver, base_url, qm9_store):
    driver.get(base_url + "/" + QUERY)
    wait_for(lambda: map_drawn(driver), what="the sphere")
    traces = wait_for(lambda: driver.execute_script(SPHERE_JS), what="the sphere's traces")
    layers = map_layers(qm9_store, parse_query(QUERY)[0])
    kinds = [t["kind"] for t in traces]
    points, match = traces[kinds.index("points")], traces[kinds.index("highlight")]
    assert kinds.index("highlight") == kinds.index("points") + 1  # drawn after, over them
    assert points["color"] == OTHER_GREY.lower() or points["color"].lower() == OTHER_GREY.lower()
    assert points["opacity"] == pytest.approx(MUTED_OPACITY) and points["n"] == layers.rows.size
    expected = layers.md.ids[layers.rows][layers.sphere_highlight].astype(str).tolist()
    assert 0 < match["n"] == len(expected) < points["n"] and match["text"] == expected
    assert match["color"].lower() == HIGHLIGHT.lower()
    assert not any(t["scale"] for t in traces)  # the u0 colour bar is set aside with the colours
    assert {"SMARTS match", "no SMARTS match (grey)"} <= {t["legend"] for t in traces}


def test_the_first_paint_of_a_highlighted_sphere_draws_the_matches_over_faded_grey_dots(
    without_scripts, base_url, qm9_store
):
    driver = without_scripts
    driver.get(base_url + "/" + QUERY)
    wait_for(lambda: map_drawn(driver, first_paint=True), what="the first paint's test hook")
    cam = wait_for(lambda: driver.execute_script(SPHERE_CAMERA_JS), what="the sphere")
    sphere = driver.execute_script(SPHERE_PAINT_JS)
    color = sphere["color"]
    # the server's matches, whatever the u0 colours were, and no colour bar of them
    layers = map_layers(qm9_store, parse_query(QUERY)[0])
    assert color["kind"] == "highlight" and color["palette"] == [OTHER_GREY, HIGHLIGHT]
    assert np.array(color["code"], bool).tolist() == layers.sphere_highlight.tolist()
    assert not driver.find_elements(By.CSS_SELECTOR, FIRST_PAINT + " .sphere-colorbar")
    legend = driver.find_element(By.CSS_SELECTOR, FIRST_PAINT + " .sphere-legend").text
    assert "SMARTS match" in legend and "no SMARTS match" in legend
    # on the canvas: a lone match in the highlight colour; a lone other dot grey, faded over the sphere's face
    xy, depth = sphere_screen(cam, sphere["vectors"])
    code = np.array(color["code"])
    for matched in (1, 0):
        only = {**sphere, "vectors": np.array(sphere["vectors"]).reshape(-1, 3)[code == matched].reshape(-1).tolist()}
        k = lone_front_dot(only, cam)
        at = sphere_screen(cam, np.array(only["vectors"][3 * k : 3 * k + 3]))[0][0]
        pixel = sphere_pixel(driver, *at)
        face = np.array([0xF4, 0xF4, 0xF4])
        want = css_rgb(HIGHLIGHT) if matched else face + MUTED_OPACITY * (css_rgb(OTHER_GREY) - face)
        assert np.abs(pixel[:3] - want).max() <= 3, (matched, pixel, want)
