"""The dashboard in real headless Chromium against the small QM9 store."""

from __future__ import annotations

import re
import urllib.request

import numpy as np
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from orientscope.figures.plots import map_units
from orientscope.services.cache import get_view
from orientscope.services.map_data import load_map_data
from orientscope.services.molecules import match_smarts
from tests.browser.chrome import (
    PageRequests,
    make_driver,
    map_traces,
    quit_driver,
    serve,
)
from tests.browser.pages import choose, isolated_point_pixel, open_page, settle, text_of, viewer_molecule, wait_for

pytestmark = pytest.mark.browser


def point_traces(driver, with_arrays=False) -> list[dict]:
    """The drawn map's point traces (one per colour slice), in trace order."""
    return [t for t in map_traces(driver, with_arrays) or [] if t["kind"] == "points"]


def n_points(driver) -> int:
    return sum(t["n"] for t in point_traces(driver))


def molecules_at(md, x, y) -> list[int]:
    """Rows of the molecules with an axis drawn at map-unit point (x, y), found from the coordinates alone."""
    drawn = np.isfinite(md.x)  # an axis the molecule's symmetry leaves undefined is not drawn
    mx, my = (np.where(drawn, np.asarray(v, np.float64), 0.0) for v in (md.x, md.y))
    hits = drawn & (map_units(mx) == x) & (map_units(my) == y)
    return sorted(set(np.flatnonzero(hits.any(axis=1)).tolist()))


def test_page_loads_without_console_errors_or_foreign_requests(driver, base_url):
    requests = PageRequests(driver)
    # 3Dmol.js is not in the page: it loads (locally) once the map is drawn and the page is idle
    with urllib.request.urlopen(base_url + "/", timeout=30) as r:
        assert not re.search(r"<script[^>]*src=[^>]*3Dmol", r.read().decode())
    open_page(driver, base_url + "/")
    assert requests.urls(), "the performance log recorded no requests"
    wait_for(lambda: driver.execute_script("return typeof $3Dmol !== 'undefined'"), what="3Dmol.js loaded")
    settle(driver)  # the last thing loading sets off (3Dmol.js, when the page is idle) is done
    assert requests.off_origin(base_url) == []
    assert any("/assets/3Dmol-min.js" in u for u in requests.urls())
    assert text_of(driver, "verdict-badge") and "What to do" in text_of(driver, "verdict")


def test_a_shared_link_opens_fully_drawn_without_any_callback(driver, base_url, qm9_store):
    """The layout request carries the page's view (the page sends its query: app/compat.py), so nothing waits on callbacks."""
    mol = str(load_map_data(qm9_store, "qm9").ids[11])
    requests = PageRequests(driver)
    open_page(driver, f"{base_url}/?dataset=qm9&molecule={mol}&color=group&view=map")
    assert text_of(driver, "molecule-id") == mol
    wait_for(lambda: viewer_molecule(driver) == mol, what="the viewer")
    assert text_of(driver, "color-by").strip() == "group"
    settle(driver)  # a callback the load set off would be pending, or answered, by now
    urls = requests.urls()
    assert any(u.endswith("/_dash-layout") for u in urls)
    assert [u for u in urls if "_dash-update-component" in u] == []


def test_map_holds_one_point_per_defined_axis_per_molecule(driver, base_url, qm9_store):
    open_page(driver, base_url + "/?dataset=qm9&view=map")
    md = load_map_data(qm9_store, "qm9")
    # Three per molecule, but none for methane (no orientation) and one for the oblate top (one axis).
    assert n_points(driver) == md.points()[0].size < 3 * md.n_molecules
    drawn = driver.execute_script(
        "const svg = document.querySelector('#orientation-map .map-svg');"
        "return [!!svg.querySelector('path.outline'), !!svg.querySelector('path.graticule'),"
        " svg.querySelectorAll('g.stars text').length]"
    )
    assert drawn[:2] == [True, True] and drawn[2] > 0  # outline, graticule and the reference orientation's stars


