"""The density view in real headless Chromium: a zoom bins both maps anew for the region (not the whole map's
cells enlarged) and goes into the URL; the control map beside it follows the dataset's zoom and leads it, its
hover shows the card of the control molecule under the cursor and the dataset's density at the same place, and
a click on it opens that molecule; a set too small for a density is drawn as its points, before Dash too."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from orientscope.figures.plots import MAP_SCALE
from orientscope.services.map_data import density_cells, load_map_data
from tests.browser.chrome import map_drawn, serve
from tests.browser.pages import open_map, settle, text_of, wait_for

pytestmark = pytest.mark.browser
MAIN = "#orientation-map .map-drawing[data-table='original']"
CONTROL = "#orientation-map .map-drawing[data-table='control']"

# What a density map shows (map_draw.js): its view box's ranges (Mollweide units), its cells' centres, the paint's
# token, its table and its points.
SHOWN_JS = """
const d = document.querySelector(arguments[0]), host = document.getElementById('orientation-map');
const h = host && host._mapHandle;
if (!d || !h || h.paint().view !== 'density') return null;
const i = d.dataset.table === 'control' ? 1 : 0, m = h.paint().maps[i], g = m.grid, s = arguments[1];
const vb = d.querySelector('svg.map-svg').viewBox.baseVal;
const range = (a, da, n) => Array.from({length: n}, (_, k) => (a + (k + 0.5) * da) / s);
return {x: [vb.x / s, (vb.x + vb.width) / s], y: [-(vb.y + vb.height) / s, -vb.y / s],
        cx: range(g.x0, g.dx, g.nx), cy: range(g.y0, g.dy, g.ny),
        token: h.paint().hook.token + '/' + d.dataset.table, table: d.dataset.table === 'control' ? 'control' : 'original',
        points: m.points ? [m.points.x.length] : []};
"""
# Offsets from a drawing's centre (as ActionChains offsets are) of Mollweide points.
TO_PIXEL_JS = """
const stage = document.querySelector(arguments[0] + ' .map-stage'), vb = stage.querySelector('svg').viewBox.baseVal;
const r = stage.getBoundingClientRect(), s = arguments[2];
const cx = Math.floor(r.left + r.width / 2), cy = Math.floor(r.top + r.height / 2);  // WebDriver's centre
return arguments[1].map(p => [r.left + (p[0] * s - vb.x) / vb.width * r.width - cx,
                              r.top + (-p[1] * s - vb.y) / vb.height * r.height - cy]);
"""
CARD_JS = """
const c = document.querySelector(arguments[0] + ' .hover-preview');
return c && !c.hidden && c.dataset.molecule ? {molecule: c.dataset.molecule, axis: c.dataset.axis} : null;
"""
# A map's hover words: the map component's tooltip (a cell's density); the dataset's map's overlays are the host's.
LABEL_JS = """
const q = arguments[0] === 'main' ? '#orientation-map > .map-tooltip:not([hidden])'
  : arguments[0] + ' .map-tooltip:not([hidden])';
