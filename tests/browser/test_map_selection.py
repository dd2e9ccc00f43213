"""Lasso and box selection on the flat map (map_draw.js's lasso and box select modes) in real headless Chromium, over
waters drawn as points and as an image: the list shows the molecules inside (count and ids), the CSV link downloads
them, and the selection goes into the URL, so that a reload lists it again."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from orientscope.core.dataset import MoleculeSet
from orientscope.core.selection import parse_selection
from orientscope.figures.plots import MAP_SCALE
from orientscope.services.map_data import load_map_data
from tests.browser.chrome import map_drawn, serve
from tests.browser.pages import TO_PIXEL_JS, open_map, text_of, wait_for

pytestmark = pytest.mark.browser
N_MOLECULES = 60

LISTED_JS = """
const p = document.getElementById('selection-panel');
if (!p || p.hidden) return null;
return {count: document.getElementById('selection-count').textContent,
        ids: Array.from(p.querySelectorAll('tr.selection-row td:first-child')).map(td => td.textContent),
        csv: document.getElementById('selection-csv').getAttribute('href')};
"""

# The outline's vertices as offsets from the drawing's centre (as TO_PIXEL_JS gives them): map_draw.js's lasso path,
# in map units (SVG's y down) on its view box.
OUTLINE_JS = """
const path = document.querySelector('#orientation-map path.lasso');
if (!path) return null;
const stage = document.querySelector('#orientation-map .map-stage'), vb = stage.querySelector('svg').viewBox.baseVal;
const r = stage.getBoundingClientRect();
const cx = Math.floor(r.left + r.width / 2), cy = Math.floor(r.top + r.height / 2);  // WebDriver's centre
const pts = path.getAttribute('d').replace(/Z$/, '').slice(1).split('L').map(q => q.trim().split(' ').map(Number));
return pts.map(q => [r.left + (q[0] - vb.x) / vb.width * r.width - cx, r.top + (q[1] - vb.y) / vb.height * r.height - cy]);
"""


def _waters(n: int, seed: int = 1) -> MoleculeSet:
    """``n`` distorted waters in random poses."""
    rng = np.random.default_rng(seed)
    poses = []
    for _ in range(n):
        r1, r2 = rng.uniform(0.9, 1.1, 2)
        angle = np.radians(rng.uniform(95, 120))
        pose = np.array([[0, 0, 0], [r1, 0, 0], [r2 * np.cos(angle), r2 * np.sin(angle), 0]])
        poses.append(Rotation.random(random_state=rng).apply(pose))
    return MoleculeSet(
        atomic_numbers=np.tile([8, 1, 1], n),
        positions_angstrom=np.concatenate(poses),
        offsets=np.arange(n + 1) * 3,
        ids=[f"w-{i:02d}" for i in range(n)],
    )


@pytest.fixture(scope="module")
def waters_dir(tmp_path_factory):
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.store.shards import save_sharded

    data_dir = tmp_path_factory.mktemp("selection")
    save_sharded(data_dir, "waters", _waters(N_MOLECULES), name="Waters", source="constructed")
    precompute(data_dir, "waters", make_params(seed=0), stages=["frames", "statistics", "chemistry"])
    return data_dir


@pytest.fixture(scope="module", params=["points", "image"])
def waters_url(request, waters_dir):
    """The dashboard over the waters, drawing them as points, or as an image (a point budget below their 180)."""
    env = {"ORIENTSCOPE_MAP_POINT_BUDGET": "50"} if request.param == "image" else None
    with serve(waters_dir, env=env) as url:
        yield url, waters_dir, request.param


def _inside(md, sel: str) -> list[str]:
    """Ids, in the dataset's order, of the molecules with an axis point inside the box ``sel``."""
    x0, x1, y0, y1 = parse_selection(sel).bounds
    inside = ((md.x >= x0) & (md.x <= x1) & (md.y >= y0) & (md.y <= y1)).any(axis=1)
    return [str(i) for i in md.ids[inside]]


def _url_sel(driver) -> str | None:
    from urllib.parse import parse_qs, urlparse

    return (parse_qs(urlparse(driver.current_url).query).get("sel") or [None])[0]


