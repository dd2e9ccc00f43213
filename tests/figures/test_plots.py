"""Pure figure builders: known arrays in, checked figure out (no browser, no store)."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from orientscope.core.palette import OKABE_ITO, OTHER_GREY
from orientscope.figures.plots import (
    MAP_SCALE,
    MAX_POINT_TRACES,
    N_BINS,
    POINTS_START,
    TRACE,
    ColorSpec,
    angle_histogram_figure,
    density_map_figure,
    map_units,
    orientation_map_figure,
    orientation_map_spec,
    selection_ring,
    sphere_figure,
    split_points,
    typed_arrays,
)


def _axis_spec(n_points: int) -> ColorSpec:
    codes = (np.arange(n_points) % 3).astype(np.uint8)
    return ColorSpec("categorical", codes, ["a1", "a2", "a3"], OKABE_ITO[:3])


def _points(fig):
    return [t for t in fig.data if t.meta and t.meta.get("kind") == "points"]


def test_map_has_fixed_leading_traces_and_every_point_as_int16_map_units():
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, 300).astype(np.float32)
    y = rng.uniform(-1, 1, 300).astype(np.float32)
    spec = _axis_spec(300)
    fig = orientation_map_figure(
        x,
        y,
        spec,
        reference={"axis": [1, 2, 3], "x": [0, 0, 0], "y": [1, 1, 1], "lon": [0, 0, 0], "lat": [90, 90, 90]},
        n_molecules=100,
    )
    kinds = [t.meta["kind"] for t in fig.data]
    assert kinds[:POINTS_START] == list(TRACE)
    split = split_points(spec, 300)
    assert kinds[POINTS_START:] == ["points"] * len(split.members) + ["highlight", "legend-selection"]
    points = _points(fig)
    assert all(t.type == "scattergl" for t in points)
    assert sum(t.meta["n_points"] for t in points) == 300
    assert {t.meta["n_molecules"] for t in points} == {100}
    # each trace holds exactly its members' points, in one solid colour of its class
    for trace, idx, k in zip(points, split.members, split.category, strict=True):
        np.testing.assert_array_equal(trace.x, map_units(x[idx]))
        assert trace.marker.color == OKABE_ITO[k] and set(spec.values[idx]) == {k}
    np.testing.assert_allclose(np.asarray(points[0].x) / MAP_SCALE, x[split.members[0]], atol=0.6 / MAP_SCALE)
    # int16 goes to the browser as base64, not as a JSON list of numbers
    payload = json.loads(pio.to_json(fig))
    assert payload["data"][POINTS_START]["x"]["dtype"] == "i2"
    # the selection ring is drawn by the browser over the map, in map units
    assert selection_ring((np.array([0.5]), np.array([0.25]))) == [[0.5 * MAP_SCALE, 0.25 * MAP_SCALE]]
    assert selection_ring(None) == []
    # a linear molecule's undefined axes (NaN on the map) get no ring: NaN would reach the SVG as cx="NaN"
    linear = (np.array([0.5, np.nan, np.nan]), np.array([0.25, np.nan, np.nan]))
    assert selection_ring(linear) == [[0.5 * MAP_SCALE, 0.25 * MAP_SCALE]]
    # one legend entry per colour, shared by that colour's slices
    assert sorted(t.name for t in points if t.showlegend) == ["a1", "a2", "a3"]


def test_colours_are_interleaved_slices_so_none_is_drawn_wholly_on_top():
    split = split_points(_axis_spec(3000), 3000)
    assert len(split.members) <= MAX_POINT_TRACES
    assert split.category[:3] == [0, 1, 2] and split.category[-3:] == [0, 1, 2]
    everything = np.sort(np.concatenate(split.members))
    np.testing.assert_array_equal(everything, np.arange(3000))
    for idx in split.members:  # the shuffled draw order is kept within a slice
        assert np.all(np.diff(idx) > 0)


def test_continuous_colour_is_binned_between_robust_limits_with_a_colourbar():
    values = np.concatenate([np.linspace(0, 1, 98), [100.0, -100.0], [np.nan]]).astype(np.float32)
    spec = ColorSpec("continuous", values, title="mu (D)")
    fig = orientation_map_figure(np.zeros(101), np.zeros(101), spec)
    bar = next(t for t in fig.data if t.meta["kind"] == "colorbar")
    assert bar.marker.showscale and bar.marker.colorbar.title.text == "mu (D)"
    assert -100 < bar.marker.cmin < 0.05 and 0.95 < bar.marker.cmax < 100
    split = split_points(spec, 101)
    for idx, k in zip(split.members, split.category, strict=True):
        lo, hi = split.ranges[k] or (None, None)
        if lo is None:
            assert np.isnan(values[idx]).all() and split.colors[k] == OTHER_GREY
        else:
            assert np.all((values[idx] >= lo) & (values[idx] <= hi))
    # the outliers land in the end bins instead of stretching the scale
    assert split.category[int(np.flatnonzero([98 in m for m in split.members])[0])] == N_BINS - 1


def test_highlight_trace_holds_exactly_the_matching_points():
    fig = orientation_map_figure(
        np.zeros(10),
        np.zeros(10),
        _axis_spec(10),
        highlight_xy=(np.arange(4, dtype=np.float32), np.zeros(4, np.float32)),
    )
    hl = next(t for t in fig.data if t.meta["kind"] == "highlight")
    assert hl.meta["n_points"] == 4 and len(hl.x) == 4 and hl.showlegend
    np.testing.assert_array_equal(hl.x, np.arange(4) * MAP_SCALE)


def test_density_figure_keeps_nan_outside_and_marks_reference():
    ratio = np.array([[np.nan, 1.0], [2.0, np.nan]], np.float32)
    ref = {"axis": [2], "x": [0.0], "y": [0.0], "lon": [10.0], "lat": [-20.0]}
    fig = density_map_figure([0, 1], [0, 1], ratio, reference=ref, zmax=2.0)
    heat = fig.data[0]
    assert heat.type == "heatmap" and np.isnan(heat.z[0][0]) and heat.z[1][0] == 2.0
    assert [t.meta["kind"] for t in fig.data] == ["density", "outline", "graticule", "reference"]


def test_sphere_figure_draws_unit_vectors():
    v = np.eye(3, dtype=np.float32)
    fig = sphere_figure(v, _axis_spec(3), reference=np.eye(3))
    pts = next(t for t in fig.data if t.meta and t.meta.get("kind") == "points")
    assert pts.type == "scatter3d" and pts.meta["n_points"] == 3
    np.testing.assert_allclose(np.sqrt(np.asarray(pts.x) ** 2 + np.asarray(pts.y) ** 2 + np.asarray(pts.z) ** 2), 1.0)


def test_angle_histogram_is_a_ratio_to_uniform_on_a_log_scale_with_the_180_note():
    from orientscope.science.so3_stats import angle_histogram, haar_ratio_histogram

    # 40 angles, half of them within 15° of the reference: the excess a linear density plot hides
    angles = np.r_[np.linspace(0.05, 0.25, 20), np.linspace(1.0, 3.1, 20)]
    hist = angle_histogram(angles)
    hist["haar_ratio"] = haar_ratio_histogram(hist["bin_edges_rad"], hist["density"], len(angles))
    big = haar_ratio_histogram(hist["bin_edges_rad"], hist["density"], 10_000)
    fig = angle_histogram_figure(hist, hist)
    # one band (the control counts the same angles), over the bars
    assert [t.name for t in fig.data] == ["dataset", "control (random rotations)", "95 % band of uniform sets"]
    assert fig.layout.yaxis.type == "log" and "180°" in fig.layout.annotations[-1].text
    ratio = hist["haar_ratio"]
    # 15° bins at N = 40, widened from 0° until uniform poses expect 5 (0–90°: 7.3); the stored 3° at 10,000
    np.testing.assert_allclose(np.degrees(ratio["bin_edges_rad"]), [0, 90, 120, 135, 150, 165, 180])
    np.testing.assert_allclose(np.diff(np.degrees(big["bin_edges_rad"]))[1:], 3)
    assert sum(ratio["observed"]) == pytest.approx(40) and ratio["observed"][0] == pytest.approx(26)
    np.testing.assert_allclose(fig.data[0].y[0], ratio["ratio"][0])
    assert ratio["ratio"][0] > ratio["band"][0][1]  # 26 angles where uniform sets give at most 14: above the band
    # the band is drawn where the ratio says: its top over the first bin is that bin's upper ratio
    band = fig.data[2]
    assert band.fill == "toself" and band.y[0] == pytest.approx(ratio["band"][0][1])
    assert band.x[0] == 0 and band.x[1] == pytest.approx(90)


def test_angle_histogram_of_too_few_angles_for_two_bins_says_so():
    """10 angles: uniform poses would expect 5 in each of 2 bins, and 135–180° holds only 4.7."""
    from orientscope.science.so3_stats import angle_histogram, haar_ratio_histogram

    hist = angle_histogram(np.linspace(0.2, 3.0, 10))
    hist["haar_ratio"] = haar_ratio_histogram(hist["bin_edges_rad"], hist["density"], 10)
    fig = angle_histogram_figure(hist, hist)
    assert fig["data"] == []
    assert fig["layout"]["annotations"][0]["text"] == (
        "Too few molecules for an angle histogram: 10 angles to the reference, and each bin must expect at "
        "least 5 under uniform poses, which leaves one bin."
    )


@pytest.mark.parametrize(("low", "high"), [(0.2, 60.0), (0.01, 300.0), (0.66, 1.5), (1e-3, 1e5), (0.5, 2.0)])
def test_log_ticks_name_each_tick_by_its_whole_value(low, high):
    """Plotly's own log ticks read "5, 1, 2, 5, 10, 2, 5": 0.5 and 50 both "5" (issue 40)."""
    from orientscope.figures.plots import log_ticks

    ticks = log_ticks(low, high)
    values = [float(t.replace(",", "")) for t in ticks["ticktext"]]
    assert values == pytest.approx(ticks["tickvals"]) and len(set(ticks["ticktext"])) == len(values) >= 3
    assert all(low <= v * (1 + 1e-9) and v <= high * (1 + 1e-9) for v in values)


