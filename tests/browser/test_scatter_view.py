"""The scatter view in real headless Chromium: a stored property against a coordinate of one axis, with the
controls in the URL; a click on a point opens its molecule; above the point budget it is an image."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import httpx
import numpy as np
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from orientscope.services.cache import get_view
from tests.browser.chrome import PageRequests, map_drawn, serve
from tests.browser.pages import settle, text_of, wait_for

pytestmark = pytest.mark.browser
CHOOSER_JS = """
const c = document.querySelector('#orientation-map .map-chooser');
if (!c || c.dataset.page === undefined) return null;
return {page: Number(c.dataset.page), total: Number(c.dataset.total),
        rows: Array.from(c.querySelectorAll('tr.chooser-row')).map(r => Array.from(r.cells).map(td => td.textContent))};
"""

PLOT_JS = """
const gd = document.querySelector('#orientation-map .js-plotly-plot');
if (!gd || !gd.layout || !gd.layout.meta || !gd.layout.meta.map) return null;
const t = (gd._fullData || [])[0] || {};
return {meta: gd.layout.meta.map, yType: gd._fullLayout.yaxis.type, images: (gd.layout.images || []).length,
        x: t.customdata ? Array.from(t.x) : null, y: t.customdata ? Array.from(t.y) : null,
        ids: t.customdata ? Array.from(t.customdata) : null};
