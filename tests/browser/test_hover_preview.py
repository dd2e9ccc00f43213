"""The map's hover preview in real headless Chromium (frontend_assets/hover_preview.js): a rest on a point
of the map (points and image mode), the density view, the 3D sphere and the first paint shows a card with
the RDKit depiction, the formula and the coloured value of the molecule the hover names (the one a click
opens), drawn as a DOM overlay: the figure is not changed."""

from __future__ import annotations

import re
from urllib.parse import unquote

import httpx
import numpy as np
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from orientscope.figures.plots import MAP_SCALE
from orientscope.services.map_data import load_map_data
from tests.browser.chrome import DASH_SPHERE_CANVAS, dash_sphere, finite_pixels, lone_front_dot, map_drawn, point_at_dot
from tests.browser.pages import TIP_JS, TO_PIXEL_JS, map_pixels, open_map, static_map, wait_for

pytestmark = pytest.mark.browser

PREVIEW_JS = """
const c = document.querySelector('#orientation-map .hover-preview');
if (!c || c.hidden || !c.dataset.molecule) return null;
const img = c.querySelector('img');
return {molecule: c.dataset.molecule, caption: c.querySelector('.hover-preview-caption').textContent,
        drawn: !!img && img.complete && img.naturalWidth > 0, src: img ? img.getAttribute('src') : null,
        pointer: getComputedStyle(c).pointerEvents};
"""
# The drawing as map_draw.js holds it: its paint's token, its view box and its SVG (a redraw changes them).
FIGURE_JS = """
const host = document.getElementById('orientation-map'), svg = host.querySelector('.map-svg');
return {layout: host._mapHandle.paint().hook.token + ' ' + svg.getAttribute('viewBox'),
        traces: svg.querySelectorAll('*').length, redraws: host.dataset.token};
"""
HIDE_JS = """
for (const s of ['.map-tooltip', '.hover-preview']) {
  const t = document.querySelector('#orientation-map ' + s); if (t) { t.hidden = true; t.dataset.molecule = ''; }
}
"""


def _spots(driver, md, graph, n: int, seed: int = 3):
    """On-screen offsets (from the plot's centre) of the first axis of ``n`` random molecules, inside the plot."""
    rng = np.random.default_rng(seed)
    size, out = graph.size, []
    for r in rng.permutation(md.n_molecules):
        spot = finite_pixels(driver, TO_PIXEL_JS, [[float(md.x[r, 0]) * MAP_SCALE, float(md.y[r, 0]) * MAP_SCALE]])[0]
        if abs(spot[0]) < size["width"] / 2 - 60 and abs(spot[1]) < size["height"] / 2 - 60:
            out.append(spot)
        if len(out) == n:
            return out
    return out


