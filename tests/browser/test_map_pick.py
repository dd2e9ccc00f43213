"""One pick rule for hover and click, in real headless Chromium: the molecule a hover names is the one a
click opens; where molecules share a pixel, hover says how many and a click opens a paged chooser."""

from __future__ import annotations

import numpy as np
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from orientscope.figures.plots import MAP_SCALE
from orientscope.services.map_data import load_map_data
from tests.browser.chrome import first_paint_pixels, map_drawn, serve
from tests.browser.pages import (
    FIRST_PAINT,
    FIRST_PAINT_JS,
    PANEL_JS,
    TIP_JS,
    TO_PIXEL_JS,
    open_map,
    static_map,
    text_of,
    wait_for,
)
from tests.molecules import waters

pytestmark = pytest.mark.browser
N_STACKED = 50

CHOOSER_JS = """
const c = document.querySelector('#orientation-map .map-chooser');
if (!c || c.dataset.page === undefined) return null;
return {page: Number(c.dataset.page), total: Number(c.dataset.total), title: c.querySelector('p').textContent,
        rows: Array.from(c.querySelectorAll('tr.chooser-row')).map(r => Array.from(r.cells).map(td => td.textContent))};
"""


@pytest.fixture(scope="module")
def stacked_url(tmp_path_factory):
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.store.shards import save_sharded

    data_dir = tmp_path_factory.mktemp("stacked")
    save_sharded(data_dir, "waters", waters(N_STACKED, 40), name="Waters", source="constructed")
    # no "models" stage: the map needs only frames (and the stage takes longest)
    precompute(data_dir, "waters", make_params(seed=0), stages=["frames", "statistics", "chemistry"])
    with serve(data_dir) as url:
        yield url, data_dir


def _hover(driver, graph, target) -> dict:
    driver.execute_script("const t = document.querySelector('#orientation-map .map-tooltip'); if (t) t.hidden = true;")
    ActionChains(driver).move_to_element_with_offset(graph, int(target[0]), int(target[1])).perform()
    return wait_for(lambda: driver.execute_script(TIP_JS), what="the hover text")


def test_hover_says_how_many_share_a_pixel_and_a_click_opens_a_paged_chooser(driver, stacked_url):
    url, data_dir = stacked_url
    graph = open_map(driver, url + "/?dataset=waters&view=map")
    md = load_map_data(data_dir, "waters")
    row = md.row_of("stack-0")
    assert np.allclose(md.x[:N_STACKED], md.x[row]) and np.allclose(md.y[:N_STACKED], md.y[row])  # truly stacked
    target = driver.execute_script(TO_PIXEL_JS, [[float(md.x[row, 0]) * MAP_SCALE, float(md.y[row, 0]) * MAP_SCALE]])[0]
    tip = _hover(driver, graph, target)
    assert tip["shared"] == str(N_STACKED) and f"{N_STACKED} molecules share this pixel" in tip["text"], tip
    hovered = tip["molecule"]
    ActionChains(driver).click().perform()
    first = wait_for(lambda: driver.execute_script(CHOOSER_JS), what="the chooser")
    assert first["total"] == N_STACKED and first["page"] == 0
    assert first["rows"][0][0] == hovered  # the molecule the hover named comes first
    seen = []
    for page in range(5):
        if page:
            driver.find_element(By.CSS_SELECTOR, "#orientation-map .map-chooser .chooser-next").click()
        shown = wait_for(lambda p=page: (c := driver.execute_script(CHOOSER_JS)) and c["page"] == p and c, what="page")
        assert [r[1] for r in shown["rows"]] == ["H2O"] * len(shown["rows"])  # formula
        assert all(r[2].startswith("axis") for r in shown["rows"])  # the coloured value: the axis
        seen += [r[0] for r in shown["rows"]]
    assert len(seen) == N_STACKED and set(seen) == {f"stack-{i}" for i in range(N_STACKED)}
    assert not driver.find_element(By.CSS_SELECTOR, "#orientation-map .map-chooser .chooser-next").is_enabled()
    # choosing a row opens that molecule: panel, URL, ring
    driver.find_element(By.CSS_SELECTOR, "#orientation-map .map-chooser tr.chooser-row button").click()
    chosen = seen[-len(shown["rows"])]
    wait_for(lambda: text_of(driver, "molecule-id") == chosen, what=f"molecule {chosen} to open")
    wait_for(lambda: f"molecule={chosen}" in driver.current_url, what="the URL to name it")
    assert driver.find_elements(By.CSS_SELECTOR, "#orientation-map .map-chooser") == []
    # a set without SMILES: the neighbour captions leave the missing field out ("stack-3 · 0.0°")
    buttons = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#molecule-extra .link-button"), what="neighbours")
    assert all(" ·  · " not in b.text and not b.text.endswith(" · ") for b in buttons)


