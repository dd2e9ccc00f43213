"""One pick rule for hover and click, in real headless Chromium: the molecule a hover names is the one a
click opens; where molecules share a pixel, hover says how many and a click opens a paged chooser."""

from __future__ import annotations

import numpy as np
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from orientscope.app.figures import MAP_SCALE
from orientscope.services.map_data import load_map_data
from tests.browser.chrome import map_drawn, serve
from tests.browser.pages import TIP_JS, TO_PIXEL_JS, open_map, text_of, wait_for
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
        spot = np.round(np.array(spot) + rng.uniform(-3, 3, 2))
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