def test_angle_histogram_labels_its_ticks_its_uniform_line_and_keeps_its_footnote_inside():
    from orientscope.figures.plots import UNIFORM_LABEL
    from orientscope.science.so3_stats import angle_histogram, haar_ratio_histogram

    angles = np.r_[np.linspace(0.05, 0.25, 20), np.linspace(1.0, 3.1, 20)]  # 20 near the reference: ratio > 100
    hist = angle_histogram(angles)
    hist["haar_ratio"] = haar_ratio_histogram(hist["bin_edges_rad"], hist["density"], len(angles))
    fig = angle_histogram_figure(hist, None)
    y = fig.layout.yaxis
    ratios = np.array([r for r in hist["haar_ratio"]["ratio"] if r])
    assert 10 ** y.range[0] <= min(ratios.min(), 1) and 10 ** y.range[1] >= ratios.max()  # every bar and 1 shown
    assert list(y.ticktext) == [f"{v:g}" for v in y.tickvals] and 1.0 in y.tickvals
    # the label sits on the line at 1: on a log axis an annotation's y is the exponent, so y=1 read 10
    label = next(a for a in fig.layout.annotations if a.text == UNIFORM_LABEL)
    assert label.yref == "y" and label.y == 0
    # the footnote (and the legend above it) lie inside the figure's bottom margin, not below its edge
    note = next(a for a in fig.layout.annotations if "180°" in a.text)
    plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    note_top_px, legend_top_px = -note.y * plot_px, -fig.layout.legend.y * plot_px
    assert note.yanchor == "top" and fig.layout.legend.yanchor == "top"
    lines = note.text.count("<br>") + 1
    assert legend_top_px + 20 <= note_top_px and note_top_px + (lines + 1) * note.font.size <= fig.layout.margin.b
    assert "expect 5 angles in each" in note.text and "95 % of uniform (Haar-random) sets" in note.text