def test_a_lasso_selection_lists_its_molecules_downloads_them_and_survives_a_reload(driver, waters_url, download_dir):
    url, data_dir, mode = waters_url
    graph = open_map(driver, url + "/?dataset=waters&view=map")
    assert map_drawn(driver)["mode"] == mode
    md = load_map_data(data_dir, "waters")
    # the lasso of the map's toolbar, drawn around the left half of the map's upper half
    driver.find_element(By.CSS_SELECTOR, "#orientation-map .map-mode[data-mode='lasso']").click()
    corners = [[-2.6, 0.0], [0.0, 0.0], [0.0, 1.2], [-2.6, 1.2]]
    pixels = np.array(driver.execute_script(TO_PIXEL_JS, [[x * MAP_SCALE, y * MAP_SCALE] for x, y in corners]))
    chain = (
        ActionChains(driver).move_to_element_with_offset(graph, int(pixels[0, 0]), int(pixels[0, 1])).click_and_hold()
    )
    for a, b in zip(pixels, np.roll(pixels, -1, axis=0), strict=True):
        for t in (0.5, 1.0):
            chain.move_to_element_with_offset(graph, int(a[0] + (b[0] - a[0]) * t), int(a[1] + (b[1] - a[1]) * t))
    chain.release().perform()
    sel = wait_for(lambda: _url_sel(driver), what="the selection in the URL")
    assert sel.startswith("lasso:")
    x0, x1, y0, y1 = parse_selection(sel).bounds
    assert x0 == pytest.approx(-2.6, abs=0.05) and x1 == pytest.approx(0.0, abs=0.05)
    assert y0 == pytest.approx(0.0, abs=0.05) and y1 == pytest.approx(1.2, abs=0.05)
    expected = _inside(md, sel)
    assert 0 < len(expected) < N_MOLECULES
    listed = wait_for(lambda: driver.execute_script(LISTED_JS), what="the selection's list")
    assert listed["count"].startswith(f"{len(expected)} molecule") and listed["ids"] == expected[:20]

    # the CSV link downloads every selected molecule with its formula and the coloured value (the axis)
    for old in download_dir.glob("waters-selection*.csv"):
        old.unlink()
    driver.find_element(By.ID, "selection-csv").click()
    path = download_dir / "waters-selection.csv"
    rows = wait_for(lambda: path.is_file() and list(csv.reader(path.open())), what="the downloaded CSV")
    assert rows[0] == ["id", "formula", "axis"]
    assert [r[0] for r in rows[1:]] == expected and {r[1] for r in rows[1:]} == {"H2O"}
    assert all(r[2].startswith("axis ") for r in rows[1:])

    # a reload (the URL alone) lists the same selection; an id opens its molecule
    driver.get(driver.current_url)
    again = wait_for(lambda: driver.execute_script(LISTED_JS), what="the selection's list after a reload")
    assert again["count"] == listed["count"] and again["ids"] == listed["ids"]
    # and its outline on the map, through the lasso's vertices (as the URL keeps them)
    outline = np.array(wait_for(lambda: driver.execute_script(OUTLINE_JS), what="the selection's outline"))
    kept = parse_selection(sel)
    expected_outline = driver.execute_script(
        TO_PIXEL_JS, [[x * MAP_SCALE, y * MAP_SCALE] for x, y in zip(kept.xs, kept.ys, strict=True)]
    )
    assert np.allclose(outline, expected_outline, atol=1.5)
    driver.find_element(By.CSS_SELECTOR, "#selection-panel tr.selection-row button").click()
    wait_for(lambda: text_of(driver, "molecule-id") == expected[0], what=f"molecule {expected[0]} to open")
    # clearing it takes it off the page and out of the URL
    driver.find_element(By.ID, "selection-clear").click()
    wait_for(lambda: _url_sel(driver) is None and driver.execute_script(LISTED_JS) is None, what="a cleared selection")


def test_a_box_selection_lists_the_molecules_in_the_box_as_points_and_as_an_image(driver, waters_url):
    url, data_dir, mode = waters_url
    graph = open_map(driver, url + "/?dataset=waters&view=map")
    assert map_drawn(driver)["mode"] == mode
    md = load_map_data(data_dir, "waters")
    driver.find_element(By.CSS_SELECTOR, "#orientation-map .map-mode[data-mode='box']").click()
    # dragged from the lower right to the upper left: the URL's box is ordered all the same
    corners = [[1.4, -1.0], [-0.5, 0.4]]
    pixels = np.array(driver.execute_script(TO_PIXEL_JS, [[x * MAP_SCALE, y * MAP_SCALE] for x, y in corners]))
    chain = ActionChains(driver).move_to_element_with_offset(graph, int(pixels[0, 0]), int(pixels[0, 1]))
    chain.click_and_hold()
    for t in (0.5, 1.0):
        p = pixels[0] + (pixels[1] - pixels[0]) * t
        chain.move_to_element_with_offset(graph, int(p[0]), int(p[1]))
    chain.release().perform()
    sel = wait_for(lambda: _url_sel(driver), what="the box in the URL")
    assert sel.startswith("box:")
    x0, x1, y0, y1 = parse_selection(sel).bounds
    assert [x0, x1, y0, y1] == pytest.approx([-0.5, 1.4, -1.0, 0.4], abs=0.05)
    expected = _inside(md, sel)  # the map's own points in the URL's box
    assert 0 < len(expected) < N_MOLECULES
    listed = wait_for(lambda: driver.execute_script(LISTED_JS), what="the box's list")
    assert listed["count"].startswith(f"{len(expected)} molecule") and listed["ids"] == expected[:20]
    assert "sel=box%3A" in listed["csv"]