"""
TIP_JS = """
const t = document.querySelector('#orientation-map .map-tooltip');
return t && !t.hidden && t.textContent ? {text: t.textContent, molecule: t.dataset.molecule} : null;
"""
CARD_JS = """
const c = document.querySelector('#orientation-map .hover-preview');
if (!c || c.hidden || !c.dataset.molecule) return null;
const img = c.querySelector('img');
return {molecule: c.dataset.molecule, caption: c.textContent, drawn: !!img && img.complete && img.naturalWidth > 0};
"""
HOME_JS = "return document.querySelector('#orientation-map .js-plotly-plot').layout.meta.map.home;"
ZOOM_JS = """
const gd = document.querySelector('#orientation-map .js-plotly-plot');
Plotly.relayout(gd, {'xaxis.range': arguments[0], 'yaxis.range': arguments[1]});
"""
IMAGE_JS = """
const im = (document.querySelector('#orientation-map .js-plotly-plot').layout.images || [])[0];
return im ? {source: im.source, x: im.x, sizey: im.sizey} : null;
"""
# The image plotly.js draws (it loads a URL source and draws it as a data URL).
DRAWN_IMAGE_JS = """
const el = document.querySelector('#orientation-map .js-plotly-plot image');
return el && (el.getAttribute('href') || el.getAttribute('xlink:href'));
"""
# Offset from the plot's centre (as ActionChains offsets are) of a data point (x, y).
TO_PIXEL_JS = """
const gd = document.querySelector('#orientation-map .js-plotly-plot');
const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
return [xa._offset + xa.l2p(arguments[0]) - r.width / 2, ya._offset + ya.l2p(ya.d2l(arguments[1])) - r.height / 2];
"""


def _drawn(driver, view_x: str):
    """The plot once the scatter of ``view_x`` (its x title) is on screen."""
    if not map_drawn(driver):
        return None
    plot = driver.execute_script(PLOT_JS)
    return plot if plot and plot["meta"]["view"] == "scatter" and plot["meta"]["x"] == view_x else None


def _query(driver) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(driver.current_url).query).items()}


def test_the_scatter_draws_the_chosen_property_against_the_axis_and_a_click_opens_a_molecule(
    driver, base_url, qm9_store
):
    driver.get(base_url + "/?dataset=qm9&view=scatter&prop=zpve&xaxis=1&coord=lat&yscale=log")
    plot = wait_for(lambda: _drawn(driver, "axis 1 latitude (°)"), what="the scatter")
    assert plot["meta"]["mode"] == "points" and plot["meta"]["y"].startswith("zpve") and plot["yType"] == "log"
    view = get_view(qm9_store, "qm9")
    row_of = {str(m): i for i, m in enumerate(view.ids)}
    rows = np.array([row_of[m] for m in plot["ids"]])
    zpve = view.property_values[:, view.property_names.index("zpve")]
    assert len(rows) == len(view.ids)
    assert np.allclose(plot["x"], np.degrees(np.arcsin(view.rotations[rows, 0, 2])))
    assert np.allclose(plot["y"], zpve[rows])
    assert driver.find_element(By.ID, "scatter-controls").is_displayed()

    # a click on the point with the largest value (alone at the top) opens its molecule
    top = int(np.argmax(plot["y"]))
    graph = driver.find_element(By.CSS_SELECTOR, "#orientation-map .js-plotly-plot")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", graph)
    settle(driver)
    spot = driver.execute_script(TO_PIXEL_JS, plot["x"][top], plot["y"][top])
    wanted = plot["ids"][top]
    # a rest there names it and shows its card with its picture, as the map's hover does
    ActionChains(driver).move_to_element_with_offset(graph, int(spot[0]), int(spot[1])).perform()
    tip = wait_for(lambda: driver.execute_script(TIP_JS), what="the hover text")
    card = wait_for(lambda: driver.execute_script(CARD_JS), what="the hover card")
    assert tip["molecule"] == card["molecule"] == wanted and card["drawn"] and "zpve" not in card["caption"]
    ActionChains(driver).click().perform()
    wait_for(lambda: text_of(driver, "molecule-id") == wanted, what=f"molecule {wanted} to open")
    wait_for(lambda: _query(driver).get("molecule") == wanted, what="the URL to name it")

    # another axis: drawn, and in the URL
    driver.find_element(By.CSS_SELECTOR, "#scatter-axis input[value='3']").click()
    plot = wait_for(lambda: _drawn(driver, "axis 3 latitude (°)"), what="the scatter of axis 3")
    assert np.allclose(plot["x"], np.degrees(np.arcsin(view.rotations[rows, 2, 2])))
    query = wait_for(lambda: (q := _query(driver)).get("xaxis") == "3" and q, what="the axis in the URL")
    assert query["view"] == "scatter" and query["prop"] == "zpve" and query["yscale"] == "log"


def test_above_the_point_budget_the_scatter_is_an_image_and_a_bad_log_scale_says_why(driver, qm9_store):
    with serve(qm9_store, env={"ORIENTSCOPE_MAP_POINT_BUDGET": "300"}) as url:
        driver.get(url + "/?dataset=qm9&view=scatter&prop=u0&xaxis=2&coord=z&yscale=log")
        plot = wait_for(lambda: _drawn(driver, "axis 2 z component"), what="the scatter's image")
        assert plot["meta"]["mode"] == "image" and plot["images"] == 1 and plot["yType"] == "linear"
        # the scale control shows what is drawn, and says why it is not the log scale the URL asked for
        assert driver.find_element(By.CSS_SELECTOR, "#scatter-scale input:checked").get_attribute("value") == "linear"
        hint = text_of(driver, "scatter-scale-hint")
        assert "a log scale is not possible" in hint and "u0 ≤ 0" in hint
        # a click on the image opens the molecule nearest to it (the one with the highest u0, alone at the top)
        view = get_view(qm9_store, "qm9")
        u0 = view.property_values[:, view.property_names.index("u0")]
        top = int(np.argmax(u0))
        graph = driver.find_element(By.CSS_SELECTOR, "#orientation-map .js-plotly-plot")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", graph)
        settle(driver)
        spot = driver.execute_script(TO_PIXEL_JS, float(view.rotations[top, 1, 2]), float(u0[top]))
        wanted = str(view.ids[top])
        ActionChains(driver).move_to_element_with_offset(graph, int(spot[0]), int(spot[1])).perform()
        tip = wait_for(lambda: driver.execute_script(TIP_JS), what="the hover text")  # names what a click opens
        assert tip["molecule"] == wanted and tip["text"].startswith(f"molecule {wanted} · ")
        ActionChains(driver).click().perform()
        wait_for(lambda: text_of(driver, "molecule-id") == wanted, what=f"molecule {wanted} to open")
        # a zoom draws the region's own image at the plot's size
        home = driver.execute_script(HOME_JS)
        box = [home[0] + 0.25 * (home[1] - home[0]), home[0] + 0.5 * (home[1] - home[0]),
               home[2] + 0.5 * (home[3] - home[2]), home[2] + 0.75 * (home[3] - home[2])]  # fmt: skip
        before = driver.execute_script(DRAWN_IMAGE_JS)
        driver.execute_script(ZOOM_JS, box[:2], box[2:])
        image = wait_for(lambda: (i := driver.execute_script(IMAGE_JS)) and "x0=" in i["source"] and i, what="zoom")
        assert image["x"] == pytest.approx(box[0]) and image["sizey"] == pytest.approx(box[3] - box[2])
        query = parse_qs(urlparse(image["source"]).query)
        assert float(query["x1"][0]) == pytest.approx(box[1]) and int(query["width"][0]) > 100
        wait_for(lambda: driver.execute_script(DRAWN_IMAGE_JS) not in (None, before), what="the region's image drawn")
        region = httpx.get(url + image["source"], timeout=60)
        assert region.status_code == 200 and region.content.startswith(b"\x89PNG")


COLOR_JS = """
const gd = document.querySelector('#orientation-map .js-plotly-plot');
if (!gd || !gd._fullData || !gd.layout.meta || !gd.layout.meta.map) return null;
const t = gd._fullData[0], m = t.marker || {};
const bars = gd._fullData.filter(d => d.marker && d.marker.showscale).map(d => d.marker.colorbar.title.text);
return {meta: gd.layout.meta.map, ids: t.customdata ? Array.from(t.customdata) : null,
        color: Array.isArray(m.color) || ArrayBuffer.isView(m.color) ? Array.from(m.color) : m.color,
        bars: bars, legend: gd._fullData.filter(d => d.showlegend).map(d => d.name),
        image: (gd.layout.images || [])[0] ? gd.layout.images[0].source : null,
        colourDisabled: document.getElementById('color-by').hasAttribute('disabled')};