@pytest.mark.parametrize("kind", ["none", "categorical"])
def test_map_figure_accepts_empty_selection(kind):
    spec = ColorSpec(kind) if kind == "none" else _axis_spec(0)
    fig = orientation_map_figure(np.zeros(0), np.zeros(0), spec)
    assert _points(fig) == []
    assert [t.meta["kind"] for t in fig.data][POINTS_START:] == ["highlight", "legend-selection"]


def test_typed_arrays_encode_the_map_as_plotly_does():
    rng = np.random.default_rng(3)
    x, y = rng.uniform(-2, 2, 500), rng.uniform(-1, 1, 500)
    spec = orientation_map_spec(
        x, y, ColorSpec("continuous", rng.normal(size=500).astype(np.float32), title="mu"), n_molecules=500
    )
    fast = typed_arrays(spec)
    assert fast["data"][POINTS_START]["x"]["dtype"] == "i2"
    assert json.loads(json.dumps(fast)) == json.loads(pio.to_json(go.Figure(**spec, _validate=False)))


def test_smarts_matches_stay_readable_at_any_count():
    from orientscope.figures.plots import MAX_RINGED_MATCHES, MUTED_OPACITY, ColorSpec, orientation_map_spec

    rng = np.random.default_rng(0)
    x, y = rng.uniform(-2, 2, (2, 5000))
    spec = ColorSpec("categorical", (np.arange(5000) % 3).astype(np.uint8), ["a", "b", "c"], ["#000", "#111", "#222"])
    for n_matches, ringed in ((10, True), (MAX_RINGED_MATCHES + 1, False)):
        fig = orientation_map_spec(x, y, spec, highlight_xy=(x[:n_matches], y[:n_matches]))
        points = [t for t in fig["data"] if t["meta"]["kind"] == "points"]
        match = next(t for t in fig["data"] if t["meta"]["kind"] == "highlight")
        assert all(t["marker"]["opacity"] == MUTED_OPACITY for t in points)  # the map stays visible, muted
        assert match["meta"]["n_points"] == n_matches
        assert (match["marker"]["color"] == "rgba(0,0,0,0)") is ringed  # rings for a few, solid dots for many
    plain = orientation_map_spec(x, y, spec)
    assert all(t["marker"]["opacity"] == 0.75 for t in plain["data"] if t["meta"]["kind"] == "points")


