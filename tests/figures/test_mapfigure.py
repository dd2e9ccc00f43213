"""Map figures from view states, and the JSON cache that serves repeated views."""

import numpy as np

from orientscope.app.density_paint import payload_array
from orientscope.figures.mapfigure import map_figure, map_figure_json, selected_ring, selected_xy
from orientscope.figures.mapview import map_layers
from orientscope.figures.plots import MAP_SCALE, NO_MATCH, TRACE
from orientscope.figures.state import ViewState
from orientscope.science.sphere import mollweide_vectors
from orientscope.services.map_raster import Viewport


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


def test_selected_ring_marks_the_molecules_shown_axes_in_every_view(qm9_store):
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
    sphere = ViewState(dataset="qm9", view="sphere")  # on the sphere: the unit vectors of the shown axes, the same
    # points as the map's (it once rang the row before's third axis and the first two, axes counted from 0)
    vectors = np.array(selected_ring(layers.md, sphere, mol))
    np.testing.assert_allclose(mollweide_vectors(x, y), vectors, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    first_third = ViewState(dataset="qm9", view="sphere", axes="13")
    np.testing.assert_allclose(selected_ring(layers.md, first_third, mol), vectors[[0, 2]], atol=1e-5)
    assert selected_ring(layers.md, st, None) == [] and selected_ring(layers.md, st, "no-such-molecule") == []


def test_density_and_sphere_views(qm9_store):
    density, layers = map_figure_json(qm9_store, ViewState(dataset="qm9", view="density"))
    meta = density["layout"]["meta"]["map"]
    drawn = int(layers.md.axis_counts[1:].sum())  # methane has no orientation: not drawn
    assert meta["mode"] == "image" and meta["drawn"] == drawn  # server-binned counts
    sphere, layers = map_figure(qm9_store, ViewState(dataset="qm9", view="sphere"))
    assert any(t.meta and t.meta.get("kind") == "points" for t in sphere.data)
    assert sphere.layout.xaxis.visible is False and sphere.layout.yaxis.visible is False  # no 2D axes around it
    payload, _ = map_figure_json(qm9_store, ViewState(dataset="qm9", view="sphere"))
    assert payload["layout"]["meta"]["map"]["drawn"] == drawn  # 1195 points < the sample
    one_axis, layers = map_figure_json(qm9_store, ViewState(dataset="qm9", view="density", axes="1", group="C7H10O2"))
    assert 0 < one_axis["layout"]["meta"]["map"]["drawn"] == layers.n_molecules < layers.md.n_molecules
    layers = map_layers(qm9_store, ViewState(dataset="qm9"))
    assert selected_xy(layers.md, "123", "no-such-molecule") is None and selected_xy(layers.md, "123", None) is None


def test_above_the_budget_the_map_is_an_image_under_vector_overlays(qm9_store, monkeypatch):
    monkeypatch.setenv("ORIENTSCOPE_MAP_POINT_BUDGET", "1000")  # the store's map has 1195 points
    fig, layers = map_figure_json(qm9_store, ViewState(dataset="qm9", view="map", color="score"))
    meta = fig["layout"]["meta"]["map"]
    # every defined axis: methane has none, the oblate top one
    assert meta["mode"] == "image" and meta["drawn"] == int(layers.md.axis_counts[1:].sum())
    assert meta["n_points"] == layers.md.points()[0].size == layers.n_points
    image = fig["layout"]["images"][0]
    assert image["layer"] == "below" and image["xref"] == "x" and image["sizing"] == "stretch"
    kinds = [t["meta"]["kind"] for t in fig["data"]]
    assert kinds[:3] == ["outline", "graticule", "reference"] and "colorbar" in kinds and "points" not in kinds
    bar = next(t for t in fig["data"] if t["meta"]["kind"] == "colorbar")["marker"]
    assert bar["cmin"] < bar["cmax"] and bar["colorbar"]["title"]["text"] == "P(stored pose)"
    # one empty WebGL trace keeps the plot's WebGL context for a zoom to points (backend/figures/plots.py GL_KEEPALIVE)
    assert [t["type"] for t in fig["data"]].count("scattergl") == 1 and kinds[-1] == "webgl"
    legend, _ = map_figure_json(qm9_store, ViewState(dataset="qm9", view="map", smarts="C=O"))
    names = [t["name"] for t in legend["data"] if t["meta"]["kind"] in ("legend", "highlight")]
    assert names == [NO_MATCH, "SMARTS match"]  # the other molecules are grey: no axis colours to name
    assert "colorbar" not in [t["meta"]["kind"] for t in legend["data"]]


def test_a_small_region_is_drawn_as_its_points_at_its_own_ranges(qm9_store, monkeypatch):
    monkeypatch.setenv("ORIENTSCOPE_MAP_POINT_BUDGET", "1000")
    md = map_layers(qm9_store, ViewState(dataset="qm9")).md
    vp = Viewport(-0.5, 0.5, -0.3, 0.3, 400, 240)
    fig, _ = map_figure_json(qm9_store, ViewState(dataset="qm9", view="map"), vp)
    inside = (md.x >= vp.x0) & (md.x <= vp.x1) & (md.y >= vp.y0) & (md.y <= vp.y1)
    meta = fig["layout"]["meta"]["map"]
    assert meta["mode"] == "points" and meta["n_points"] == inside.sum() and meta["drawn"] == inside.any(axis=1).sum()
    traces = [t for t in fig["data"] if t["meta"]["kind"] == "points"]
    assert sum(t["meta"]["n_points"] for t in traces) == inside.sum()
    # hover is the server's pick (backend/services/map_pick.py), as a click's: plotly's own is off
    assert all(t["hoverinfo"] == "none" for t in traces)
    assert fig["layout"]["xaxis"]["range"] == [-0.5 * MAP_SCALE, 0.5 * MAP_SCALE]
    assert fig["layout"]["yaxis"]["range"] == [-0.3 * MAP_SCALE, 0.3 * MAP_SCALE]
    assert meta["viewport"] == {"x0": -0.5, "x1": 0.5, "y0": -0.3, "y1": 0.3, "width": 400, "height": 240}


def test_a_zoomed_density_bins_both_maps_anew_for_the_region_and_names_each_maps_table(qm9_store):
    """The density view of a region: the dataset's and its control's cells cover that region (finer than the
    whole map's there), at its ranges, on one colour scale; each figure's meta names its table (the control's
    hover and clicks pick on the control) and the viewport drawn (what a zoom asks the map-figure route for)."""
    from orientscope.figures.mapfigure import density_pair_json
    from orientscope.services.map_data import density_cells

    st = ViewState(dataset="qm9", view="density")
    (whole, _), layers = density_pair_json(qm9_store, st)
    vp = Viewport(-1.0, 1.0, -0.5, 0.5, 600, 300)
    (main, control), _ = density_pair_json(qm9_store, st, vp)
    nx, ny = density_cells(layers.n_points, (-1.0, 1.0, -0.5, 0.5))
    for figure, table in ((main, "original"), (control, "control")):
        heat = next(t for t in figure["data"] if t["type"] == "heatmap")
        xs = payload_array(heat["x"]) / MAP_SCALE
        assert xs.size == nx and -1.0 < xs.min() < xs.max() < 1.0  # the region's own cells
        assert figure["layout"]["xaxis"]["range"] == [-1.0 * MAP_SCALE, 1.0 * MAP_SCALE]
        meta = figure["layout"]["meta"]["map"]
        assert meta["query"]["table"] == table and meta["view"] == "density" and meta["state"] == st.map_state()
        assert meta["viewport"] == {"x0": -1.0, "x1": 1.0, "y0": -0.5, "y1": 0.5, "width": 600, "height": 300}
    assert main["data"][0]["zmax"] == control["data"][0]["zmax"]  # one colour scale
    whole_heat = next(t for t in whole["data"] if t["type"] == "heatmap")
    whole_cells = payload_array(whole_heat["x"]).size
    assert nx / 2.0 >= whole_cells / (4 * np.sqrt(2)) * 0.99  # at least as fine per unit of the map
    assert main["layout"]["meta"]["map"]["token"] != whole["layout"]["meta"]["map"]["token"]


def test_a_set_too_small_for_a_density_is_drawn_as_its_points_with_a_note(tmp_path):
    """Three molecules (nine points): no cell gets a density (it was blocks of 40x uniform), their points are
    drawn on both maps with the marker rule, and the note under the maps says why."""
    from orientscope.app.panels import map_outputs
    from orientscope.core.dataset import from_molecules
    from orientscope.figures.mapfigure import density_pair_json
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.services.map_markers import MAX_PX
    from orientscope.store.shards import save_sharded
    from tests.molecules import WATER, asymmetric

    save_sharded(tmp_path, "three", from_molecules([WATER, asymmetric(1), asymmetric(2)], ids=["w", "a", "b"]),
                 name="Three", source="constructed")  # fmt: skip
    precompute(tmp_path, "three", make_params(seed=0), stages=["frames", "statistics"])
    st = ViewState(dataset="three", view="density")
    (main, control), layers = density_pair_json(tmp_path, st)
    assert layers.n_points == 9
    for figure in (main, control):
        heat = next(t for t in figure["data"] if t["type"] == "heatmap")
        assert np.isnan(payload_array(heat["z"])).all()  # no cell has a density
        points = next(t for t in figure["data"] if (t.get("meta") or {}).get("kind") == "points")
        assert points["meta"]["n_points"] == 9 and points["marker"]["size"] == MAX_PX and points["marker"]["line"]
    notes = " ".join(str(n.children) for n in map_outputs(tmp_path, st).notes)
    assert "Too few points for a density (9; a density needs 227" in notes