def test_clicking_a_point_selects_that_molecule(driver, base_url, qm9_store):
    open_page(driver, base_url + "/?dataset=qm9&view=map")
    target = isolated_point_pixel(driver)
    assert target["gap"] > 4
    md = load_map_data(qm9_store, "qm9")
    rows = molecules_at(md, target["x"], target["y"])
    assert len(rows) == 1
    expected = str(md.ids[rows[0]])
    graph = driver.find_element(By.CSS_SELECTOR, "#orientation-map .map-stage")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", graph)
    target = isolated_point_pixel(driver)
    ActionChains(driver).move_to_element_with_offset(graph, int(round(target["dx"])), int(round(target["dy"]))).pause(
        0.3
    ).click().perform()
    wait_for(lambda: text_of(driver, "molecule-id") == expected, what=f"molecule-id {expected}")
    wait_for(lambda: viewer_molecule(driver) == expected, what="the viewer to show the molecule")
    view = get_view(qm9_store, "qm9")
    n_atoms = int(view.n_atoms[view.row_of(expected)])
    atoms = driver.execute_script("return document.getElementById('molecule-viewer').dataset.atoms")
    assert atoms == f"{n_atoms},{n_atoms}"  # stored and canonical pose, same molecule
    assert f"molecule={expected}" in driver.current_url


def test_url_restores_the_selection_and_neighbour_click_selects(driver, base_url, qm9_store):
    mol = str(load_map_data(qm9_store, "qm9").ids[7])
    open_page(driver, f"{base_url}/?dataset=qm9&molecule={mol}&view=map")
    wait_for(lambda: text_of(driver, "molecule-id") == mol, what="restored molecule-id")
    wait_for(lambda: viewer_molecule(driver) == mol, what="restored viewer")
    wait_for(
        lambda: len(driver.find_elements(By.CSS_SELECTOR, "#orientation-map svg.selection-ring circle")) == 3,
        what="a ring around each of the molecule's three axis points",
    )
    button = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#molecule-extra .link-button"), what="neighbours")[
        0
    ]
    other = button.text.split(" · ")[0]
    button.click()
    wait_for(lambda: text_of(driver, "molecule-id") == other, what="neighbour selection")


def test_url_restores_colour_and_axes(driver, base_url, qm9_store):
    """A shared link with a property colour keeps it: the options arrive with the value."""
    open_page(driver, f"{base_url}/?dataset=qm9&color=prop%3Amu&axes=12&view=map")
    md = load_map_data(qm9_store, "qm9")
    two = md.points((1, 2))[0].size  # axes 1 and 2 of every molecule that defines them
    wait_for(lambda: n_points(driver) == two, what="two axes per molecule")
    legend = driver.execute_script("return document.getElementById('orientation-map')._mapHandle.paint().legend")
    assert legend["colorbar"]["title"].startswith("mu") or "mu" in legend["colorbar"]["title"]  # a colour bar
    assert driver.find_element(By.CSS_SELECTOR, "#orientation-map .colorbar").is_displayed()
    assert len({t["color"] for t in point_traces(driver, True)}) > 2  # the property's colour bins
    assert "property: mu" in text_of(driver, "color-by")
    assert "color=prop%3Amu" in driver.current_url and "axes=12" in driver.current_url


def test_unknown_dataset_and_molecule_get_friendly_messages(driver, base_url):
    driver.get(f"{base_url}/?dataset=nope&molecule=zzz")
    msg = wait_for(lambda: text_of(driver, "messages"), what="a message")
    assert "Unknown dataset 'nope'" in msg
    assert "Traceback" not in driver.page_source
    driver.get(f"{base_url}/?dataset=qm9&molecule=zzz")
    msg = wait_for(lambda: text_of(driver, "messages"), what="a message")
    assert "Unknown molecule 'zzz'" in msg


