"""Pure figure builders: plain arrays in, ``go.Figure`` out (no I/O, no science).

The orientation map always has the same trace layout so callbacks can patch
one trace by index: see ``TRACE`` below. Point traces carry ``meta`` so tests
and clients can tell them from the outline, graticule and legend entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import plotly.graph_objects as go

from backend.science.sphere import mollweide_graticule, mollweide_outline

# Okabe & Ito (2008) colour-blind-safe palette; grey for "everything else".
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
OTHER_GREY = "#BBBBBB"
CONTINUOUS_SCALE = "Cividis"  # perceptually uniform and colour-blind safe
AXIS_NAMES = {1: "axis 1 (largest spread)", 2: "axis 2", 3: "axis 3 (smallest spread)"}

# Fixed trace order of the map figure.
TRACE = {"outline": 0, "graticule": 1, "points": 2, "highlight": 3, "reference": 4, "selected": 5}
MAP_RANGE_X = [-2.95, 2.95]
MAP_RANGE_Y = [-1.5, 1.5]


@dataclass(frozen=True)
class ColorSpec:
    """How to colour points.

    kind : "categorical" (``values`` are integer codes into ``labels``/``colors``),
    "continuous" (``values`` are numbers, NaN drawn grey) or "none".
    values : (n_points,) float32 in draw order.
    """

    kind: str
    values: np.ndarray | None = None
    labels: list[str] = field(default_factory=list)
    colors: list[str] = field(default_factory=list)
    title: str = ""


def _base_layout(fig: go.Figure, title: str, height: int = 460) -> go.Figure:
    fig.update_layout(
        template="simple_white",
        title={"text": title, "x": 0.01, "font": {"size": 14}},
        height=height,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        legend={"orientation": "h", "y": -0.02, "x": 0.5, "xanchor": "center", "itemsizing": "constant"},
        uirevision="map",
    )
    return fig


def _frame_traces() -> list[go.Scatter]:
    ox, oy = mollweide_outline()
    gx, gy = mollweide_graticule()
    line = {"color": "#888888", "width": 1}
    return [
        go.Scatter(
            x=ox.astype(np.float32),
            y=oy.astype(np.float32),
            mode="lines",
            line=line,
            hoverinfo="skip",
            showlegend=False,
            name="outline",
            meta={"kind": "outline"},
        ),
        go.Scatter(
            x=gx.astype(np.float32),
            y=gy.astype(np.float32),
            mode="lines",
            hoverinfo="skip",
            showlegend=False,
            line={"color": "#DDDDDD", "width": 0.7},
            name="graticule",
            meta={"kind": "graticule"},
            connectgaps=False,
        ),
    ]


def _marker(spec: ColorSpec, size: float) -> dict:
    marker: dict = {"size": size, "opacity": 0.75}
    if spec.kind == "categorical":
        k = max(len(spec.colors), 1)
        scale = []
        for i, c in enumerate(spec.colors):
            scale += [[i / k, c], [(i + 1) / k, c]]
        marker.update(color=spec.values, colorscale=scale, cmin=-0.5, cmax=k - 0.5, showscale=False)
    elif spec.kind == "continuous":
        vals = np.asarray(spec.values, np.float32)
        finite = vals[np.isfinite(vals)]
        lo, hi = (float(np.percentile(finite, 1)), float(np.percentile(finite, 99))) if finite.size else (0.0, 1.0)
        marker.update(
            color=vals,
            colorscale=CONTINUOUS_SCALE,
            cmin=lo,
            cmax=hi if hi > lo else lo + 1,
            showscale=True,
            colorbar={"title": {"text": spec.title, "side": "right"}, "thickness": 12},
        )
    else:
        marker.update(color=OKABE_ITO[0])
    return marker


def _legend_traces(spec: ColorSpec) -> list[go.Scattergl]:
    if spec.kind != "categorical":
        return []
    return [
        go.Scattergl(
            x=[None],
            y=[None],
            mode="markers",
            marker={"color": c, "size": 9},
            name=label,
            showlegend=True,
            meta={"kind": "legend"},
            hoverinfo="skip",
        )
        for label, c in zip(spec.labels, spec.colors, strict=True)
    ]


def orientation_map_figure(
    x: np.ndarray,
    y: np.ndarray,
    color: ColorSpec,
    *,
    highlight_xy: tuple[np.ndarray, np.ndarray] | None = None,
    reference_xy: tuple[np.ndarray, np.ndarray] | None = None,
    selected_xy: tuple[np.ndarray, np.ndarray] | None = None,
    title: str = "",
    n_molecules: int | None = None,
    marker_size: float | None = None,
) -> go.Figure:
    """Mollweide map of axis points (x, y float32 arrays in draw order).

    Trace order is ``TRACE``; the point trace's ``meta`` records how many points
    and molecules it holds.
    """
    x = np.asarray(x, np.float32)
    y = np.asarray(y, np.float32)
    size = marker_size or (2.0 if x.size > 100_000 else 3.0 if x.size > 10_000 else 5.0)
    hx, hy = highlight_xy if highlight_xy is not None else (np.zeros(0, np.float32), np.zeros(0, np.float32))
    rx, ry = reference_xy if reference_xy is not None else (np.zeros(0, np.float32), np.zeros(0, np.float32))
    sx, sy = selected_xy if selected_xy is not None else (np.zeros(0, np.float32), np.zeros(0, np.float32))
    traces = (
        _frame_traces()
        + [
            go.Scattergl(
                x=x,
                y=y,
                mode="markers",
                marker=_marker(color, size),
                name="axes",
                showlegend=False,
                hoverinfo="none",
                meta={"kind": "points", "n_points": int(x.size), "n_molecules": n_molecules},
            ),
            go.Scattergl(
                x=np.asarray(hx, np.float32),
                y=np.asarray(hy, np.float32),
                mode="markers",
                name="SMARTS match",
                marker={"size": size + 5, "color": "rgba(0,0,0,0)", "line": {"color": "#D55E00", "width": 1.5}},
                showlegend=bool(np.size(hx)),
                hoverinfo="none",
                meta={"kind": "highlight", "n_points": int(np.size(hx))},
            ),
            go.Scatter(
                x=np.asarray(rx, np.float32),
                y=np.asarray(ry, np.float32),
                mode="markers+text",
                name="reference",
                text=[f"ref {a}" for a in range(1, np.size(rx) + 1)],
                textposition="top center",
                marker={"symbol": "star", "size": 16, "color": "#F0E442", "line": {"color": "#000000", "width": 1.2}},
                hovertemplate="reference orientation %{text}<extra></extra>",
                showlegend=bool(np.size(rx)),
                meta={"kind": "reference"},
            ),
            go.Scatter(
                x=np.asarray(sx, np.float32),
                y=np.asarray(sy, np.float32),
                mode="markers",
                name="selected",
                marker={"symbol": "circle-open", "size": 16, "color": "#D55E00", "line": {"width": 3}},
                hoverinfo="skip",
                showlegend=False,
                meta={"kind": "selected"},
            ),
        ]
        + _legend_traces(color)
    )
    fig = go.Figure(traces)
    _base_layout(fig, title)
    fig.update_xaxes(range=MAP_RANGE_X, visible=False, fixedrange=False)
    fig.update_yaxes(range=MAP_RANGE_Y, visible=False, scaleanchor="x", scaleratio=1)
    fig.update_layout(dragmode="pan", hovermode="closest", clickmode="event")
    return fig


def density_map_figure(x_centers, y_centers, ratio, *, reference_xy=None, title: str = "") -> go.Figure:
    """Server-binned density (ratio to a uniform sphere) as a heatmap on the Mollweide plane."""
    rx, ry = reference_xy if reference_xy is not None else (np.zeros(0), np.zeros(0))
    ratio = np.asarray(ratio, np.float32)
    finite = ratio[np.isfinite(ratio)]
    zmax = float(np.percentile(finite, 99.5)) if finite.size else 1.0
    heat = go.Heatmap(
        x=np.asarray(x_centers, np.float32),
        y=np.asarray(y_centers, np.float32),
        z=ratio,
        colorscale=CONTINUOUS_SCALE,
        zmin=0,
        zmax=max(zmax, 1.0),
        hoverongaps=False,
        colorbar={"title": {"text": "density / uniform", "side": "right"}, "thickness": 12},
        hovertemplate="density %{z:.2f}× uniform<extra></extra>",
        meta={"kind": "density"},
    )
    traces = (
        [heat]
        + _frame_traces()
        + [
            go.Scatter(
                x=np.asarray(rx, np.float32),
                y=np.asarray(ry, np.float32),
                mode="markers",
                name="reference",
                marker={"symbol": "star", "size": 16, "color": "#F0E442", "line": {"color": "#000000", "width": 1.2}},
                meta={"kind": "reference"},
            ),
        ]
    )
    fig = _base_layout(go.Figure(traces), title)
    fig.update_xaxes(range=MAP_RANGE_X, visible=False)
    fig.update_yaxes(range=MAP_RANGE_Y, visible=False, scaleanchor="x", scaleratio=1)
    return fig


def sphere_figure(vectors: np.ndarray, color: ColorSpec, *, reference=None, title: str = "") -> go.Figure:
    """3D unit-sphere view of axis vectors (n_points, 3) in draw order."""
    v = np.asarray(vectors, np.float32).reshape(-1, 3)
    u, w = np.mgrid[0 : 2 * np.pi : 37j, 0 : np.pi : 19j]
    wire = go.Surface(
        x=np.cos(u) * np.sin(w),
        y=np.sin(u) * np.sin(w),
        z=np.cos(w),
        opacity=0.08,
        showscale=False,
        colorscale=[[0, "#888888"], [1, "#888888"]],
        hoverinfo="skip",
        meta={"kind": "sphere"},
    )
    marker = _marker(color, 2.0 if len(v) > 20_000 else 3.0)
    marker.pop("opacity", None)
    traces = [
        wire,
        go.Scatter3d(
            x=v[:, 0],
            y=v[:, 1],
            z=v[:, 2],
            mode="markers",
            marker=marker,
            hoverinfo="none",
            name="axes",
            showlegend=False,
            meta={"kind": "points", "n_points": int(len(v))},
        ),
    ]
    if reference is not None:
        r = np.asarray(reference, np.float32)
        traces.append(
            go.Scatter3d(
                x=r[:, 0],
                y=r[:, 1],
                z=r[:, 2],
                mode="markers+text",
                name="reference",
                text=["ref 1", "ref 2", "ref 3"],
                marker={"size": 7, "color": "#F0E442", "line": {"color": "#000", "width": 1}},
                meta={"kind": "reference"},
            )
        )
    fig = _base_layout(go.Figure(traces + _legend_traces(color)), title)
    fig.update_layout(
        scene={
            "aspectmode": "cube",
            "xaxis": {"range": [-1.1, 1.1]},
            "yaxis": {"range": [-1.1, 1.1]},
            "zaxis": {"range": [-1.1, 1.1]},
        }
    )
    return fig


def angle_histogram_figure(data: dict | None, control: dict | None) -> go.Figure:
    """Histogram of angles to the reference orientation vs the Haar density, data and control.

    Each argument is a report ``angle_histogram`` section: bin_edges_rad, density, haar_density.
    """
    fig = go.Figure()
    for hist, name, color in ((data, "dataset", OKABE_ITO[0]), (control, "control (random rotations)", OKABE_ITO[1])):
        if not hist:
            continue
        edges = np.degrees(np.asarray(hist["bin_edges_rad"], np.float64))
        centers = (edges[:-1] + edges[1:]) / 2
        # densities are per radian; per degree keeps the y-axis readable next to the x-axis
        fig.add_trace(
            go.Bar(
                x=centers,
                y=np.asarray(hist["density"]) * np.pi / 180,
                width=np.diff(edges),
                name=name,
                marker={"color": color},
                opacity=0.55,
            )
        )
    ref = data or control
    if ref and ref.get("haar_density") is not None:
        edges = np.degrees(np.asarray(ref["bin_edges_rad"], np.float64))
        centers = (edges[:-1] + edges[1:]) / 2
        fig.add_trace(
            go.Scatter(
                x=centers,
                y=np.asarray(ref["haar_density"]) * np.pi / 180,
                mode="lines",
                name="uniform (Haar)",
                line={"color": "#000000", "width": 2, "dash": "dash"},
            )
        )
    _base_layout(fig, "Angle to the reference orientation", height=300)
    fig.update_layout(barmode="overlay", uirevision=None, legend={"y": -0.3})
    fig.update_xaxes(title="angle (degrees)", range=[0, 180])
    fig.update_yaxes(title="density (1/degree)")
    return fig


def message_figure(text: str, height: int = 460) -> go.Figure:
    """An empty figure that shows a message instead of data."""
    fig = go.Figure()
    fig.add_annotation(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font={"size": 15})
    fig.update_layout(
        template="simple_white",
        height=height,
        xaxis={"visible": False},
        yaxis={"visible": False},
        margin={"l": 10, "r": 10, "t": 20, "b": 10},
    )
    return fig
