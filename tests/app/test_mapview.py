"""Map layers and click lookups on a real precomputed store: a clicked (trace, point) maps back to its molecule."""

import numpy as np
import pytest

from app.figures import POINTS_START, map_units
from app.mapview import clicked_row, map_layers
from app.state import ViewState


@pytest.mark.parametrize("color", ["axis", "prop:mu", "group"])
def test_every_drawn_point_maps_back_to_the_molecule_drawn_there(qm9_store, color):
    from app.mapfigure import map_figure

    state = ViewState(dataset="qm9", view="map", color=color)
    fig, layers = map_figure(qm9_store, state)
    md = layers.md
    points = [(c, t) for c, t in enumerate(fig.data) if t.meta and t.meta.get("kind") == "points"]
    assert sum(t.meta["n_points"] for _, t in points) == 3 * md.n_molecules
    for curve, trace in points:
        for point in (0, len(trace.x) // 2, len(trace.x) - 1):
            row = clicked_row(layers, "map", curve, point)
            # the molecule's axis that sits at the clicked pixel is one of its three axes
            xs, ys = map_units(md.x[row]), map_units(md.y[row])
            assert any(xs[a] == trace.x[point] and ys[a] == trace.y[point] for a in range(3))


def test_clicks_off_the_points_select_nothing(qm9_store):
    layers = map_layers(qm9_store, ViewState(dataset="qm9"))
    assert clicked_row(layers, "map", 0, 0) is None  # the outline
    assert clicked_row(layers, "map", POINTS_START, 10**9) is None
    assert clicked_row(layers, "map", POINTS_START + len(layers.split.members), 0) is None  # no SMARTS
    assert clicked_row(layers, "sphere", 1, 0) == int(layers.rows[0])


def test_smarts_highlight_clicks_map_to_matching_molecules(qm9_store):
    layers = map_layers(qm9_store, ViewState(dataset="qm9", smarts="C=O"))
    curve = POINTS_START + len(layers.split.members)
    rows = {clicked_row(layers, "map", curve, p) for p in range(min(20, layers.highlight_rows.size))}
    assert rows and rows <= set(np.asarray(layers.highlight_rows).tolist())


def test_views_that_differ_only_in_what_the_map_ignores_share_layers(qm9_store):
    by_axis = [map_layers(qm9_store, ViewState(dataset="qm9", grouping=g)) for g in ("formula", "scaffold")]
    assert by_axis[0] is by_axis[1]  # the grouping only matters for group colours and filters
    by_group = [
        map_layers(qm9_store, ViewState(dataset="qm9", color="group", grouping=g)) for g in ("formula", "scaffold")
    ]
    assert by_group[0] is not by_group[1]
    density = [map_layers(qm9_store, ViewState(dataset="qm9", view="density", color=c)) for c in ("axis", "score")]
    assert density[0] is density[1]
