"""The smaller defects of issue 40, in real headless Chromium: the angle histogram's ticks, label and footnote;
the Pin button only with a molecule; each control only in the views it applies to; the group search as typed;
the 3D viewer turned any way without cropping."""

from __future__ import annotations

import numpy as np
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from orientscope.services.map_data import load_map_data
from orientscope.services.molecules import molecule_detail
from tests.browser.chrome import serve
from tests.browser.pages import open_page, settle, text_of, viewer_molecule, wait_for

pytestmark = pytest.mark.browser


def _visible(driver, css: str) -> bool:
    return any(e.is_displayed() for e in driver.find_elements(By.CSS_SELECTOR, css))


def _histogram_svg(driver) -> dict:
    return driver.execute_script(
        """
        const gd = document.querySelector('#angle-histogram .js-plotly-plot');
        if (!gd || !gd.querySelector('.ytick')) return null;
        const svg = gd.querySelector('.main-svg').getBoundingClientRect();
        const ticks = Array.from(gd.querySelectorAll('.ytick text')).map(t => t.textContent);
        const notes = Array.from(gd.querySelectorAll('.annotation')).map(a => {
          const r = a.getBoundingClientRect();
          return {text: a.textContent, top: r.top, bottom: r.bottom, left: r.left, right: r.right};
        });
        const legend = Array.from(gd.querySelectorAll('.legendtext')).map(t => t.textContent);
        const ya = gd._fullLayout.yaxis;
        return {ticks, notes, legend, svg: {top: svg.top, bottom: svg.bottom, left: svg.left, right: svg.right},
                one: ya._offset + ya.l2p(0) + svg.top};
        """
    )


def test_the_angle_histogram_names_each_tick_labels_the_line_at_1_and_shows_its_footnote(driver, base_url):
    open_page(driver, base_url + "/?dataset=qm9&view=map")
    hist = driver.find_element(By.ID, "angle-histogram")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", hist)
    drawn = wait_for(lambda: _histogram_svg(driver), what="the histogram")
    ticks = [float(t.replace(",", "")) for t in drawn["ticks"]]
    assert len(set(drawn["ticks"])) == len(ticks) >= 3 and 1.0 in ticks and ticks == sorted(ticks)  # not 5, 1, 2, 5
    uniform = next(n for n in drawn["notes"] if n["text"].startswith("uniform"))
    assert uniform["top"] - 4 <= drawn["one"] <= uniform["bottom"] + 6  # on the line at 1, not near 10
    note = next(n for n in drawn["notes"] if "180°" in n["text"])
    assert drawn["svg"]["top"] <= note["top"] and note["bottom"] <= drawn["svg"]["bottom"]  # not cut off
    # its three lines (the bins, the band, the 180° peak) fit across the figure too
    assert "expect 5 angles" in note["text"] and "Haar-random" in note["text"]
    assert drawn["svg"]["left"] <= note["left"] and note["right"] <= drawn["svg"]["right"]
    assert "95 % band of uniform sets" in drawn["legend"] and "dataset" in drawn["legend"]


def test_the_pin_button_shows_once_a_molecule_is_open(driver, base_url, qm9_store):
    open_page(driver, base_url + "/?dataset=qm9&view=map")
    assert not _visible(driver, "#pin-molecule") and text_of(driver, "molecule-id") == ""
    mol = str(load_map_data(qm9_store, "qm9").ids[3])
    driver.execute_script("window.dash_clientside.set_props('selected', {data: arguments[0]})", mol)
    wait_for(lambda: text_of(driver, "molecule-id") == mol, what="the molecule")
    wait_for(lambda: _visible(driver, "#pin-molecule"), what="the Pin button")


def _view(driver, view: str) -> None:
    driver.find_element(By.CSS_SELECTOR, f'#view-mode input[value="{view}"]').click()
    # the default view (density) is left out of the URL
    wait_for(lambda: (f"view={view}" in driver.current_url) == (view != "density"), what=f"the {view} view")
    settle(driver)


def test_each_control_shows_only_in_the_views_it_applies_to(driver, base_url):
    open_page(driver, base_url + "/?dataset=qm9&view=map")
    shown = {
        "map": {"axes": True, "colour": True, "scatter": False},
        "scatter": {"axes": False, "colour": True, "scatter": True},
        "density": {"axes": True, "colour": False, "scatter": False},
        "sphere": {"axes": True, "colour": True, "scatter": False},
    }
    css = {"axes": ".axes-control", "colour": ".color-control", "scatter": "#scatter-controls"}
    for view, expected in shown.items():
        if view != "map":
            _view(driver, view)
        assert {name: _visible(driver, sel) for name, sel in css.items()} == expected, view


