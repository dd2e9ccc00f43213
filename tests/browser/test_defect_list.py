"""What a first-time user met on the map's pages, in real headless Chromium: a SMARTS highlight of a third
of the set, the aligned-group grid, the groups table's sort, colour by group, the sphere's selection ring
and the compare view's two columns."""

from __future__ import annotations

import numpy as np
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from orientscope.app.panels import HIGHLIGHT_NOTE
from orientscope.core.palette import GROUP_COLORS, OTHER_GREY, UNGROUPED_GREY
from orientscope.figures.plots import NO_MATCH
from orientscope.services.cache import get_view
from orientscope.services.datasets import dataset_summary
from orientscope.services.grouping import group_label_map
from orientscope.services.groups import list_groups
from orientscope.services.map_data import load_map_data
from orientscope.services.molecules import group_ids, match_smarts
from tests.browser.chrome import dash_sphere, map_traces, serve, sphere_screen
from tests.browser.pages import open_page, settle, text_of, viewer_molecule, wait_for

pytestmark = pytest.mark.browser


# The drawn map as map_draw.js holds it: its points layers (kind, colour, marker size) and legend, and its image.
FIGURE_JS = """
const h = document.getElementById('orientation-map')._mapHandle;
if (!h || h.paint().view !== 'map') return null;
const p = h.paint();
return {data: p.layers.map(l => ({kind: l.kind, name: null, showlegend: false,
                                  marker: {size: l.size, color: l.color}, x: null, y: null, z: null})),
        legend: p.legend, image: p.image ? p.image.source : null};
"""

# The image's pixels: (opaque-ish grey, highlight-coloured) counts.
IMAGE_PIXELS_JS = """
const done = arguments[arguments.length - 1];
const img = new Image();
img.onload = () => {
  const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
  const ctx = c.getContext('2d'); ctx.drawImage(img, 0, 0);
  const px = ctx.getImageData(0, 0, c.width, c.height).data;
  let grey = 0, orange = 0;
  for (let i = 0; i < px.length; i += 4) {
    if (px[i + 3] === 0) continue;
    const [r, g, b] = [px[i], px[i + 1], px[i + 2]];
    if (Math.abs(r - g) < 8 && Math.abs(g - b) < 8) grey += 1;
    else if (r > 150 && r > g + 40 && g > b) orange += 1;
  }
  done([grey, orange]);
};
img.src = arguments[0];
"""


# The selection ring's centres on Dash's sphere, px from its canvas's top left (map_component.js's overlay).
SPHERE_RING_JS = """
const h = document.querySelector('#orientation-map:not([data-first-paint])'), c = h && h.querySelector('canvas');
if (!c) return null;
const b = c.getBoundingClientRect(), o = h.getBoundingClientRect();
return Array.from(h.querySelectorAll('svg.selection-ring circle'), e =>
  [Number(e.getAttribute('cx')) - (b.left - o.left), Number(e.getAttribute('cy')) - (b.top - o.top)]);
"""


def _figure(driver) -> dict:
    return driver.execute_script(FIGURE_JS)


@pytest.mark.parametrize("server", ["base_url", "image_url"])
def test_a_smarts_highlight_sets_the_colour_bar_aside_and_keeps_the_other_molecules_visible(
    driver, request, qm9_store, server
):
    n_match = int(match_smarts(get_view(qm9_store, "qm9"), "C=O").mask.sum())
    open_page(driver, request.getfixturevalue(server) + "/?dataset=qm9&view=map&color=prop%3Amu&smarts=C%3DO")
    fig = wait_for(
        lambda: (f := _figure(driver)) and "SMARTS match" in [i["label"] for i in f["legend"]["items"]] and f,
        what="the highlighted map",
    )
    kinds = [t["kind"] for t in fig["data"]]
    assert fig["legend"]["colorbar"] is None  # the mu colour bar no longer explains a map drawn in grey and orange
    legend = [item["label"] for item in fig["legend"]["items"]]
    assert NO_MATCH in legend and "SMARTS match" in legend
    if fig["image"] is None:  # points: every molecule in muted grey beneath, the matches on top
        points = [t for t in fig["data"] if t["kind"] == "points"]
        assert points and all(t["marker"]["color"] == OTHER_GREY for t in points)
        drawn = map_traces(driver)  # the drawn lengths (the figure's arrays are typed)
        assert next(t for t in drawn if t["kind"] == "highlight")["n"] == 3 * n_match
        assert kinds.index("highlight") > max(i for i, k in enumerate(kinds) if k == "points")
    else:  # image: the other molecules in grey, the matches by their share of each pixel
        grey, orange = driver.execute_async_script(IMAGE_PIXELS_JS, fig["image"])
        assert grey > 0 and orange > 0, (grey, orange)
    assert HIGHLIGHT_NOTE in text_of(driver, "map-notes")