return Array.from(document.querySelectorAll(q)).map(e => e.textContent).join(' ');
"""


def _shown(driver, which: str) -> dict | None:
    return driver.execute_script(SHOWN_JS, which, MAP_SCALE)


def _both(driver) -> tuple[dict, dict]:
    return _shown(driver, MAIN), _shown(driver, CONTROL)


def _redrawn(driver, before: tuple[dict, dict]) -> tuple[dict, dict]:
    """Both maps once each shows a figure other than ``before``'s and the dataset's test hook is set."""

    def new():
        main, control = _both(driver)
        fresh = main and control and main["token"] != before[0]["token"] and control["token"] != before[1]["token"]
        return fresh and map_drawn(driver) and (main, control)

    return wait_for(new, what="both maps of the region")


def _drag_box(driver, which: str, corner, opposite) -> None:
    """Drag a zoom box on a drawing from Mollweide ``corner`` to ``opposite``."""
    stage = driver.find_element(By.CSS_SELECTOR, which + " .map-stage")
    a, b = driver.execute_script(TO_PIXEL_JS, which, [list(corner), list(opposite)], MAP_SCALE)
    ActionChains(driver).move_to_element_with_offset(
        stage, int(a[0]), int(a[1])
    ).click_and_hold().move_to_element_with_offset(
        stage, int((a[0] + b[0]) / 2), int((a[1] + b[1]) / 2)
    ).move_to_element_with_offset(stage, int(b[0]), int(b[1])).release().perform()


def _zoom(driver) -> str | None:
    return parse_qs(urlparse(driver.current_url).query).get("zoom", [None])[0]


def test_a_zoom_bins_both_maps_anew_the_control_leads_and_follows_and_the_url_keeps_it(driver, base_url, qm9_store):
    open_map(driver, base_url + "/?dataset=qm9&view=density")
    n_points = load_map_data(qm9_store, "qm9").n_molecules * 3
    whole = wait_for(lambda: all(_both(driver)) and _both(driver), what="both density maps")
    assert [m["table"] for m in whole] == ["original", "control"]
    whole_side = whole[0]["cx"][1] - whole[0]["cx"][0]
    # a zoom of the dataset's map (a zoom box dragged on it): both maps show the region, on cells binned for it
    before = whole
    _drag_box(driver, MAIN, (-0.8, 0.3), (0.6, -0.4))
    main, control = _redrawn(driver, before)
    assert control["x"] == pytest.approx(main["x"], abs=2e-3) and control["y"] == pytest.approx(main["y"], abs=2e-3)
    x0, x1 = main["x"]
    y0, y1 = main["y"]
    px = 5.9 / driver.execute_script(f'return document.querySelector("{MAIN} .map-stage").clientWidth')
    # a dragged box lands on whole pixels of the whole map: within a pixel of the corners asked for
    assert x0 <= -0.8 + px and x1 >= 0.6 - px and y0 <= -0.4 + px and y1 >= 0.3 - px
    nx, ny = density_cells(n_points, (x0, x1, y0, y1))
    assert len(main["cx"]) == nx and len(main["cy"]) == ny  # the region's own cells
    assert x0 < min(main["cx"]) and max(main["cx"]) < x1
    assert main["cx"][1] - main["cx"][0] < whole_side  # finer than the whole map's: re-aggregated, not enlarged
    first_zoom = wait_for(lambda: _zoom(driver), what="the zoom in the URL")
    assert [float(v) for v in first_zoom.split(",")] == pytest.approx([x0, x1, y0, y1], abs=1e-4)
    # a zoom of the control: the dataset's map follows, both binned anew
    first_x = main["x"]
    before = (main, control)
    _drag_box(driver, CONTROL, (0.1, 0.1), (0.5, -0.1))
    main, control = _redrawn(driver, before)
    zoomed_px = (first_x[1] - first_x[0]) / driver.execute_script(
        f'return document.querySelector("{MAIN} .map-stage").clientWidth'
    )
    assert main["x"] == pytest.approx(control["x"], abs=2e-3)
    assert main["x"][0] <= 0.1 + zoomed_px and main["x"][1] >= 0.5 - zoomed_px
    wait_for(lambda: _zoom(driver) not in (None, first_zoom), what="the second zoom in the URL")
    # the back button: the first zoom again, on both maps
    before = (main, control)
    driver.back()
    _redrawn(driver, before)

    def first_region():  # both maps redrawn may pass through the second region first: wait for the first's
        both = _both(driver)
        return all(both) and all(m["x"][0] <= x0 + 1e-3 for m in both) and both

    main, control = wait_for(first_region, what="the first zoom on both maps again")
    for shown in (main, control):  # the first region again, about its centre (the plot's aspect may widen it)
        assert shown["x"][0] <= x0 + 1e-3 and shown["x"][1] >= x1 - 1e-3 and shown["y"][0] <= y0 + 1e-3
        assert sum(shown["x"]) / 2 == pytest.approx((x0 + x1) / 2, abs=1e-3) and shown["x"][1] - shown["x"][0] < 2
    # a link with the zoom opens on it
    driver.get(base_url + f"/?dataset=qm9&view=density&zoom={first_zoom}")
    main = wait_for(lambda: map_drawn(driver) and (m := _shown(driver, MAIN)) and m["x"][1] - m["x"][0] < 3 and m,
                    what="the zoomed density on load")  # fmt: skip
    assert main["x"][0] <= x0 + 1e-3 and main["x"][1] >= x1 - 1e-3 and len(main["cx"]) == nx


def test_the_controls_hover_shows_its_molecule_and_the_datasets_density_and_a_click_opens_it(
    driver, base_url, qm9_store
):
    open_map(driver, base_url + "/?dataset=qm9&view=density")
    wait_for(lambda: _shown(driver, CONTROL), what="the control's map")
    graph = driver.find_element(By.CSS_SELECTOR, CONTROL + " .map-stage")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", graph)
    settle(driver)
    control = load_map_data(qm9_store, "qm9", "control")
    rng = np.random.default_rng(3)
    for row in rng.permutation(control.n_molecules)[:20]:
        spot = driver.execute_script(TO_PIXEL_JS, CONTROL, [[float(control.x[row, 0]), float(control.y[row, 0])]],
                                     MAP_SCALE)[0]  # fmt: skip
        if abs(spot[0]) > graph.size["width"] / 2 - 60 or abs(spot[1]) > graph.size["height"] / 2 - 60:
            continue
        ActionChains(driver).move_to_element_with_offset(graph, int(round(spot[0])), int(round(spot[1]))).perform()
        card = wait_for(lambda: driver.execute_script(CARD_JS, CONTROL), what="the control's card")
        # a control molecule with a point under the cursor (within 5 px), on the control's own positions
        picked = control.row_of(card["molecule"])
        where = np.array(driver.execute_script(
            TO_PIXEL_JS, CONTROL, [[float(control.x[picked, a]), float(control.y[picked, a])] for a in range(3)],
            MAP_SCALE))  # fmt: skip
        assert np.hypot(*(where - np.round(spot)).T).min() <= 5 + 1
        # the dataset's map names its density at the same place, beside the control's own label
        main_label = wait_for(lambda: driver.execute_script(LABEL_JS, "main"), what="the dataset's label")
        assert "uniform" in main_label and "uniform" in driver.execute_script(LABEL_JS, CONTROL)
        ActionChains(driver).click().perform()
        chosen = card["molecule"]
        chooser = f"{CONTROL} .map-chooser tr.chooser-row[data-id='{chosen}'] button"
        # a pixel several control molecules share opens the chooser, the hovered molecule first: chosen there
        how = wait_for(
            lambda c=chosen, q=chooser: (
                ("opened" if text_of(driver, "molecule-id") == c else None)
                or (driver.find_elements(By.CSS_SELECTOR, q) and "chooser")
            ),
            what="the control's molecule to open, or the chooser",
        )
        if how == "chooser":
            driver.find_element(By.CSS_SELECTOR, chooser).click()
        wait_for(lambda c=chosen: text_of(driver, "molecule-id") == c, what="the control's molecule to open")
        wait_for(lambda c=chosen: f"molecule={c}" in driver.current_url, what="the URL to name it")
        break
    else:
        pytest.fail("no control point inside the plot")


@pytest.fixture(scope="module")
def three_url(tmp_path_factory):
    """Three molecules (nine axis points): too few for a density."""
    from orientscope.core.dataset import from_molecules
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.store.shards import save_sharded
    from tests.molecules import WATER, asymmetric

    data_dir = tmp_path_factory.mktemp("three")
    save_sharded(data_dir, "three", from_molecules([WATER, asymmetric(1), asymmetric(2)], ids=["w", "a", "b"]),
                 name="Three", source="constructed")  # fmt: skip
    precompute(data_dir, "three", make_params(seed=0), stages=["frames", "statistics"])
    with serve(data_dir) as url:
        yield url


def test_three_molecules_are_drawn_as_their_points_not_blocks_of_density(driver, three_url):
    open_map(driver, three_url + "/?dataset=three&view=density")
    main, control = wait_for(lambda: all(_both(driver)) and _both(driver), what="both maps")
    assert main["points"] == [9] and control["points"] == [9]
    assert "Too few points for a density (9" in text_of(driver, "map-notes")


def test_three_molecules_first_paint_draws_their_points(without_scripts, three_url):
    driver = without_scripts
    driver.get(three_url + "/?dataset=three&view=density")
    wait_for(lambda: map_drawn(driver, first_paint=True), what="the first paint")
    drawn = driver.execute_script("""
const host = document.querySelector('#orientation-map[data-first-paint]'), p = host._mapHandle.paint();
const inked = [...host.querySelectorAll('canvas.map-points')].map(c => {
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
  for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; });
return [p.maps.map(m => m.points.x.length), inked];""")
    assert drawn[0] == [9, 9] and all(n > 9 for n in drawn[1])  # their points, drawn on both maps' canvases