@pytest.fixture(scope="module")
def rings_url(rings_store):
    data_dir, dataset = rings_store
    with serve(data_dir) as url:
        yield url, dataset


def _popup(driver):
    """The open "only group" dropdown's list (a portal of the page, named by the button's aria-controls)."""
    return driver.find_element(By.ID, driver.find_element(By.ID, "group-filter").get_attribute("aria-controls"))


def _listed(driver) -> list[str]:
    return [e.text for e in _popup(driver).find_elements(By.CSS_SELECTOR, ".dash-dropdown-option") if e.text]


def test_the_group_search_takes_a_smiles_as_typed(driver, rings_url):
    url, dataset = rings_url
    open_page(driver, f"{url}/?dataset={dataset}&view=map&grouping=scaffold")
    driver.find_element(By.ID, "group-filter").click()
    wait_for(lambda: _listed(driver) == ["C1CCCCC1 (6)", "c1ccccc1 (4)"], what="the largest groups first")
    search = _popup(driver).find_element(By.CSS_SELECTOR, "input.dash-dropdown-search")
    search.send_keys("c1ccccc1")
    wait_for(lambda: _listed(driver) == ["c1ccccc1 (4)"], what="benzene alone, not cyclohexane first")
    search.send_keys(Keys.ENTER)
    wait_for(lambda: "group=" in driver.current_url, what="the group chosen")
    wait_for(lambda: text_of(driver, "group-filter") == "c1ccccc1 (4)", what="benzene's group chosen")


VIEWER_JS = """
// Every scene of the molecule viewer turned by ``arguments[0]`` (degrees about x, then y): each atom's and label's
// point on screen against its cell, and each item's distance from the scene's centre against the slab.
const el = document.getElementById('molecule-viewer'), spec = JSON.parse(el._shownKey);
const box = el.querySelector('.viewer-canvas').getBoundingClientRect();
const w = box.width / spec.cols, h = 280, left = box.left + scrollX, top = box.top + scrollY;  // page px, as 3Dmol
const out = [];
el._grid.forEach((row, r) => row.forEach((v, c) => {
  const scene = spec.scenes[r * spec.cols + c];
  v.rotate(arguments[0], 'x'); v.rotate(arguments[1], 'y'); v.render();
  const at = p => { const s = v.modelToScreen({x: p[0], y: p[1], z: p[2]}); return [s.x, s.y]; };
  const view = v.getView(), centre = [-view[0], -view[1], -view[2]];
  const pts = v.selectedAtoms({}).map(a => [a.x, a.y, a.z]).concat(scene.arrows.map(a => a.label_at));
  const o = at(centre), e = at([centre[0] + 1, centre[1], centre[2]]);
  out.push({cell: [left + c * w, top + r * h, w, h], screen: pts.map(at),
            reach: Math.max(...pts.map(p => Math.hypot(p[0] - centre[0], p[1] - centre[1], p[2] - centre[2]))),
            slab: v.getSlab ? v.getSlab() : {near: v.slabNear, far: v.slabFar}});
}));
return out;
"""


def test_a_turned_3d_viewer_keeps_the_whole_molecule_and_its_axes_in_view(driver, base_url, qm9_store):
    md = load_map_data(qm9_store, "qm9")
    # the molecule that reaches farthest from its centre: turned end-on or side-on, it must stay in view
    reach = []
    for mol in md.ids[:120]:
        pos = np.asarray(molecule_detail(qm9_store, "qm9", str(mol))["positions"])
        reach.append(np.linalg.norm(pos - pos.mean(axis=0), axis=1).max())
    mol = str(md.ids[int(np.argmax(reach))])
    open_page(driver, f"{base_url}/?dataset=qm9&view=map&molecule={mol}")
    wait_for(lambda: viewer_molecule(driver) == mol, what="the molecule drawn")
    viewer = driver.find_element(By.ID, "molecule-viewer")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", viewer)
    for angles in ((0, 0), (90, 0), (0, 90), (45, 60), (120, 200), (-70, 33)):
        for scene in driver.execute_script(VIEWER_JS, *angles):
            left, top, width, height = scene["cell"]
            pts = np.array(scene["screen"])
            assert (pts[:, 0] >= left).all() and (pts[:, 0] <= left + width).all(), (angles, scene)
            assert (pts[:, 1] >= top).all() and (pts[:, 1] <= top + height).all(), (angles, scene)
            slab = scene["slab"]  # 3Dmol's clipping planes, about the centre: nothing is cut away front or back
            assert -slab["near"] >= scene["reach"] and slab["far"] >= scene["reach"], (angles, scene)