def test_a_click_on_a_cell_of_the_group_grid_opens_that_molecule(driver, base_url, qm9_store):
    formulas = group_ids(get_view(qm9_store, "qm9"))["formula"].astype(str)
    names, counts = np.unique(formulas, return_counts=True)
    largest = str(names[np.argmax(counts)])
    open_page(driver, f"{base_url}/?dataset=qm9&view=map&grouping=formula&group={largest}")
    wait_for(lambda: viewer_molecule(driver, "group-viewer") == f"group:{largest}", what="the group grid")
    captions = driver.find_elements(By.CSS_SELECTOR, "#group-viewer .viewer-caption[data-molecule]")
    assert len(captions) == min(8, counts.max())
    formula = group_label_map(get_view(qm9_store, "qm9"), "formula")[largest]
    for cap in captions:  # the formula first, then the id
        assert cap.text == f"{formula} · {cap.get_attribute('data-molecule')}", cap.text
    target = next(c for c in captions if c.get_attribute("data-cell") == "0,1")
    chosen = target.get_attribute("data-molecule")
    overlay = driver.find_element(By.CSS_SELECTOR, "#group-viewer .viewer-captions")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", overlay)
    box = overlay.rect
    rows = (len(captions) + 3) // 4
    # the centre of cell (row 0, column 1) of 4 columns, as an offset from the overlay's centre
    dx, dy = int(box["width"] * (1.5 / 4 - 0.5)), int(box["height"] * (0.5 / rows - 0.5))
    ActionChains(driver).move_to_element_with_offset(overlay, dx, dy).click().perform()
    wait_for(lambda: text_of(driver, "molecule-id") == chosen, what="the molecule panel")
    wait_for(lambda: f"molecule={chosen}" in driver.current_url, what="the URL to name it")
    wait_for(lambda: viewer_molecule(driver) == chosen, what="its viewer")
    wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#orientation-map svg.selection-ring circle"), what="ring")


def test_the_groups_table_sorts_every_group_not_only_the_largest(driver, base_url, qm9_store):
    listing = list_groups(qm9_store, "qm9", "cluster", 10**9)
    assert listing["total"] > 200  # more groups than the table lists
    open_page(driver, f"{base_url}/?dataset=qm9&grouping=cluster")
    header = wait_for(
        lambda: driver.find_element(By.CSS_SELECTOR, "#groups-table th[data-dash-column=label] .column-header--sort"),
        what="the group column's sort button",
    )
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", header)
    header.click()
    summary = wait_for(
        lambda: (t := text_of(driver, "groups-summary")) and "sorted by name" in t and t, what="the sorted summary"
    )
    labels = sorted((g["label"] for g in listing["groups"]), key=str.lower, reverse="descending" in summary)
    shown = wait_for(
        lambda: (
            (
                cells := driver.execute_script(
                    "return Array.from(document.querySelectorAll('#groups-table td[data-dash-column=label]'))"
                    ".map(e => e.innerText.trim())"
                )
            )
            and cells[0] == labels[0]
            and cells
        ),
        what="the first page sorted over all groups",
    )
    assert shown == labels[: len(shown)]
    largest = {g["label"] for g in listing["groups"][:200]}
    assert set(shown) - largest  # groups beyond the 200 largest come up


def test_colour_by_group_colours_every_group(driver, base_url, qm9_store):
    open_page(driver, f"{base_url}/?dataset=qm9&view=map&color=group&grouping=formula")
    traces = wait_for(lambda: [t for t in map_traces(driver, True) or [] if t["kind"] == "points"], what="the points")
    colors = [t["color"] if isinstance(t["color"], str) else t["color"][0] for t in traces]
    n_grey = sum(t["n"] for t, c in zip(traces, colors, strict=True) if c.upper() in (OTHER_GREY, UNGROUPED_GREY))
    assert n_grey == 0  # every molecule has a formula: none is drawn grey
    assert {c.upper() for c in colors} == {c.upper() for c in GROUP_COLORS}
    legend = driver.execute_script(
        "return Array.from(document.querySelectorAll('#orientation-map .legend-label')).map(e => e.textContent)"
    )
    assert any("smaller groups" in t for t in legend), legend


def test_the_sphere_rings_the_selected_molecule(driver, base_url, qm9_store):
    md = load_map_data(qm9_store, "qm9")
    mol = str(md.ids[7])
    open_page(driver, f"{base_url}/?dataset=qm9&view=sphere&molecule={mol}")
    cam, _ = dash_sphere(driver)

    def ringed_at(molecule: str):  # the ring's three circles where the camera puts the molecule's axes 1..3
        want = sphere_screen(cam, md.vectors(np.full(3, md.row_of(molecule)), np.arange(1, 4)))[0]
        got = driver.execute_script(SPHERE_RING_JS)
        return got and len(got) == 3 and np.abs(np.array(got) - want).max() < 0.01

    wait_for(lambda: ringed_at(mol), what="the selection ring on the sphere")
    # another molecule moves the ring
    other = str(md.ids[11])
    driver.execute_script("window.dash_clientside.set_props('selected', {data: arguments[0]})", other)
    wait_for(lambda: ringed_at(other), what="the ring on the new molecule")


SLOTS_JS = """
return ['a', 'b'].map(s => Array.from(document.querySelectorAll('#compare-panel-' + s + ' > .compare-slot'))
  .map(e => { const r = e.getBoundingClientRect(); return [Math.round(r.top), Math.round(r.height)]; }));
"""