@pytest.mark.parametrize("mode", ["points", "image"])
def test_a_rest_on_the_map_previews_the_molecule_the_hover_names_without_changing_the_figure(
    driver, request, qm9_store, mode
):
    url = request.getfixturevalue("base_url" if mode == "points" else "image_url")
    graph = open_map(driver, url + "/?dataset=qm9&view=map&color=prop:gap")
    assert map_drawn(driver)["mode"] == mode
    md = load_map_data(qm9_store, "qm9")
    before = driver.execute_script(FIGURE_JS)
    previews = 0
    for spot in _spots(driver, md, graph, 6):
        driver.execute_script(HIDE_JS)
        ActionChains(driver).move_to_element_with_offset(graph, int(spot[0]), int(spot[1])).perform()
        tip = wait_for(lambda: driver.execute_script(TIP_JS), what="the hover text")
        if not tip["molecule"]:
            continue
        card = wait_for(lambda: driver.execute_script(PREVIEW_JS), what="the hover preview")
        assert card["molecule"] == tip["molecule"]  # one pick rule: the molecule the hover text names
        # the map's hover answer (map/preview) carries the depiction: the molecule's depiction.svg, inline
        assert card["drawn"] and card["src"].startswith("data:image/svg+xml")
        svg = httpx.get(f"{url}/api/datasets/qm9/molecules/{tip['molecule']}/depiction.svg", timeout=30).text
        assert unquote(card["src"].split(",", 1)[1]) == svg
        assert f"molecule {tip['molecule']}" in card["caption"] and "gap" in card["caption"]
        assert re.search(r"gap[^:]*: -?\d", card["caption"]), card["caption"]  # the coloured value
        assert card["pointer"] == "none"  # the card never takes the mouse from the map
        previews += 1
    assert previews >= 3
    after = driver.execute_script(FIGURE_JS)
    assert after == before  # a DOM overlay: the figure's layout and traces as they were, and no redraw
    # leaving the plot hides it
    ActionChains(driver).move_to_element_with_offset(graph, 0, graph.size["height"] // 2 + 40).perform()
    wait_for(lambda: driver.execute_script(PREVIEW_JS) is None, what="the preview to hide")


def test_a_rest_on_the_density_view_previews_the_molecule_a_click_there_opens(driver, base_url, qm9_store):
    graph = open_map(driver, base_url + "/")
    view = "return document.getElementById('orientation-map')._mapHandle.paint().view"
    assert driver.execute_script(view) == "density"
    md = load_map_data(qm9_store, "qm9")
    before = driver.execute_script(FIGURE_JS)
    for spot in _spots(driver, md, graph, 4, seed=5):
        driver.execute_script(HIDE_JS)
        ActionChains(driver).move_to_element_with_offset(graph, int(spot[0]), int(spot[1])).perform()
        card = wait_for(lambda: driver.execute_script(PREVIEW_JS), what="the hover preview")
        assert card["drawn"] and f"molecule {card['molecule']}" in card["caption"]
        driver.execute_script("document.getElementById('orientation-map').dataset.clicked = ''")
        ActionChains(driver).click().perform()
        clicked = wait_for(
            lambda: driver.execute_script("return document.getElementById('orientation-map').dataset.clicked"),
            what="the click's molecule",
        )
        assert clicked == card["molecule"]
        break
    assert driver.execute_script(FIGURE_JS)["layout"] == before["layout"]


def test_a_rest_on_a_point_of_the_sphere_previews_its_molecule(driver, base_url):
    open_map(driver, base_url + "/?dataset=qm9&view=sphere")
    cam, sphere = dash_sphere(driver)
    k = lone_front_dot(sphere, cam)
    point_at_dot(driver, DASH_SPHERE_CANVAS, cam, sphere, k)
    tip = wait_for(lambda: driver.execute_script(TIP_JS), what="the sphere's tooltip")
    card = wait_for(lambda: driver.execute_script(PREVIEW_JS), what="the hover preview")
    named = re.search(r"molecule (\S+)", tip["text"]).group(1)
    assert card["molecule"] == named == tip["molecule"] == sphere["ids"][k] and card["drawn"]


def test_the_first_paint_previews_the_molecule_its_hover_names(without_scripts, image_url, qm9_store):
    driver = without_scripts
    svg = static_map(driver, image_url + "/?dataset=qm9&view=map")
    md = load_map_data(qm9_store, "qm9")
    rng = np.random.default_rng(11)
    for row in rng.permutation(np.flatnonzero(~np.isnan(md.x[:, 0])))[:30]:  # molecules whose axis 1 is drawn
        at = map_pixels(driver, md, [row])[0, 0]
        if np.abs(at).max() > 150:
            continue
        ActionChains(driver).move_to_element_with_offset(svg, int(at[0]), int(at[1])).perform()
        try:
            tip = wait_for(
                lambda: driver.execute_script(
                    "const t = document.querySelector('#orientation-map .map-tooltip');"
                    "return t && !t.hidden && /molecule (\\S+)/.exec(t.textContent)"
                ),
                timeout=5,
                what="the tooltip",
            )
        except AssertionError:
            continue  # an empty pixel beside the point
        card = wait_for(lambda: driver.execute_script(PREVIEW_JS), what="the first paint's hover preview")
        assert card["molecule"] == tip[1] and card["drawn"]
        assert driver.find_elements(By.CSS_SELECTOR, "#orientation-map[data-first-paint]")  # still the first paint
        return
    pytest.fail("no hover over 30 molecules' points named one")
