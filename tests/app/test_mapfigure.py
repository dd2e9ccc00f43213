"""Map figures from view states, and the JSON cache that serves repeated views."""

import numpy as np

from app.figures import MAP_SCALE, TRACE
from app.mapfigure import map_figure, map_figure_json, selected_xy
from app.mapview import map_layers
from app.state import ViewState


def test_cached_json_is_reused_for_the_same_view_and_rebuilt_for_another_selection(qm9_store):
    st = ViewState(dataset="qm9").map_state()
    first, layers = map_figure_json(qm9_store, st, None)
    again, _ = map_figure_json(qm9_store, st, None)
    assert again is first
    mol = str(layers.md.ids[3])
    chosen, _ = map_figure_json(qm9_store, st, mol)
    assert chosen is not first
    ring = chosen["data"][TRACE["selected"]]
    x, y = selected_xy(layers, mol)
    np.testing.assert_allclose(ring["x"], x * MAP_SCALE, rtol=1e-6)
    assert first["data"][TRACE["selected"]]["x"] == []
    # the payload is what the browser gets: point arrays as base64 int16, not lists
    points = [t for t in first["data"] if t.get("meta", {}).get("kind") == "points"]
    assert points and all(t["x"]["dtype"] == "i2" for t in points)
    outline = first["data"][TRACE["outline"]]
    assert outline["meta"]["kind"] == "outline" and outline["x"]["dtype"] == "f4"


def test_density_and_sphere_views(qm9_store):
    for view, kind in (("density", "density"), ("sphere", "points")):
        st = ViewState(dataset="qm9", view=view).map_state()
        fig, layers = map_figure(qm9_store, st, None)
        assert any(t.meta and t.meta.get("kind") == kind for t in fig.data)
    layers = map_layers(qm9_store, ViewState(dataset="qm9").map_state())
    assert selected_xy(layers, "no-such-molecule") is None and selected_xy(layers, None) is None
