"""Map figures from view states, and the JSON cache that serves repeated views."""

import numpy as np

from app.figures import MAP_SCALE, TRACE
from app.mapfigure import map_figure, map_figure_json, selected_ring, selected_xy
from app.mapview import map_layers
from app.state import ViewState


def test_cached_json_is_reused_for_the_same_view(qm9_store):
    st = ViewState(dataset="qm9", view="map")
    first, layers = map_figure_json(qm9_store, st)
    again, _ = map_figure_json(qm9_store, st)
    assert again is first
    other, _ = map_figure_json(qm9_store, ViewState(dataset="qm9", view="map", color="group"))
    assert other is not first
    # the payload is what the browser gets: point arrays as base64 int16, not lists
    points = [t for t in first["data"] if t.get("meta", {}).get("kind") == "points"]
    assert points and all(t["x"]["dtype"] == "i2" for t in points)
    outline = first["data"][TRACE["outline"]]
    assert outline["meta"]["kind"] == "outline" and outline["x"]["dtype"] == "f4"


def test_selected_ring_marks_the_molecules_shown_axes_in_the_map_view_only(qm9_store):
    st = ViewState(dataset="qm9", view="map")
    layers = map_layers(qm9_store, st)
    mol = str(layers.md.ids[3])
    ring = np.array(selected_ring(layers.md, st, mol))
    x, y = selected_xy(layers.md, "123", mol)
    assert ring.shape == (3, 2)
    np.testing.assert_allclose(ring[:, 0], x * MAP_SCALE, rtol=1e-6)
    np.testing.assert_allclose(ring[:, 1], y * MAP_SCALE, rtol=1e-6)
    two = ViewState(dataset="qm9", view="map", axes="13")
    assert len(selected_ring(layers.md, two, mol)) == 2
    sphere = ViewState(dataset="qm9", view="sphere")
    assert selected_ring(layers.md, sphere, mol) == []
    assert selected_ring(layers.md, st, None) == [] and selected_ring(layers.md, st, "no-such-molecule") == []


def test_density_and_sphere_views(qm9_store):
    for view, kind in (("density", "density"), ("sphere", "points")):
        st = ViewState(dataset="qm9", view=view)
        fig, layers = map_figure(qm9_store, st)
        assert any(t.meta and t.meta.get("kind") == kind for t in fig.data)
    layers = map_layers(qm9_store, ViewState(dataset="qm9"))
    assert selected_xy(layers.md, "123", "no-such-molecule") is None and selected_xy(layers.md, "123", None) is None
