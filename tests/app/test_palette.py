"""Each colour means one thing: the viewer's lab frame shares no colour with the axes, the highlight or the ring."""

from pathlib import Path

from orientscope.core import palette
from orientscope.figures.plots import selection_legend_trace
from orientscope.figures.viewer import LAB_AXES, PRINCIPAL_COLORS, molecule_scenes

CSS = (Path(__file__).resolve().parents[2] / "frontend_assets" / "style.css").read_text()


def test_lab_axes_use_a_colour_no_data_series_uses():
    lab = {c.upper() for _, _, c in LAB_AXES}
    taken = {palette.HIGHLIGHT, palette.SELECTION_RING, palette.REFERENCE_STAR, *palette.AXIS_COLORS.values()}
    taken |= set(palette.GROUP_COLORS)
    assert lab and not lab & {c.upper() for c in taken}
    assert [c.upper() for c in PRINCIPAL_COLORS] == [palette.AXIS_COLORS[a] for a in (1, 2, 3)]


def test_arrow_labels_sit_past_the_tips_and_the_caption_says_lab():
    detail = {"id": "m", "elements": ["C", "O"], "positions": [[0, 0, 0], [1.2, 0, 0]],
              "canonical_positions": [[-0.6, 0, 0], [0.6, 0, 0]]}  # fmt: skip
    stored, canonical = molecule_scenes(detail)
    # one-letter labels fit beside the smallest molecule; the caption names the frame
    assert [a["label"] for a in stored["arrows"]] == ["x", "y", "z"] and "lab x/y/z" in stored["title"]
    assert [a["label"] for a in canonical["arrows"]] == ["1", "2", "3"] and "principal axes 1/2/3" in canonical["title"]
    for a in stored["arrows"] + canonical["arrows"]:
        tip = sum((e - s) ** 2 for s, e in zip(a["start"], a["end"], strict=True)) ** 0.5
        label = sum((e - s) ** 2 for s, e in zip(a["start"], a["label_at"], strict=True)) ** 0.5
        assert label > tip


def test_the_selection_ring_has_a_legend_entry_in_its_own_colour_and_css_agrees():
    trace = selection_legend_trace()
    assert trace["showlegend"] and trace["name"] == "selected molecule"
    assert trace["marker"]["color"] == palette.SELECTION_RING
    assert f"stroke: {palette.SELECTION_RING}" in CSS
    assert f".verdict-line.aligned {{ color: {palette.VERDICT_ALIGNED}; }}" in CSS
    assert f".verdict-line.not-aligned {{ color: {palette.VERDICT_NOT_ALIGNED}; }}" in CSS


def test_the_cividis_stops_are_plotlys_cividis():
    # the server's map image interpolates palette.CIVIDIS; the dashboard's figures name plotly's scale
    from plotly.colors import sequential

    assert palette.CONTINUOUS_SCALE == "Cividis"
    assert list(palette.CIVIDIS) == [c.lower() for c in sequential.Cividis]
