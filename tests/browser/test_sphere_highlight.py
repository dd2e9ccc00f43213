"""A SMARTS highlight on the 3D sphere in real headless Chromium: as on the flat map, the molecules that do
not match are drawn grey and dimmed, the matches over them in the highlight colour, and no colour bar of the
colouring set aside stays up; the static first paint draws the same."""

from __future__ import annotations

import numpy as np
import pytest

from orientscope.app.state import parse_query
from orientscope.core.palette import HIGHLIGHT, OTHER_GREY
from orientscope.figures.mapview import map_layers
from orientscope.figures.plots import MUTED_OPACITY
from tests.browser.chrome import map_drawn
from tests.browser.pages import wait_for

pytestmark = pytest.mark.browser

SPHERE_JS = """
const gd = document.querySelector('#orientation-map .js-plotly-plot');
if (!gd || !gd._fullData || !gd.layout.meta || !gd.layout.meta.map || gd.layout.meta.map.view !== 'sphere') return null;
return gd._fullData.map(t => ({kind: t.meta && t.meta.kind, type: t.type, opacity: t.opacity, n: (t.x || []).length,
  color: t.marker && (typeof t.marker.color === 'string' ? t.marker.color : 'per point'),
  scale: !!(t.marker && t.marker.showscale), legend: t.showlegend ? t.name : null,
  text: t.text ? Array.from(t.text) : null}));
"""
QUERY = "?dataset=qm9&view=sphere&color=prop:u0&smarts=C%3DO"


def test_a_highlight_greys_the_sphere_under_its_matches_with_no_stale_colour_bar(driver, base_url, qm9_store):
    driver.get(base_url + "/" + QUERY)
    wait_for(lambda: map_drawn(driver), what="the sphere")
    traces = wait_for(lambda: driver.execute_script(SPHERE_JS), what="the sphere's traces")
    layers = map_layers(qm9_store, parse_query(QUERY)[0])
    kinds = [t["kind"] for t in traces]
    points, match = traces[kinds.index("points")], traces[kinds.index("highlight")]
    assert kinds.index("highlight") == kinds.index("points") + 1  # drawn after, over them
    assert points["color"] == OTHER_GREY.lower() or points["color"].lower() == OTHER_GREY.lower()
    assert points["opacity"] == pytest.approx(MUTED_OPACITY) and points["n"] == layers.rows.size
    expected = layers.md.ids[layers.rows][layers.sphere_highlight].astype(str).tolist()
    assert 0 < match["n"] == len(expected) < points["n"] and match["text"] == expected
    assert match["color"].lower() == HIGHLIGHT.lower()
    assert not any(t["scale"] for t in traces)  # the u0 colour bar is set aside with the colours
    assert {"SMARTS match", "no SMARTS match (grey)"} <= {t["legend"] for t in traces}


def test_the_first_paint_of_a_highlighted_sphere_draws_the_matches_over_grey_dots(without_scripts, base_url):
    without_scripts.get(base_url + "/" + QUERY)
    fills = wait_for(
        lambda: without_scripts.execute_script(
            "return Array.from(document.querySelectorAll('#orientation-map[data-first-paint] .dots circle'))"
            ".map(c => c.getAttribute('fill'))"
        ),
        what="the static sphere",
    )
    first_match = fills.index(HIGHLIGHT)
    assert set(fills[:first_match]) == {OTHER_GREY} and set(fills[first_match:]) == {HIGHLIGHT}
    assert np.mean([f == HIGHLIGHT for f in fills]) < 1