MEASURES_JS = """
return ['a', 'b'].map(s => Array.from(document.querySelectorAll('#compare-panel-' + s + ' table.figures'))
  .map(t => [t.className, Array.from(t.querySelectorAll('tbody tr')).map(r => r.cells[0].innerText.trim())]));
"""


def test_compare_columns_line_up_and_say_the_kl_difference(driver, base_url, qm9_store):
    report = dataset_summary(qm9_store, "qm9")
    driver.get(base_url + "/?dataset=qm9&compare=qm9%3A%3Acontrol")
    wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#compare-panel-b table.regression"), what="panel B")
    settle(driver)
    a, b = driver.execute_script(SLOTS_JS)
    assert len(a) == len(b) == 8 and a == b  # slot by slot: the same top and height on both sides
    tables_a, tables_b = driver.execute_script(MEASURES_JS)
    assert [t[0] for t in tables_a] == [t[0] for t in tables_b]
    for (_, rows_a), (_, rows_b) in zip(tables_a, tables_b, strict=True):
        assert [r.removesuffix(" *") for r in rows_a] == rows_b  # the same measures, row by row
    panel_b = text_of(driver, "compare-panel-b")
    assert "a gain is expected" not in panel_b  # the control's gains are about 0: no lab-frame note
    kl, control_kl = report["kl"]["value"], report["control"]["kl"]["value"]
    assert f"KL difference, A − B: {kl - control_kl:+.2f}" in text_of(driver, "compare-panel-a")


@pytest.fixture(scope="module")
def three_url(tmp_path_factory):
    """Water, methane and formaldehyde in one small set."""
    from orientscope.pipeline.ingest import ingest_file
    from tests.molecules import WATER_METHANE_FORMALDEHYDE_XYZ

    data_dir = tmp_path_factory.mktemp("three") / "data"
    path = data_dir.parent / "three.xyz"
    path.write_text(WATER_METHANE_FORMALDEHYDE_XYZ)
    dataset = ingest_file(data_dir, path, "three small")["id"]
    with serve(data_dir) as url:
        yield url, dataset


# Per scene of the molecule viewer: its cell (page px), the atoms' and the arrow labels' points on screen
# (page px) and px per ångström.
VIEWER_GEOMETRY_JS = """
const el = document.getElementById('molecule-viewer'), spec = JSON.parse(el._shownKey);
const box = el.querySelector('.viewer-canvas').getBoundingClientRect();
const w = box.width / spec.cols, h = box.height / spec.rows;
const out = [];
el._grid.forEach((row, r) => row.forEach((v, c) => {
  const scene = spec.scenes[r * spec.cols + c];
  const at = p => { const s = v.modelToScreen({x: p[0], y: p[1], z: p[2]}); return [s.x, s.y]; };
  const o = at([0, 0, 0]), y = at([0, 1, 0]);
  out.push({cell: [box.left + window.scrollX + c * w, box.top + window.scrollY + r * h, w, h],
            atoms: v.selectedAtoms({}).map(a => at([a.x, a.y, a.z])),
            labels: scene.arrows.map(a => at(a.label_at)),
            px_per_angstrom: Math.hypot(y[0] - o[0], y[1] - o[1]) / 0.816497});
}));
return out;
"""


def test_the_molecule_viewer_fits_water_with_its_axis_labels_clear_of_the_atoms_and_the_edges(driver, three_url):
    url, dataset = three_url
    driver.get(f"{url}/?dataset={dataset}&view=map&molecule=water")
    wait_for(lambda: viewer_molecule(driver) == "water", what="the water molecule drawn")
    scenes = driver.execute_script(VIEWER_GEOMETRY_JS)
    assert len(scenes) == 2  # the stored and the canonical pose
    for scene in scenes:
        left, top, width, height = scene["cell"]
        atoms, labels = np.array(scene["atoms"]), np.array(scene["labels"])
        # the molecule, as drawn (hydrogen spheres of 0.26 Å at its ends), fills a good part of its viewer
        # (it was about 20 px of 280). A third and more: the view is fitted for any turn (issue 40), so the
        # sphere that holds the axis labels, about 1.6 Å from water's centre, fits the cell, not this view's outline
        drawn = np.ptp(atoms, axis=0).max() + 2 * 0.26 * scene["px_per_angstrom"]
        assert drawn >= 0.35 * height, (np.ptp(atoms, axis=0), scene["px_per_angstrom"], height)
        # each label lies inside its cell, clear of the edges and of the caption strip at the foot
        margin = 8
        assert (labels[:, 0] >= left + margin).all() and (labels[:, 0] <= left + width - margin).all(), labels
        assert (labels[:, 1] >= top + margin).all() and (labels[:, 1] <= top + height - 20).all(), labels
        # and off the atoms: farther from each atom's centre than its drawn sphere (at most 0.45 Å)
        gaps = np.linalg.norm(labels[:, None, :] - atoms[None, :, :], axis=2)
        assert gaps.min() > 0.45 * scene["px_per_angstrom"], (gaps.min(), scene["px_per_angstrom"])