"""


def _png_pixels(data_url: str) -> np.ndarray:
    """(k, 4) RGBA of a data-URL PNG's drawn (non-transparent) pixels."""
    import base64
    from io import BytesIO

    from PIL import Image

    rgba = np.asarray(Image.open(BytesIO(base64.b64decode(data_url.split(",", 1)[1]))).convert("RGBA"))
    return rgba[rgba[..., 3] > 0]


def test_the_scatter_is_coloured_by_the_colour_by_choice_in_both_modes(driver, base_url, qm9_store):
    view = get_view(qm9_store, "qm9")
    u0 = view.property_values[:, view.property_names.index("u0")]
    row_of = {str(m): i for i, m in enumerate(view.ids)}
    driver.get(base_url + "/?dataset=qm9&view=scatter&prop=zpve&color=prop:u0")
    plot = wait_for(lambda: (p := driver.execute_script(COLOR_JS)) and p["meta"]["view"] == "scatter" and p,
                    what="the scatter")  # fmt: skip
    # points: each marker's colour is its molecule's u0, explained by a colour bar named after it
    assert plot["meta"]["mode"] == "points" and isinstance(plot["color"], list)
    assert np.allclose(plot["color"], u0[[row_of[m] for m in plot["ids"]]], rtol=1e-6)
    assert plot["bars"] and plot["bars"][0].startswith("u0") and not plot["colourDisabled"]
    # by group: one colour per group class, with its legend
    driver.get(base_url + "/?dataset=qm9&view=scatter&prop=zpve&color=group&grouping=formula")
    plot = wait_for(lambda: (p := driver.execute_script(COLOR_JS)) and p["meta"]["view"] == "scatter"
                    and p["meta"]["color"] == "formula" and p, what="the scatter by group")  # fmt: skip
    assert len(set(plot["color"])) > 1 and len(plot["legend"]) > 1 and not plot["bars"]
    with serve(qm9_store, env={"ORIENTSCOPE_MAP_POINT_BUDGET": "300"}) as url:
        driver.get(url + "/?dataset=qm9&view=scatter&prop=zpve&color=prop:u0")
        plot = wait_for(lambda: (p := driver.execute_script(COLOR_JS)) and p["meta"]["view"] == "scatter" and p,
                        what="the scatter's image")  # fmt: skip
        # image: the mean u0 per pixel on the map's Cividis scale (its dark blue to yellow), and its colour bar
        assert plot["meta"]["mode"] == "image" and plot["bars"] and plot["bars"][0].startswith("u0")
        pixels = _png_pixels(plot["image"])
        assert (pixels[:, :3] == (0xFE, 0xE8, 0x38)).all(axis=1).any()  # the top of the scale
        assert (pixels[:, :3] == (0x00, 0x22, 0x4E)).all(axis=1).any()  # and its bottom
        # a zoom's image is coloured the same way
        home = driver.execute_script(HOME_JS)
        driver.execute_script(ZOOM_JS, home[:2], [home[2], (home[2] + home[3]) / 2])
        image = wait_for(lambda: (i := driver.execute_script(IMAGE_JS)) and "x0=" in i["source"] and i, what="zoom")
        assert parse_qs(urlparse(image["source"]).query)["color"] == ["prop:u0"]
        zoomed = httpx.get(url + image["source"], timeout=60)
        assert zoomed.status_code == 200