def test_points_are_drawn_larger_and_outlined_the_fewer_they_are():
    """Three molecules' nine points are large outlined markers; 30,000 are small unoutlined ones, on the same plot."""
    from orientscope.services.map_markers import MAX_PX, MIN_VECTOR_PX

    rng = np.random.default_rng(1)
    sizes = {}
    for n in (9, 10_000, 30_000):
        x, y = rng.uniform(-2, 2, (2, n))
        points = _points(orientation_map_figure(x, y, _axis_spec(n), plot_px=(900, 458)))
        sizes[n] = {t.marker.size for t in points}
        assert all((t.marker.line.width or 0) > 0 for t in points) is (n == 9)
    assert sizes[9] == {MAX_PX} and sizes[30_000] == {MIN_VECTOR_PX}
    assert MIN_VECTOR_PX < min(sizes[10_000]) < MAX_PX
    few = sphere_figure(np.eye(3, dtype=np.float32), _axis_spec(3))
    dots = next(t for t in few.data if t.meta and t.meta.get("kind") == "points")
    assert dots.marker.size == MAX_PX and dots.marker.line.width == 1  # the 3D sphere follows the same rule


def test_angle_histogram_hover_gives_the_count_the_expectation_and_the_uniform_band():
    """27 uniform angles, one within 15° of the reference, where uniform poses expect 0.026.

    That one angle drew a 39× bar in a 0–15° bin. The first bin now widens to 0–105° (7.4 expected), and
    the hover gives the band that uniform sets stay within, in significant digits through core/numbers.
    """
    from orientscope.science.so3_stats import angle_histogram, haar_angle_cdf, haar_ratio_histogram

    grid = np.linspace(0, np.pi, 20_001)
    angles = np.r_[0.1, np.interp((np.arange(26) + 0.5) / 26, haar_angle_cdf(grid), grid)]  # Haar quantiles
    hist = angle_histogram(angles)
    hist["haar_ratio"] = haar_ratio_histogram(hist["bin_edges_rad"], hist["density"], len(angles))
    bars = angle_histogram_figure(hist, None).data[0]
    expected = 27 * haar_angle_cdf(np.radians(105.0))  # (θ − sin θ) / π of 27 angles: 7.45
    assert f"{expected:.2g}" == "7.4"
    assert bars.hovertext[0] == (
        "0–105°: 8 angles, 7.4 expected if uniform (ratio 1.07); 95 % band of uniform sets: 2–13 angles "
        "(ratio 0.27–1.7)"
    )
    assert not any("above" in t or "below" in t for t in bars.hovertext)
    np.testing.assert_allclose(bars.customdata[0], [0, 105, 8, expected])
    # 20 more angles within 15°: the first bin rises above the band, and its hover says so
    crowded = np.r_[angles, np.linspace(0.05, 0.25, 20)]
    hist = angle_histogram(crowded)
    hist["haar_ratio"] = haar_ratio_histogram(hist["bin_edges_rad"], hist["density"], len(crowded))
    first = angle_histogram_figure(hist, None).data[0].hovertext[0]
    assert first.startswith("0–75°: 24 angles, 5.1 expected") and first.endswith("— above what uniform sets give")
