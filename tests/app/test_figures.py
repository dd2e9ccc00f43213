"""Pure figure builders: known arrays in, checked figure out (no browser, no store)."""

from __future__ import annotations

import json

import numpy as np
import plotly.io as pio
import pytest

from app.figures import (
    OKABE_ITO,
    TRACE,
    ColorSpec,
    angle_histogram_figure,
    density_map_figure,
    orientation_map_figure,
    sphere_figure,
)


def _axis_spec(n_points: int) -> ColorSpec:
    codes = (np.arange(n_points) % 3).astype(np.uint8)
    return ColorSpec("categorical", codes, ["a1", "a2", "a3"], OKABE_ITO[:3])


def test_map_has_fixed_trace_layout_and_all_points_as_float32():
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, 300).astype(np.float32)
    y = rng.uniform(-1, 1, 300).astype(np.float32)
    fig = orientation_map_figure(
        x,
        y,
        _axis_spec(300),
        reference_xy=(np.zeros(3), np.ones(3)),
        selected_xy=(np.array([0.5]), np.array([0.25])),
        n_molecules=100,
    )
    kinds = [t.meta["kind"] for t in fig.data]
    assert kinds[: len(TRACE)] == list(TRACE)
    assert kinds[len(TRACE) :] == ["legend"] * 3
    points = fig.data[TRACE["points"]]
    assert points.type == "scattergl"
    assert points.meta == {"kind": "points", "n_points": 300, "n_molecules": 100}
    np.testing.assert_array_equal(points.x, x)
    # numpy float32 goes to the browser as base64 f4, not as a JSON list of numbers
    payload = json.loads(pio.to_json(fig))
    assert payload["data"][TRACE["points"]]["x"]["dtype"] == "f4"
    assert list(fig.data[TRACE["selected"]].x) == [0.5]
    # few traces: outline, graticule, points, highlight, reference, selection, and the legend
    assert len(fig.data) == len(TRACE) + 3


def test_categorical_colorscale_maps_each_code_to_its_colour():
    fig = orientation_map_figure(np.zeros(6), np.zeros(6), _axis_spec(6))
    marker = fig.data[TRACE["points"]].marker
    assert marker.cmin == -0.5 and marker.cmax == 2.5
    # code c sits in the middle of the c-th constant step of the colour scale
    for code, colour in enumerate(OKABE_ITO[:3]):
        pos = (code + 0.5) / 3
        steps = [(lo[0], hi[0], lo[1]) for lo, hi in zip(marker.colorscale[::2], marker.colorscale[1::2], strict=True)]
        assert [c for lo, hi, c in steps if lo <= pos <= hi] == [colour]


def test_continuous_colour_uses_robust_limits_and_colourbar():
    values = np.concatenate([np.linspace(0, 1, 98), [100.0, -100.0]]).astype(np.float32)
    fig = orientation_map_figure(np.zeros(100), np.zeros(100), ColorSpec("continuous", values, title="mu (D)"))
    marker = fig.data[TRACE["points"]].marker
    assert marker.showscale and marker.colorbar.title.text == "mu (D)"
    assert -100 < marker.cmin < 0.05 and 0.95 < marker.cmax < 100


def test_highlight_trace_holds_exactly_the_matching_points():
    fig = orientation_map_figure(
        np.zeros(10),
        np.zeros(10),
        _axis_spec(10),
        highlight_xy=(np.arange(4, dtype=np.float32), np.zeros(4, np.float32)),
    )
    hl = fig.data[TRACE["highlight"]]
    assert hl.meta["n_points"] == 4 and len(hl.x) == 4 and hl.showlegend


def test_density_figure_keeps_nan_outside_and_marks_reference():
    ratio = np.array([[np.nan, 1.0], [2.0, np.nan]], np.float32)
    fig = density_map_figure([0, 1], [0, 1], ratio, reference_xy=(np.zeros(3), np.zeros(3)))
    heat = fig.data[0]
    assert heat.type == "heatmap" and np.isnan(heat.z[0][0]) and heat.z[1][0] == 2.0
    assert [t.meta["kind"] for t in fig.data] == ["density", "outline", "graticule", "reference"]


def test_sphere_figure_draws_unit_vectors():
    v = np.eye(3, dtype=np.float32)
    fig = sphere_figure(v, _axis_spec(3), reference=np.eye(3))
    pts = next(t for t in fig.data if t.meta and t.meta.get("kind") == "points")
    assert pts.type == "scatter3d" and pts.meta["n_points"] == 3
    np.testing.assert_allclose(np.sqrt(np.asarray(pts.x) ** 2 + np.asarray(pts.y) ** 2 + np.asarray(pts.z) ** 2), 1.0)


def test_angle_histogram_converts_to_degrees_and_shows_both_and_haar():
    edges = np.linspace(0, np.pi, 4)
    hist = {"bin_edges_rad": edges.tolist(), "density": [0.1, 0.2, 0.3], "haar_density": [0.05, 0.3, 0.6]}
    fig = angle_histogram_figure(hist, hist)
    names = [t.name for t in fig.data]
    assert names == ["dataset", "control (random rotations)", "uniform (Haar)"]
    np.testing.assert_allclose(fig.data[0].x, [30, 90, 150])
    np.testing.assert_allclose(fig.data[0].y, np.array([0.1, 0.2, 0.3]) * np.pi / 180)


@pytest.mark.parametrize("kind", ["none", "categorical"])
def test_map_figure_accepts_empty_selection(kind):
    spec = ColorSpec(kind) if kind == "none" else _axis_spec(0)
    fig = orientation_map_figure(np.zeros(0), np.zeros(0), spec)
    assert fig.data[TRACE["points"]].meta["n_points"] == 0