N_STACKED = 50


@pytest.fixture(scope="module")
def stacked_scatter(tmp_path_factory):
    """A set of 50 identical waters (one pose, one value of property ``e``) and 40 others, served with a
    point budget of 10: its scatter is an image, where the 50 share one pixel."""
    from dataclasses import replace

    import pandas as pd

    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.store.shards import save_sharded
    from tests.molecules import waters

    rng = np.random.default_rng(1)
    waters = waters(N_STACKED, 40)
    e = np.concatenate([np.full(N_STACKED, 1.0), rng.uniform(0.0, 2.0, 40)])
    data_dir = tmp_path_factory.mktemp("stacked-scatter")
    save_sharded(data_dir, "waters", replace(waters, properties=pd.DataFrame({"e": e})), name="Waters",
                 source="constructed")  # fmt: skip
    precompute(data_dir, "waters", make_params(seed=0), stages=["frames", "statistics", "chemistry"])
    with serve(data_dir, env={"ORIENTSCOPE_MAP_POINT_BUDGET": "10"}) as url:
        yield url, data_dir


def test_the_scatter_images_hover_names_formula_colour_and_how_many_share_the_pixel(driver, stacked_scatter):
    url, data_dir = stacked_scatter
    driver.get(url + "/?dataset=waters&view=scatter&prop=e&xaxis=1&coord=lat&color=prop:e")
    plot = wait_for(lambda: _drawn(driver, "axis 1 latitude (°)"), what="the scatter's image")
    assert plot["meta"]["mode"] == "image"
    view = get_view(data_dir, "waters")
    stacked = [i for i, m in enumerate(view.ids) if str(m).startswith("stack-")]
    lat = np.degrees(np.arcsin(view.rotations[stacked, 0, 2]))
    assert np.allclose(lat, lat[0])  # truly stacked
    graph = driver.find_element(By.CSS_SELECTOR, "#orientation-map .js-plotly-plot")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", graph)
    settle(driver)
    spot = driver.execute_script(TO_PIXEL_JS, float(lat[0]), 1.0)
    ActionChains(driver).move_to_element_with_offset(graph, int(spot[0]), int(spot[1])).perform()
    tip = wait_for(lambda: driver.execute_script(TIP_JS), what="the hover text")
    first = str(view.ids[min(stacked)])  # the map's tie rule: the molecule first in the dataset
    assert tip["molecule"] == first
    assert tip["text"] == f"molecule {first} · H2O · e: 1 · {N_STACKED} molecules share this pixel (click to choose)"
    # a click there opens the chooser of the molecules sharing the pixel, the one the hover named first
    ActionChains(driver).click().perform()
    chooser = wait_for(lambda: driver.execute_script(CHOOSER_JS), what="the chooser")
    assert chooser["total"] == N_STACKED and chooser["rows"][0][0] == first
    assert all(r[1] == "H2O" and r[2] == "1" for r in chooser["rows"])  # formula and the coloured value
    pick = chooser["rows"][3][0]
    driver.find_element(
        By.CSS_SELECTOR, f"#orientation-map .map-chooser tr.chooser-row[data-id='{pick}'] button"
    ).click()
    wait_for(lambda: text_of(driver, "molecule-id") == pick, what=f"molecule {pick} to open")


RANGES_JS = """
const gd = document.querySelector('#orientation-map .js-plotly-plot');
return [gd._fullLayout.xaxis.range.slice(), gd._fullLayout.yaxis.range.slice()];
"""