@pytest.mark.parametrize(("mode", "n_spots"), [("points", 100), ("image", 30)])
def test_hover_and_click_name_the_same_molecule_at_random_points(driver, base_url, qm9_store, mode, n_spots, request):
    url = base_url
    if mode == "image":
        url = request.getfixturevalue("image_url")
    graph = open_map(driver, url + "/?dataset=qm9&view=map")
    assert map_drawn(driver)["mode"] == mode
    md = load_map_data(qm9_store, "qm9")
    rows, axes = md.points()  # the drawn points: an axis the molecule's symmetry leaves undefined is none
    rng = np.random.default_rng(7)
    size = graph.size
    checked = 0
    for _ in range(400):
        # a random spot near a random molecule's point (a pick needs a point within 5 px)
        k = int(rng.integers(rows.size))
        r, a = int(rows[k]), int(axes[k]) - 1
        spot = driver.execute_script(TO_PIXEL_JS, [[float(md.x[r, a]) * MAP_SCALE, float(md.y[r, a]) * MAP_SCALE]])[0]
        # within 5 px of the grid the pick counts on: over an image, its own pixels, which are finer than the
        # screen's when the image is drawn narrower than it is (900 pixels in 735 with the molecule panel open)
        spot = np.round(np.array(spot) + rng.uniform(-2, 2, 2))
        if abs(spot[0]) > size["width"] / 2 - 40 or abs(spot[1]) > size["height"] / 2 - 40:
            continue
        tip = _hover(driver, graph, spot)
        if not tip["molecule"] or tip["shared"] != "1":
            continue
        driver.execute_script("document.getElementById('orientation-map').dataset.clicked = ''")
        ActionChains(driver).click().perform()
        clicked = wait_for(
            lambda: driver.execute_script("return document.getElementById('orientation-map').dataset.clicked"),
            what="the click's molecule",
        )
        assert clicked == tip["molecule"], (spot, tip)
        checked += 1
        if checked == n_spots:
            break
    assert checked == n_spots


@pytest.fixture(scope="module")
def stacked_image_url(stacked_url):
    """The stacked waters with a point budget under their 270 points: the whole map is an image (and the
    page's HTML carries it as its first paint)."""
    _, data_dir = stacked_url
    with serve(data_dir, env={"ORIENTSCOPE_MAP_POINT_BUDGET": "10"}) as url:
        yield url, data_dir


def test_a_click_on_a_shared_pixel_of_the_image_opens_the_chooser(driver, stacked_image_url):
    url, data_dir = stacked_image_url
    graph = open_map(driver, url + "/?dataset=waters&view=map")
    assert map_drawn(driver)["mode"] == "image"
    md = load_map_data(data_dir, "waters")
    row = md.row_of("stack-0")
    target = driver.execute_script(TO_PIXEL_JS, [[float(md.x[row, 0]) * MAP_SCALE, float(md.y[row, 0]) * MAP_SCALE]])[0]
    tip = _hover(driver, graph, target)
    assert tip["shared"] == str(N_STACKED)
    ActionChains(driver).click().perform()
    first = wait_for(lambda: driver.execute_script(CHOOSER_JS), what="the chooser")
    assert first["total"] == N_STACKED and first["rows"][0][0] == tip["molecule"]


def test_a_click_on_a_shared_pixel_of_the_first_paint_opens_the_chooser(without_scripts, stacked_image_url):
    """Before Dash has loaded (its scripts blocked), the page HTML's static map picks as the interactive one."""
    driver = without_scripts
    url, data_dir = stacked_image_url
    svg = static_map(driver, url + "/?dataset=waters&view=map")
    md = load_map_data(data_dir, "waters")
    row = md.row_of("stack-0")
    at = first_paint_pixels(driver, [[float(md.x[row, 0]) * MAP_SCALE, -float(md.y[row, 0]) * MAP_SCALE]])[0]
    ActionChains(driver).move_to_element_with_offset(svg, int(round(at[0])), int(round(at[1]))).click().perform()
    chooser = wait_for(lambda: driver.execute_script(CHOOSER_JS), what="the first paint's chooser")
    assert chooser["total"] == N_STACKED and len(chooser["rows"]) == 10
    assert {r[0] for r in chooser["rows"]} <= {f"stack-{i}" for i in range(N_STACKED)}
    assert driver.execute_script(FIRST_PAINT_JS, FIRST_PAINT, "clicked") in (None, "")  # nothing opened yet
    driver.find_element(By.CSS_SELECTOR, "#orientation-map .map-chooser .chooser-next").click()
    wait_for(lambda: (c := driver.execute_script(CHOOSER_JS)) and c["page"] == 1, what="the second page")
    pick = driver.execute_script(CHOOSER_JS)["rows"][2][0]
    driver.find_element(
        By.CSS_SELECTOR, f"#orientation-map .map-chooser tr.chooser-row[data-id='{pick}'] button"
    ).click()
    wait_for(lambda: driver.execute_script(FIRST_PAINT_JS, FIRST_PAINT, "clicked") == pick, what="the chosen one")
    wait_for(lambda: driver.execute_script(PANEL_JS, "molecule-id") == pick, what="the static panel")
    assert f"molecule={pick}" in driver.current_url


def test_a_click_on_a_shared_pixel_of_the_density_view_opens_the_chooser(driver, stacked_url):
    """The density view's map picks by the map's rule: a click where 50 molecules share a pixel lists them."""
    url, data_dir = stacked_url
    graph = open_map(driver, url + "/?dataset=waters&view=density")
    md = load_map_data(data_dir, "waters")
    row = md.row_of("stack-0")
    target = driver.execute_script(TO_PIXEL_JS, [[float(md.x[row, 0]) * MAP_SCALE, float(md.y[row, 0]) * MAP_SCALE]])[0]
    ActionChains(driver).move_to_element_with_offset(graph, int(round(target[0])), int(round(target[1]))).perform()
    ActionChains(driver).click().perform()
    chooser = wait_for(lambda: driver.execute_script(CHOOSER_JS), what="the density view's chooser")
    assert chooser["total"] == N_STACKED
    assert {r[0] for r in chooser["rows"]} <= {f"stack-{i}" for i in range(N_STACKED)}