def test_colour_by_and_group_filter_change_the_figure(driver, base_url, qm9_store):
    open_page(driver, base_url + "/?dataset=qm9&view=map")
    before = [t["color"] for t in point_traces(driver, True)]
    choose(driver, "color-by", "property: mu")
    wait_for(lambda: "color=prop" in driver.current_url, what="colour in the URL")
    after = wait_for(
        lambda: (t := point_traces(driver, True)) and [p["color"] for p in t] != before and t, what="recoloured map"
    )
    view = get_view(qm9_store, "qm9")
    mu = view.property_values[:, view.property_names.index("mu")]
    md = load_map_data(qm9_store, "qm9")
    mu_by_row = mu[[view.row_of(str(i)) for i in md.ids]]
    assert sum(t["n"] for t in after) == md.points()[0].size
    binned = [t for t in after if t["meta"]["range"]]
    assert len({t["color"] for t in binned}) >= 5  # a colour scale, not one colour
    for trace in binned:  # every point sits in the bin of its own molecule's mu
        lo = -np.inf if trace["meta"]["range"][0] is None else trace["meta"]["range"][0]
        hi = np.inf if trace["meta"]["range"][1] is None else trace["meta"]["range"][1]
        for x, y in list(zip(trace["x"], trace["y"], strict=True))[::25]:
            values = mu_by_row[molecules_at(md, x, y)]
            assert np.any((values >= lo - 1e-4) & (values <= hi + 1e-4)), (x, y, values, lo, hi)
    # group filter through the groups table: the map keeps only that group's molecules
    labels = get_view(qm9_store, "qm9")
    from orientscope.services.molecules import group_ids

    formulas = group_ids(labels)["formula"].astype(str)
    names, counts = np.unique(formulas, return_counts=True)
    largest = names[np.argmax(counts)]
    radio = wait_for(
        lambda: driver.find_elements(By.CSS_SELECTOR, "#groups-table input[type=radio]"), what="group rows"
    )
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", radio[0])
    radio[0].click()
    wait_for(lambda: n_points(driver) == 3 * counts.max(), what="filtered map")
    assert "group=" + largest in driver.current_url
    wait_for(lambda: viewer_molecule(driver, "group-viewer") == f"group:{largest}", what="group members viewer")


def test_smarts_highlights_matching_molecules(driver, base_url, qm9_store):
    open_page(driver, base_url + "/?dataset=qm9&view=map")
    n_match = int(match_smarts(get_view(qm9_store, "qm9"), "C=O").mask.sum())
    assert 0 < n_match < load_map_data(qm9_store, "qm9").n_molecules
    box = driver.find_element(By.ID, "smarts")
    box.clear()
    box.send_keys("C=O", Keys.ENTER)
    wait_for(
        lambda: next(t for t in map_traces(driver) if t["kind"] == "highlight")["n"] == 3 * n_match,
        what="highlighted matches",
    )
    assert "smarts=C%3DO" in driver.current_url


def test_export_buttons_produce_files(driver, base_url, download_dir):
    open_page(driver, base_url + "/?dataset=qm9&view=density")
    for button, suffix in (("export-png", ".png"), ("export-svg", ".svg"), ("download-report-btn", ".html")):
        driver.find_element(By.ID, button).click()
        path = wait_for(
            lambda s=suffix: [p for p in download_dir.iterdir() if p.name.endswith(s)], what=f"a {suffix} file"
        )[0]
        wait_for(lambda p=path: p.stat().st_size > 1000, what=f"{path.name} written")
    html = next(p for p in download_dir.iterdir() if p.suffix == ".html").read_text()
    assert "<script src=" not in html.replace('<script src="data:', "")  # plotly.js is inline: opens offline
    assert "id='verdict'" in html and "0 = uniform" in html
    assert next(p for p in download_dir.iterdir() if p.suffix == ".png").read_bytes()[:4] == b"\x89PNG"


def test_read_only_mode_hides_uploads(qm9_store, base_url, driver):
    driver.get(base_url + "/")
    wait_for(lambda: driver.find_element(By.ID, "upload-link").is_displayed(), what="upload link (normal mode)")
    with serve(qm9_store, read_only=True) as url:
        ro = make_driver()
        try:
            ro.get(url + "/")
            wait_for(lambda: ro.find_elements(By.ID, "upload-link"), what="the page")
            assert not ro.find_element(By.ID, "upload-link").is_displayed()
            assert "read-only" in ro.find_element(By.TAG_NAME, "header").text
        finally:
            quit_driver(ro)
