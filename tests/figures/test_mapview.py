"""Map layers and click lookups on a real precomputed store: a clicked (trace, point) maps back to its molecule."""

import numpy as np
import pytest

from orientscope.figures.mapview import map_layers
from orientscope.figures.plots import map_units
from orientscope.figures.state import ViewState


@pytest.mark.parametrize("color", ["axis", "prop:mu", "group"])
def test_every_axis_point_is_drawn_once_whatever_the_colour(qm9_store, color):
    from orientscope.figures.mapfigure import map_figure

    state = ViewState(dataset="qm9", view="map", color=color)
    fig, layers = map_figure(qm9_store, state)  # 1200 points, below the budget: the points are drawn
    md = layers.md
    points = [t for t in fig.data if t.meta and t.meta.get("kind") == "points"]
    assert sum(t.meta["n_points"] for t in points) == md.points()[0].size == layers.n_points  # the defined axes
    drawn = sorted((int(x), int(y)) for t in points for x, y in zip(t.x, t.y, strict=True))
    ok = ~np.isnan(md.x.ravel())
    shown = sorted(zip(map_units(md.x.ravel()[ok]).tolist(), map_units(md.y.ravel()[ok]).tolist(), strict=True))
    assert drawn == shown  # (hover and clicks name a point's molecule through the server: map/nearest)


def test_the_sphere_draws_a_stated_sample(qm9_store, monkeypatch):
    import orientscope.figures.mapview as mapview

    monkeypatch.setattr(mapview, "SPHERE_MAX_POINTS", 500)
    layers = mapview._compute(qm9_store, ViewState(dataset="qm9", view="sphere"))
    assert (
        layers.rows.size == 500 and f"random sample of 500 of {layers.md.points()[0].size:,} points" in layers.notes[-1]
    )


def test_views_that_differ_only_in_what_the_map_ignores_share_layers(qm9_store):
    by_axis = [map_layers(qm9_store, ViewState(dataset="qm9", grouping=g)) for g in ("formula", "scaffold")]
    assert by_axis[0] is by_axis[1]  # the grouping only matters for group colours and filters
    by_group = [
        map_layers(qm9_store, ViewState(dataset="qm9", view="map", color="group", grouping=g))
        for g in ("formula", "scaffold")
    ]
    assert by_group[0] is not by_group[1]
    density = [
        map_layers(qm9_store, ViewState(dataset="qm9", view="density", color=c, grouping=g))
        for c, g in (("axis", "formula"), ("score", "formula"), ("group", "formula"), ("group", "scaffold"))
    ]
    assert all(d is density[0] for d in density)  # a density is not coloured: neither colour nor grouping counts