def test_the_scatter_opens_on_what_suits_the_property_and_its_controls_show_what_is_drawn(driver, base_url, qm9_store):
    """No property or scale asked: the first property (rot_a), on the scale that suits it (the small store's rot_a
    spans two decades: log), shown by the controls; a click on "linear" draws it linear."""
    driver.get(base_url + "/?dataset=qm9&view=scatter")
    plot = wait_for(lambda: _drawn(driver, "axis 1 latitude (°)"), what="the scatter")
    view = get_view(qm9_store, "qm9")
    rot_a = view.property_values[:, view.property_names.index("rot_a")]
    assert plot["meta"]["y"].startswith("rot_a") and plot["yType"] == "log" and plot["meta"]["query"]["scale"] == "log"
    assert driver.find_element(By.CSS_SELECTOR, "#scatter-prop").text.startswith("rot_a")
    assert driver.find_element(By.CSS_SELECTOR, "#scatter-scale input:checked").get_attribute("value") == "log"
    (_, _), (y0, y1) = driver.execute_script(RANGES_JS)
    assert y0 < np.log10(rot_a.min()) and np.log10(rot_a.max()) < y1  # every value on screen
    driver.find_element(By.CSS_SELECTOR, "#scatter-scale input[value='linear']").click()
    plot = wait_for(lambda: (p := _drawn(driver, "axis 1 latitude (°)")) and p["yType"] == "linear" and p,
                    what="the linear scatter")  # fmt: skip
    assert driver.find_element(By.CSS_SELECTOR, "#scatter-scale input:checked").get_attribute("value") == "linear"
    wait_for(lambda: _query(driver).get("yscale") == "linear", what="the scale in the URL")
    assert text_of(driver, "scatter-scale-hint") == ""


def test_a_click_on_empty_space_asks_only_the_scatters_route_and_its_hint_goes_with_the_view(driver, base_url):
    requests = PageRequests(driver)
    driver.get(base_url + "/?dataset=qm9&view=scatter&prop=zpve")
    plot = wait_for(lambda: _drawn(driver, "axis 1 latitude (°)"), what="the scatter")
    graph = driver.find_element(By.CSS_SELECTOR, "#orientation-map .js-plotly-plot")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", graph)
    settle(driver)
    (x0, x1), (y0, y1) = driver.execute_script(RANGES_JS)
    # the plot's top left corner, 3 % in: no point within 20 px there (the nearest, checked on screen)
    corner = driver.execute_script(TO_PIXEL_JS, x0 + 0.03 * (x1 - x0), y1 - 0.03 * (y1 - y0))
    pixels = np.array([driver.execute_script(TO_PIXEL_JS, x, y) for x, y in zip(plot["x"], plot["y"], strict=True)])
    assert np.hypot(*(pixels - corner).T).min() > 20
    ActionChains(driver).move_to_element_with_offset(graph, int(corner[0]), int(corner[1])).click().perform()
    wait_for(lambda: "No molecule within 5 px" in text_of(driver, "map-hint"), what="the hint")
    asked = requests.urls()
    assert any("/scatter/nearest?" in u for u in asked) and not any("/map/nearest" in u for u in asked)
    # no 422 in the console: the autouse console check (tests/browser/conftest.py) fails the test on one
    driver.find_element(By.CSS_SELECTOR, "#view-mode input[value='map']").click()
    view = "const h = document.getElementById('orientation-map')._mapHandle; return h && h.paint().view"
    wait_for(lambda: driver.execute_script(view) == "map" and map_drawn(driver), what="the map")  # map_draw.js
    assert text_of(driver, "map-hint") == ""  # the click it spoke of was on another view


def test_a_scatter_zoom_goes_into_the_url_and_a_reload_or_the_back_button_restores_it(driver, base_url):
    driver.get(base_url + "/?dataset=qm9&view=scatter&prop=zpve")
    wait_for(lambda: _drawn(driver, "axis 1 latitude (°)"), what="the scatter")
    settle(driver)
    first = ([-30.0, 10.0], [0.1, 0.2])
    driver.execute_script(ZOOM_JS, *first)
    zoom = wait_for(lambda: _query(driver).get("zoom"), what="the zoom in the URL")
    assert [float(v) for v in zoom.split(",")] == pytest.approx([*first[0], *first[1]])
    zoomed_url = driver.current_url
    second = ([0.0, 20.0], [0.12, 0.15])
    driver.execute_script(ZOOM_JS, *second)
    wait_for(lambda: _query(driver).get("zoom") not in (None, zoom), what="the second zoom in the URL")
    driver.back()
    wait_for(lambda: _query(driver).get("zoom") == zoom, what="the URL of the first zoom")
    ranges = wait_for(lambda: (r := driver.execute_script(RANGES_JS)) and r[0] == pytest.approx(first[0]) and r,
                      what="the first zoom drawn again")  # fmt: skip
    assert ranges[1] == pytest.approx(first[1])
    driver.get(zoomed_url)  # a shared link opens on its zoom
    wait_for(lambda: _drawn(driver, "axis 1 latitude (°)"), what="the scatter")
    ranges = driver.execute_script(RANGES_JS)
    assert ranges[0] == pytest.approx(first[0]) and ranges[1] == pytest.approx(first[1])
