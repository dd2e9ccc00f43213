"""Every view answers a click the same way, in real headless Chromium: the Mollweide points, its image,
the density view (the landing page) and the 3D sphere all open the molecule panel and name the molecule
in the URL, and ring it on the map. Hovering the landing view asks nothing it cannot answer."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from orientscope.figures.plots import MAP_SCALE
from orientscope.services.map_data import load_map_data
from tests.browser.chrome import DASH_SPHERE_CANVAS, dash_sphere, finite_pixels, lone_front_dot, point_at_dot
from tests.browser.pages import TO_PIXEL_JS, open_map, text_of, wait_for

pytestmark = pytest.mark.browser


def _click_near_a_point(driver, graph, md) -> None:
    size = graph.size
    for row in range(md.n_molecules):
        spot = finite_pixels(driver, TO_PIXEL_JS, [[float(md.x[row, 0]) * MAP_SCALE, float(md.y[row, 0]) * MAP_SCALE]])
        x, y = spot[0]
        if abs(x) < size["width"] / 2 - 30 and abs(y) < size["height"] / 2 - 30:
            ActionChains(driver).move_to_element_with_offset(graph, int(x) + 1, int(y)).click().perform()
            return
    pytest.fail("no point inside the plot")


def _click_a_sphere_point(driver) -> None:
    """A click on a lone dot of Dash's sphere (map_sphere.js's canvas), after its tooltip names the molecule."""
    cam, sphere = dash_sphere(driver)
    k = lone_front_dot(sphere, cam)
    point_at_dot(driver, DASH_SPHERE_CANVAS, cam, sphere, k)
    wait_for(lambda: f"molecule {sphere['ids'][k]}" in " ".join(
        e.text for e in driver.find_elements(By.CSS_SELECTOR, "#orientation-map .map-tooltip")), what="the sphere's tooltip")  # fmt: skip
    point_at_dot(driver, DASH_SPHERE_CANVAS, cam, sphere, k, click=True)


@pytest.mark.parametrize(
    ("server", "path", "ringed"),
    [
        ("base_url", "/?dataset=qm9&view=map", True),  # the small store's map is points
        ("image_url", "/?dataset=qm9&view=map", True),  # above the budget: the image
        ("base_url", "/", True),  # the landing page: the density view
        ("base_url", "/?dataset=qm9&view=sphere", True),
    ],
)
def test_a_click_in_every_view_opens_the_molecule_panel_and_the_url(driver, request, qm9_store, server, path, ringed):
    graph = open_map(driver, request.getfixturevalue(server) + path)
    md = load_map_data(qm9_store, "qm9")
    if "sphere" in path:
        _click_a_sphere_point(driver)
    else:
        _click_near_a_point(driver, graph, md)
    chosen = wait_for(lambda: text_of(driver, "molecule-id"), what="the molecule panel")
    panel = driver.find_element(By.ID, "molecule-panel")
    assert panel.is_displayed() and panel.size["height"] > 100
    wait_for(lambda: f"molecule={chosen}" in driver.current_url, what="the URL to name it")
    wait_for(lambda: driver.execute_script("return document.getElementById('molecule-viewer').dataset.molecule")
             == chosen, what="the viewer")  # fmt: skip
    if ringed:
        wait_for(
            lambda: driver.find_elements(By.CSS_SELECTOR, "#orientation-map svg.selection-ring circle"), what="ring"
        )


def test_hovering_the_landing_view_asks_nothing_it_cannot_answer(driver, base_url):
    graph = open_map(driver, base_url + "/")
    for dx in range(-100, 101, 25):
        ActionChains(driver).move_to_element_with_offset(graph, dx, 5).pause(0.2).perform()
    # a hover there once asked .../map/pixel?kind=undefined and got a 422 (logged as a severe error)
    label = wait_for(
        lambda: " ".join(e.text for e in driver.find_elements(By.CSS_SELECTOR, "#orientation-map .map-tooltip")),
        what="the density's hover words",
    )
    assert "uniform" in label
