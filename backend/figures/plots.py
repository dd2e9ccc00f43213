"""Pure figure builders: plain arrays in, figures out (no I/O, no science).

Figures are ``go.Figure`` objects, except where building one costs more than
the figure is worth: the map (:func:`orientation_map_spec`, plain dicts sent as
:func:`typed_arrays`) and the message placeholder.

The orientation map draws each colour as its own solid-colour Scattergl trace:
a per-point colour array makes plotly.js parse one colour string per point
(seconds at 392k points), a solid colour costs nothing. Points travel as int16
in "map units" (Mollweide x/y × ``MAP_SCALE``), half the bytes of float32 and
still far finer than a pixel. Trace order: the fixed ``TRACE`` entries, then
the point traces from ``POINTS_START`` (see :func:`split_points`), then the
SMARTS highlight. Every trace carries ``meta`` so tests and clients can tell
points from outline, graticule and overlays.
"""

from __future__ import annotations

import base64
import functools
from dataclasses import dataclass, field

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.colors import sample_colorscale

from orientscope.core.numbers import format_count, format_number, format_percent, is_number
from orientscope.core.palette import (
    AXIS_COLORS,
    CIVIDIS,
    CONTINUOUS_SCALE,
    CONTROL_SERIES,
    DATASET_SERIES,
    GRATICULE,
    HIGHLIGHT,
    OTHER_GREY,
    OUTLINE,
    REFERENCE_STAR,
    SELECTION_RING,
)
from orientscope.figures.compat import unvalidated_figure
from orientscope.services.map_markers import vector_marker
from orientscope.services.map_raster import HIGHLIGHT_LABELS
from orientscope.services.map_view import color_range
from orientscope.services.report_format import ANGLE_PEAK_NOTE

_CIVIDIS = [[i / 10, c] for i, c in enumerate(sample_colorscale(list(CIVIDIS), [i / 10 for i in range(11)]))]
TEMPLATE = "simple_white"

# Fixed leading traces of the map figure; point traces follow from POINTS_START.
TRACE = {"outline": 0, "graticule": 1, "reference": 2}
POINTS_START = len(TRACE)
MAP_SCALE = 10_000.0  # |Mollweide x| <= 2*sqrt(2), so map units fit int16
MAP_RANGE_X = [-2.95 * MAP_SCALE, 2.95 * MAP_SCALE]
MAP_RANGE_Y = [-1.5 * MAP_SCALE, 1.5 * MAP_SCALE]
N_BINS = 10  # continuous colours are drawn in this many solid-colour bins
# Each colour is cut into a few interleaved slices so that no colour is drawn
# wholly on top of another (the draw order within a colour is already shuffled).
MAX_SLICES = 4
MAX_POINT_TRACES = 24
MAX_RINGED_MATCHES = 2_000  # SMARTS matches drawn as rings; more are drawn as dots over a muted map
MUTED_OPACITY = 0.25
SPHERE_PX = (420, 420)  # about the pixels the 3D sphere covers on screen (its marker size follows from them)
NO_MATCH = HIGHLIGHT_LABELS[0]  # the legend of the other molecules while matches are highlighted


def map_units(values) -> np.ndarray:
    """int16 map coordinates of Mollweide x or y values."""
    return np.round(np.asarray(values, np.float64) * MAP_SCALE).astype(np.int16)


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


def figure_layout(title: str, height: int = 460) -> dict:
    """The layout every figure of the page shares (template by name; a plain-dict figure sets
    :func:`template_json` instead)."""
    return {
        "template": TEMPLATE,
        "title": {"text": title, "x": 0.01, "font": {"size": 14}},
        "height": height,
        "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
        "legend": {"orientation": "h", "y": -0.02, "x": 0.5, "xanchor": "center", "itemsizing": "constant"},
        "uirevision": "map",
    }


def _base_layout(fig: go.Figure, title: str, height: int = 460) -> go.Figure:
    fig.update_layout(**figure_layout(title, height))
    return fig


def _frame_traces(frame: dict | None, scale: float = 1.0) -> list[go.Scatter]:
    """Outline and graticule traces from ``frame`` = {"outline": (x, y), "graticule": (x, y)} (empty if None)."""
    empty = (np.zeros(0), np.zeros(0))
    ox, oy = (frame or {}).get("outline", empty)
    gx, gy = (frame or {}).get("graticule", empty)
    line = {"color": OUTLINE, "width": 1}
    return [
        go.Scatter(
            x=(ox * scale).astype(np.float32),
            y=(oy * scale).astype(np.float32),
            mode="lines",
            line=line,
            hoverinfo="skip",
            showlegend=False,
            name="outline",
            meta={"kind": "outline"},
        ),
        go.Scatter(
            x=(gx * scale).astype(np.float32),
            y=(gy * scale).astype(np.float32),
            mode="lines",
            hoverinfo="skip",
            showlegend=False,
            line={"color": GRATICULE, "width": 0.7},
            name="graticule",
            meta={"kind": "graticule"},
            connectgaps=False,
        ),
    ]


def color_marker(spec: ColorSpec, size: float) -> dict:
    """Per-point colour marker (numbers on a colour scale, not colour strings), for the 3D view and the
    scatter view; a continuous one carries its colour bar."""
    marker: dict = {"size": size, "opacity": 0.75}
    if spec.kind == "categorical":
        k = max(len(spec.colors), 1)
        scale = []
        for i, c in enumerate(spec.colors):
            scale += [[i / k, c], [(i + 1) / k, c]]
        marker.update(color=spec.values, colorscale=scale, cmin=-0.5, cmax=k - 0.5, showscale=False)
    elif spec.kind == "continuous":
        vals = np.asarray(spec.values, np.float32)
        lo, hi = color_range(vals)
        marker.update(
            color=vals,
            colorscale=CONTINUOUS_SCALE,
            cmin=lo,
            cmax=hi,
            showscale=True,
            colorbar={"title": {"text": spec.title, "side": "right"}, "thickness": 12},
        )
    else:
        marker.update(color=AXIS_COLORS[1])
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


@dataclass(frozen=True)
class PointTraces:
    """The map's points split into solid-colour traces.

    members[t] : indices (into the draw order) of the points of trace t;
    category[t] : its colour class; colors/labels : per colour class;
    ranges : per class (lo, hi) of a continuous colour bin, else None.
    """

    members: list[np.ndarray]
    category: list[int]
    colors: list[str]
    labels: list[str]
    ranges: list[tuple[float, float] | None]
    colorbar: dict | None = None


def _classes(spec: ColorSpec, n_points: int):
    """(class code per point, colours, labels, bin ranges, colour bar) of a colour spec."""
    if spec.kind == "categorical" and spec.values is not None and len(spec.colors):
        codes = np.asarray(spec.values, np.int64)
        return codes, list(spec.colors), list(spec.labels), [None] * len(spec.colors), None
    if spec.kind == "continuous" and spec.values is not None:
        vals = np.asarray(spec.values, np.float64)
        lo, hi = color_range(vals)
        edges = np.linspace(lo, hi, N_BINS + 1)
        scaled = np.nan_to_num((vals - lo) / (hi - lo) * N_BINS, nan=0.0, posinf=N_BINS, neginf=0.0)
        codes = np.clip(np.floor(scaled), 0, N_BINS - 1).astype(np.int64)
        codes = np.where(np.isfinite(vals), codes, N_BINS)  # NaN: grey "no value"
        colors = sample_colorscale(CONTINUOUS_SCALE, list((np.arange(N_BINS) + 0.5) / N_BINS)) + [OTHER_GREY]
        labels = [f"{a:.4g} to {b:.4g}" for a, b in zip(edges[:-1], edges[1:], strict=True)] + ["no value"]
        ranges = [(float(a), float(b)) for a, b in zip(edges[:-1], edges[1:], strict=True)] + [None]
        ranges[0] = (-np.inf, ranges[0][1])  # the end bins also hold the clipped tails
        ranges[N_BINS - 1] = (ranges[N_BINS - 1][0], np.inf)
        colorbar = {"title": spec.title, "cmin": lo, "cmax": hi}
        return codes, colors, labels, ranges, colorbar
    return np.zeros(n_points, np.int64), [AXIS_COLORS[1]], ["axes"], [None], None


def split_points(spec: ColorSpec, n_points: int) -> PointTraces:
    """Split ``n_points`` points (in draw order) into solid-colour traces, interleaving slices of each colour."""
    codes, colors, labels, ranges, colorbar = _classes(spec, n_points)
    # stable keeps the shuffled order within a class; on 16-bit codes numpy sorts by radix, in O(n)
    order = np.argsort(codes.astype(np.int16), kind="stable").astype(np.int32)
    bounds = np.searchsorted(codes[order], np.arange(len(colors) + 1))
    per_class = [order[bounds[k] : bounds[k + 1]] for k in range(len(colors))]
    present = [k for k in range(len(colors)) if per_class[k].size]
    slices = max(1, min(MAX_SLICES, MAX_POINT_TRACES // max(len(present), 1)))
    members, category = [], []
    for s in range(slices):
        for k in present:
            part = np.array_split(per_class[k], slices)[s]
            if part.size:
                members.append(part)
                category.append(k)
    return PointTraces(members, category, colors, labels, ranges, colorbar)


def _point_traces(x, y, split: PointTraces, marker: dict, n_molecules: int | None) -> list[dict]:
    traces, shown = [], set()
    for idx, k in zip(split.members, split.category, strict=True):
        legend = split.colorbar is None or split.ranges[k] is None
        traces.append(
            {
                "type": "scattergl",
                "x": x[idx],
                "y": y[idx],
                "mode": "markers",
                "marker": {**marker, "opacity": 0.75, "color": split.colors[k]},
                "name": split.labels[k],
                "legendgroup": f"c{k}",
                "showlegend": legend and k not in shown,
                # hover is the server's pick, as a click's (orientscope.js): plotly's own could name another point
                "hoverinfo": "none",
                "meta": {
                    "kind": "points",
                    "n_points": int(idx.size),
                    "n_molecules": n_molecules,
                    "class": k,
                    "range": None if split.ranges[k] is None else [_finite_or_none(v) for v in split.ranges[k]],
                },
            }
        )
        shown.add(k)
    return traces


def _finite_or_none(v: float) -> float | None:
    return float(v) if np.isfinite(v) else None


def colorbar_trace(colorbar: dict) -> dict:
    """An empty trace that only carries the continuous colour bar ({"title", "cmin", "cmax"})."""
    return {
        "type": "scattergl",
        "x": [None],
        "y": [None],
        "mode": "markers",
        "showlegend": False,
        "hoverinfo": "skip",
        "marker": {
            "color": [colorbar["cmin"]],
            "colorscale": _CIVIDIS,
            "cmin": colorbar["cmin"],
            "cmax": colorbar["cmax"],
            "showscale": True,
            "colorbar": {"title": {"text": colorbar["title"], "side": "right"}, "thickness": 12},
        },
        "meta": {"kind": "colorbar"},
    }


def orientation_image_spec(
    image: str,
    extent: tuple[float, float, float, float],
    scale: dict,
    *,
    frame: dict | None = None,
    reference: dict | None = None,
    highlight: bool = False,
    title: str = "",
    image_extent: tuple[float, float, float, float] | None = None,
) -> dict:
    """The map as a server-aggregated image under vector overlays, as plain dicts.

    image : a PNG data URL covering ``image_extent`` (default ``extent``); ``extent`` = (x0, x1, y0, y1) in
    Mollweide units, the region the plot shows (an image may cover a little more: its pixel grid);
    scale : the image's colours, {"kind": "categorical", "labels", "colors"} (a legend) or
    {"kind": "continuous", "title", "colors", "cmin", "cmax"} (a colour bar).
    The outline, graticule, reference markers and legend are traces drawn over the image.
    """
    x0, x1, y0, y1 = image_extent or extent
    traces = [t.to_plotly_json() for t in _frame_traces(frame, MAP_SCALE)] + [reference_trace(reference, "scatter")]
    if highlight:  # the image shows matches over the other molecules in grey: no colour scale to explain
        traces.append(legend_entry(NO_MATCH, OTHER_GREY, {"kind": "legend"}))
    elif scale["kind"] == "categorical":
        for k, (label, color) in enumerate(zip(scale["labels"], scale["colors"], strict=True)):
            traces.append(legend_entry(label, color, {"kind": "legend", "class": k}))
    else:
        stops = scale["colors"]
        colorscale = [[i / (len(stops) - 1), c] for i, c in enumerate(stops)]
        traces.append(
            {
                **colorbar_trace({"title": scale["title"], "cmin": scale["cmin"], "cmax": scale["cmax"]}),
                "type": "scatter",
            }
        )
        traces[-1]["marker"]["colorscale"] = colorscale
    if highlight:
        traces.append(legend_entry("SMARTS match", HIGHLIGHT, {"kind": "highlight"}))
    traces.append(selection_legend_trace())
    traces.append(GL_KEEPALIVE)
    layout = _map_layout(title, extent)
    layout["images"] = [
        {
            "source": image,
            "xref": "x",
            "yref": "y",
            "x": x0 * MAP_SCALE,
            "y": y1 * MAP_SCALE,
            "sizex": (x1 - x0) * MAP_SCALE,
            "sizey": (y1 - y0) * MAP_SCALE,
            "xanchor": "left",
            "yanchor": "top",
            "sizing": "stretch",
            "layer": "below",
        }
    ]
    return {"data": traces, "layout": layout}


# An empty WebGL trace in the image's figure: plotly.js then keeps the plot's WebGL context, which a zoom to
# points would otherwise create anew (300-600 ms of the first points-mode zoom after an image in software WebGL).
GL_KEEPALIVE = {"type": "scattergl", "x": [None], "y": [None], "mode": "markers", "showlegend": False,
                "hoverinfo": "skip", "meta": {"kind": "webgl"}}  # fmt: skip


def legend_entry(label: str, color: str, meta: dict) -> dict:
    """A legend entry without points (the image carries the colours)."""
    return {
        "type": "scatter",
        "x": [None],
        "y": [None],
        "mode": "markers",
        "marker": {"color": color, "size": 9},
        "name": label,
        "showlegend": True,
        "hoverinfo": "skip",
        "meta": meta,
    }


def orientation_map_figure(*args, **kwargs) -> go.Figure:
    """:func:`orientation_map_spec` as a ``go.Figure``, for callers that want figure objects (tests)."""
    return unvalidated_figure(**orientation_map_spec(*args, **kwargs))


def orientation_map_spec(
    x: np.ndarray,
    y: np.ndarray,
    color: ColorSpec,
    *,
    split: PointTraces | None = None,
    frame: dict | None = None,
    highlight_xy: tuple[np.ndarray, np.ndarray] | None = None,
    reference: dict | None = None,
    title: str = "",
    n_molecules: int | None = None,
    plot_px: tuple[int, int] = (900, 458),
    extent: tuple[float, float, float, float] | None = None,
) -> dict:
    """Mollweide map of axis points (x, y Mollweide coordinates in draw order), in map units,
    as ``{"data": [...], "layout": {...}}`` of plain dicts and numpy arrays.

    ``split`` is :func:`split_points` of ``color`` (pass it when it is cached); ``frame`` holds the
    outline and graticule polylines (``orientscope.services.map_data.frame_lines``); ``reference`` the
    shown axes of the reference orientation (see :func:`reference_trace`); ``extent`` = (x0, x1, y0, y1),
    Mollweide units, is the region shown (default the whole map); ``plot_px`` = (width, height) its pixels, which
    with the number of points set the markers' size and outline (:func:`orientscope.services.map_markers.vector_marker`).
    """
    x, y = map_units(x), map_units(y)
    split = split or split_points(color, x.size)
    marker = vector_marker(x.size, *plot_px)
    size = marker["size"]
    hx, hy = highlight_xy if highlight_xy is not None else (np.zeros(0), np.zeros(0))
    traces = [t.to_plotly_json() for t in _frame_traces(frame, MAP_SCALE)] + [reference_trace(reference, "scatter")]
    many = np.size(hx) > MAX_RINGED_MATCHES
    base = _point_traces(x, y, split, marker, n_molecules)
    if np.size(hx):  # the matches stand out over the map, muted and grey: its colour scale is set aside
        for trace in base:
            trace["marker"].update(opacity=MUTED_OPACITY, color=OTHER_GREY)
            trace["marker"].pop("line", None)  # the muted context has no outlines: only the matches stand out
            trace["showlegend"] = False
    traces += base
    # A few matches get rings, which find them at a glance; many get small dots (a third of QM9 matches C=O),
    # between which the other molecules still show.
    mark = (
        {**vector_marker(np.size(hx), *plot_px), "color": HIGHLIGHT, "opacity": 0.8}
        if many
        else {"size": size + 5, "color": "rgba(0,0,0,0)", "line": {"color": HIGHLIGHT, "width": 1.5}}
    )
    traces.append(
        {
            "type": "scattergl",
            "x": map_units(hx),
            "y": map_units(hy),
            "mode": "markers",
            "name": "SMARTS match",
            "marker": mark,
            "showlegend": bool(np.size(hx)),
            "hoverinfo": "none",
            "meta": {"kind": "highlight", "n_points": int(np.size(hx))},
        }
    )
    if np.size(hx):
        traces.append(legend_entry(NO_MATCH, OTHER_GREY, {"kind": "legend"}))
    traces.append(selection_legend_trace())
    if split.colorbar is not None and not np.size(hx):
        traces.append(colorbar_trace(split.colorbar))
    # Plain dicts: plotly's validators and figure objects cost more than the rest of the figure.
    return {"data": traces, "layout": _map_layout(title, extent)}


def _map_layout(title: str, extent: tuple[float, float, float, float] | None = None) -> dict:
    """The map's layout as a plain dict, with the template expanded (plotly.js knows no template names).

    ``extent`` = (x0, x1, y0, y1), Mollweide units: the region the axes show (default the whole map).
    A zoomed region's figure must carry its own ranges: plotly.js keeps a zoom across a new figure
    only when the zoom came from the mouse, and dcc.Graph's echo of the relayout overwrites even that.
    """
    x_range, y_range = MAP_RANGE_X, MAP_RANGE_Y
    if extent is not None:
        x_range = [extent[0] * MAP_SCALE, extent[1] * MAP_SCALE]
        y_range = [extent[2] * MAP_SCALE, extent[3] * MAP_SCALE]
    return {
        **figure_layout(title),
        "template": template_json(),
        "xaxis": {"range": x_range, "visible": False, "fixedrange": False},
        "yaxis": {"range": y_range, "visible": False, "scaleanchor": "x", "scaleratio": 1},
        "dragmode": "pan",
        "hovermode": "closest",
        "clickmode": "event",
        # also over the image (no selectable trace): a selection lists the molecules (app/selection_panel.py)
        "modebar": {"add": ["select2d", "lasso2d"]},
    }


@functools.cache
def template_json() -> dict:
    """The page's template as a plain dict (plotly.js knows no template names)."""
    return pio.templates[TEMPLATE].to_plotly_json()


_TYPED = {
    "int8": "i1",
    "uint8": "u1",
    "int16": "i2",
    "uint16": "u2",
    "int32": "i4",
    "uint32": "u4",
    "float32": "f4",
    "float64": "f8",
}


def typed_arrays(obj):
    """``obj`` with every numpy array as a plotly.js typed-array spec ({"dtype", "bdata": base64}).

    What ``fig.to_json()`` does to arrays, without building and validating a figure first.
    """
    if isinstance(obj, dict):
        return {k: typed_arrays(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [typed_arrays(v) for v in obj]
    if isinstance(obj, np.ndarray):
        name = _TYPED.get(str(obj.dtype))
        if name is None or obj.size == 0 or obj.ndim != 1:
            return obj.tolist()
        return {"dtype": name, "bdata": base64.b64encode(np.ascontiguousarray(obj)).decode("ascii")}
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def selection_ring(xy: tuple[np.ndarray, np.ndarray] | None) -> list[list[float]]:
    """[x, y] map units of the selected molecule's points, for the ring the browser draws over the map.

    The ring is an overlay outside the figure: plotly.js re-renders every WebGL
    point on any figure change, shapes included (about 1 s in software WebGL).
    """
    if xy is None:
        return []
    pairs = zip(np.ravel(xy[0]), np.ravel(xy[1]), strict=True)
    # an axis the molecule's symmetry leaves undefined (NaN on the map) gets no ring
    return [[float(x) * MAP_SCALE, float(y) * MAP_SCALE] for x, y in pairs if np.isfinite(x) and np.isfinite(y)]


def reference_trace(reference: dict | None, kind: str = "scatter") -> dict:
    """Yellow stars at the shown axes of the reference orientation, hover in degrees.

    ``reference``: {"x", "y"} Mollweide coordinates, {"lon", "lat"} degrees and {"axis"}
    numbers, each a list over the shown axes (None or empty: an empty trace, kept so the
    trace order stays fixed).
    """
    ref = reference or {}
    axis = list(ref.get("axis", []))
    return {
        "type": kind,
        "x": (np.asarray(ref.get("x", []), np.float64) * MAP_SCALE).astype(np.float32),
        "y": (np.asarray(ref.get("y", []), np.float64) * MAP_SCALE).astype(np.float32),
        "mode": "markers+text",
        "name": "reference orientation",
        "text": [f"ref {a}" for a in axis],
        "textposition": "top center",
        "customdata": [[a, lo, la] for a, lo, la in zip(axis, ref.get("lon", []), ref.get("lat", []), strict=True)],
        "marker": {"symbol": "star", "size": 16, "color": REFERENCE_STAR, "line": {"color": "#000000", "width": 1.2}},
        "hovertemplate": "reference orientation, axis %{customdata[0]}<br>"
        "lon %{customdata[1]:.1f}°, lat %{customdata[2]:.1f}°<extra></extra>",
        "showlegend": bool(axis),
        "meta": {"kind": "reference", "axes": axis},
    }


def selection_legend_trace() -> dict:
    """A legend entry for the selected molecule's ring (the ring itself is an overlay outside the figure)."""
    return {
        "type": "scatter",
        "x": [None],
        "y": [None],
        "mode": "markers",
        "name": "selected molecule",
        "marker": {"symbol": "circle-open", "size": 14, "color": SELECTION_RING, "line": {"width": 3}},
        "showlegend": True,
        "hoverinfo": "skip",
        "meta": {"kind": "legend-selection"},
    }


def _density_ticks(zmax: float) -> dict:
    step = 1 if zmax <= 6 else 2 if zmax <= 12 else 5
    vals = sorted({0.0, 1.0, *np.arange(step, zmax + 1e-9, step).tolist()})
    return {"tickvals": vals, "ticktext": ["1 = uniform" if v == 1 else f"{v:g}" for v in vals]}


def density_map_figure(
    x_centers,
    y_centers,
    ratio,
    *,
    reference: dict | None = None,
    frame: dict | None = None,
    title: str = "",
    zmax: float,
    extent: tuple[float, float, float, float] | None = None,
    points: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> go.Figure:
    """Server-binned density (ratio to a uniform sphere) as a heatmap on the Mollweide plane (map units).

    ``zmax``: the colour scale's upper end, from the services
    (:func:`orientscope.services.map_data.density_grids`); one value for figures shown side by
    side, so that equal colours mean equal densities. ``extent`` = (x0, x1, y0, y1), Mollweide units: the
    region shown (default the whole map). ``points`` (x, y, axis 1..3), (n,) each: the points of a set too
    small for a density (its cells are empty; its density would be a few blocks), drawn with the map's marker rule.
    """
    ratio = np.asarray(ratio, np.float32)
    heat = go.Heatmap(
        x=(np.asarray(x_centers, np.float64) * MAP_SCALE).astype(np.float32),
        y=(np.asarray(y_centers, np.float64) * MAP_SCALE).astype(np.float32),
        z=ratio,
        colorscale=CONTINUOUS_SCALE,
        zmin=0,
        zmax=zmax,
        hoverongaps=False,
        colorbar={
            "title": {"text": "density ÷ uniform", "side": "right"},
            "thickness": 12,
            **_density_ticks(zmax),
        },
        # its hover words ("density 1.23× uniform") are the map component's, from these cells, on the first paint
        # and in Dash alike (frontend_assets/map_component.js densityText), beside the other map's at that place
        hoverinfo="skip",
        meta={"kind": "density", "zmax": zmax},
    )
    traces = [heat, *_frame_traces(frame, MAP_SCALE), reference_trace(reference, "scatter")]
    if points is not None:
        traces.append(density_points_trace(*points))
    return unvalidated_figure(traces, layout=_map_layout(title, extent))


DENSITY_POINTS_PX = (560, 280)  # about the pixels of one of the density view's two maps (the marker rule's plot)


def density_points_trace(x: np.ndarray, y: np.ndarray, axes: np.ndarray) -> dict:
    """A small set's axis points (Mollweide x, y and axis 1..3, (n,) each) over its density, in the axes' colours,
    sized and outlined by the map's marker rule; the hover is the server's pick (the card), not plotly's."""
    axes = np.asarray(axes, np.int64)
    marker = vector_marker(np.size(x), *DENSITY_POINTS_PX)
    return {
        "type": "scatter",
        "x": (np.asarray(x, np.float64) * MAP_SCALE).astype(np.float32),
        "y": (np.asarray(y, np.float64) * MAP_SCALE).astype(np.float32),
        "mode": "markers",
        "marker": {**marker, "color": [AXIS_COLORS[int(a)] for a in axes]},
        "hoverinfo": "skip",
        "showlegend": False,
        "meta": {"kind": "points", "n_points": int(np.size(x))},
    }


def sphere_figure(
    vectors: np.ndarray,
    color: ColorSpec,
    *,
    reference=None,
    title: str = "",
    ids: np.ndarray | None = None,
    highlight: np.ndarray | None = None,
    axes: np.ndarray | None = None,
) -> go.Figure:
    """3D unit-sphere view of axis vectors (n_points, 3) in draw order; ``ids`` (n_points,) name each
    point's molecule on hover, and ``axes`` (n_points,) its axis 1..3 (the points' customdata: the hover card
    describes that axis's point). ``highlight`` (n_points,) bool marks SMARTS matches: as on the flat map, the
    other points are drawn grey and dimmed, without the colour scale, and the matches over them in the
    highlight colour (their own trace, after the wire sphere and the points)."""
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
    shape = vector_marker(len(v), *SPHERE_PX)  # the markers' size and outline for that many points
    size = shape["size"]
    marker = color_marker(color, size) | shape if highlight is None else {"size": size, "color": OTHER_GREY}
    marker.pop("opacity", None)

    def dots(keep: np.ndarray, marker: dict, **kwargs) -> go.Scatter3d:
        named = (
            {"hoverinfo": "none"}
            if ids is None
            else {"text": np.asarray(ids)[keep].astype(str), "hovertemplate": "molecule %{text}<extra></extra>"}
        )
        if ids is not None and axes is not None:
            named |= {"customdata": np.asarray(axes)[keep].astype(np.int8),
                      "hovertemplate": "molecule %{text} · axis %{customdata}<extra></extra>"}  # fmt: skip
        return go.Scatter3d(x=v[keep, 0], y=v[keep, 1], z=v[keep, 2], mode="markers", marker=marker, **named, **kwargs)

    every = np.arange(len(v))
    traces = [wire, dots(every, marker, name="axes", showlegend=False, meta={"kind": "points", "n_points": len(v)})]
    if highlight is not None:  # the matches stand out over the others, muted and grey
        traces[-1].opacity = MUTED_OPACITY
        matched = np.flatnonzero(np.asarray(highlight, bool))
        mark = {"size": size + 1.5, "color": HIGHLIGHT}
        traces.append(dots(matched, mark, name="SMARTS match", showlegend=False,
                           meta={"kind": "highlight", "n_points": int(matched.size)}))  # fmt: skip
        color = ColorSpec("categorical", labels=[NO_MATCH, "SMARTS match"], colors=[OTHER_GREY, HIGHLIGHT])
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
                marker={"size": 7, "color": REFERENCE_STAR, "line": {"color": "#000", "width": 1}},
                meta={"kind": "reference"},
            )
        )
    fig = _base_layout(go.Figure(traces + _legend_traces(color)), title)
    fig.update_layout(
        # the legend entries are 2D traces: without this plotly draws empty 2D axes around the scene
        xaxis={"visible": False},
        yaxis={"visible": False},
        scene={
            "aspectmode": "cube",
            "xaxis": {"range": [-1.1, 1.1]},
            "yaxis": {"range": [-1.1, 1.1]},
            "zaxis": {"range": [-1.1, 1.1]},
        },
    )
    return fig


TOO_FEW_FOR_HISTOGRAM = "Too few molecules for an angle histogram: no bin holds an angle."
UNIFORM_LABEL = "uniform (Haar) = 1"
CONTROL_NAME = "control (random rotations)"
# The band lies over the bars, light enough to show them through it, with an edge that shows where it stops.
BAND_COLOR, BAND_EDGE = "rgba(90, 90, 90, 0.16)", "rgba(40, 40, 40, 0.75)"
# The histogram's height and bottom band (px): under the plot, the x-axis title, the legend, then the
# footnote, each at a fixed distance below the plot so that none is cut off or overlaps another.
HISTOGRAM_HEIGHT, HISTOGRAM_BOTTOM = 400, 150
HISTOGRAM_BELOW_PX = {"legend": 58, "footnote": 92}


def too_few_angles_text(n: int, min_expected: float) -> str:
    """Why no histogram is drawn for ``n`` angles: two bins need ``2 · min_expected`` expected angles."""
    return (
        f"Too few molecules for an angle histogram: {format_count(n)} angles to the reference, and each bin must "
        f"expect at least {format_number(min_expected, 'g')} under uniform poses, which leaves one bin."
    )


def angle_histogram_note(ratio: dict) -> str:
    """The footnote, in lines as long as the 180° note: how the bins and the band are chosen, then that peak."""
    level = format_percent(ratio["band_level"], digits=0, signed=False)
    return (
        f"Bins widen from 0° until uniform poses expect {format_number(ratio['min_expected'], 'g')} angles in each. "
        f"Grey: {level} of uniform (Haar-random) sets<br>keep every bar inside it; a bar inside is chance, not proof "
        f"of uniform poses (the verdict weighs every test).<br>{ANGLE_PEAK_NOTE}"
    )


def log_ticks(low: float, high: float) -> dict:
    """``tickvals`` and ``ticktext`` of a log axis spanning ``low``..``high`` (both > 0).

    Every label is the whole number ("0.5", "50"): plotly's own log ticks label the 2s and 5s of a decade
    by their digit alone, so 0.5 and 50 both read "5". The ticks are 1, 1.5, 2, 3, 5 and 7 of each decade over
    up to one decade, 1, 2 and 5 over up to 2.5, 1 and 3 over up to 5, else the decades alone.
    """
    span = np.log10(high / low)
    steps = (1.0, 1.5, 2.0, 3.0, 5.0, 7.0) if span <= 1 else (1.0, 2.0, 5.0) if span <= 2.5 else (1.0, 3.0)
    steps = steps if span <= 5 else (1.0,)
    decades = np.arange(np.floor(np.log10(low)), np.ceil(np.log10(high)) + 1)
    values = [float(m * 10.0**e) for e in decades for m in steps]
    values = [v for v in values if low <= v * (1 + 1e-9) and v <= high * (1 + 1e-9)]
    return {"tickvals": values, "ticktext": [format_count(v) if v >= 1000 else format_number(v, "g") for v in values]}


def _below_plot(px: float) -> float:
    """Paper y of ``px`` pixels below the histogram's plot area."""
    plot_px = HISTOGRAM_HEIGHT - figure_layout("")["margin"]["t"] - HISTOGRAM_BOTTOM
    return -px / plot_px


RATIO_COLUMNS = ("observed", "expected", "ratio")


def _angle_bin_hover(
    low_deg: float, high_deg: float, observed: float, expected: float, ratio, band, level: str = "95 %"
) -> str:
    """``0–90°: 7 angles, 6.4 expected if uniform (ratio 1.1); 95 % band: 1–13 (ratio 0.16–2)``.

    Every number as it reads beside the others; a count outside the band says so.
    """
    count = round(observed)
    shown = "no angle" if count == 0 else f"{format_count(count)} angle{'' if count == 1 else 's'}"
    low, high = band
    where = (
        " — above what uniform sets give" if count > high else " — below what uniform sets give" if count < low else ""
    )
    return (
        f"{format_number(low_deg, '.0f')}–{format_number(high_deg, '.0f')}°: {shown}, "
        f"{format_number(expected, '.2g')} expected if uniform"
        + (f" (ratio {format_number(ratio, '.3g')})" if is_number(ratio) else "")
        + f"; {level} band of uniform sets: {format_count(low)}–{format_count(high)} angles "
        f"(ratio {format_number(low / expected, '.2g')}–{format_number(high / expected, '.2g')}){where}"
    )


def _band_trace(ratio: dict, floor: float, name: str) -> go.Scatter:
    """The uniform band as a grey step polygon; a band reaching 0 is drawn down to the axis' ``floor``.

    It is drawn over the bars: behind them, its lower edge was hidden inside every bar.
    """
    edges = np.degrees(np.asarray(ratio["bin_edges_rad"], np.float64))
    band = np.maximum(np.asarray(ratio["band"], np.float64), floor)
    x = np.repeat(edges, 2)[1:-1]
    return go.Scatter(
        x=np.r_[x, x[::-1]],
        y=np.r_[np.repeat(band[:, 1], 2), np.repeat(band[::-1, 0], 2)],
        fill="toself",
        fillcolor=BAND_COLOR,
        line={"width": 1, "color": BAND_EDGE},
        mode="lines",
        name=name,
        hoverinfo="skip",
        meta={"kind": "band"},
    )


def angle_histogram_figure(data: dict | None, control: dict | None) -> go.Figure:
    """Angles to the reference orientation as the ratio to the Haar (uniform) expectation, log scale.

    Each argument is a report ``angle_histogram`` section; its ``haar_ratio``
    (:func:`orientscope.science.so3_stats.haar_ratio_histogram`) is drawn:
    1 = as many angles as uniform poses give, 10 = ten times as many. Every
    bin expects at least a few angles under uniform poses (wide bins near
    0°, where the Haar density vanishes), and a grey band shows where
    uniform sets keep every bar at once, so a bar outside it is an excess
    chance rarely gives. Bins with no angle are left empty. A bar's hover
    gives its count, what uniform poses expect there and the band, in
    significant digits; its customdata is [low °, high °, observed, expected].
    """
    given = {name: (hist or {}).get("haar_ratio") for name, hist in (("dataset", data), (CONTROL_NAME, control))}
    given = {name: ratio for name, ratio in given.items() if ratio}
    # one bin is all of 0–180°: its ratio is 1 whatever the poses, so there is nothing to draw
    ratios = {name: ratio for name, ratio in given.items() if len(ratio["ratio"]) >= 2}
    fig = go.Figure()
    for name, ratio in ratios.items():
        edges = np.degrees(np.asarray(ratio["bin_edges_rad"], np.float64))
        columns = [ratio[c] for c in RATIO_COLUMNS]
        level = format_percent(ratio["band_level"], digits=0, signed=False)
        fig.add_trace(
            go.Bar(
                x=(edges[:-1] + edges[1:]) / 2,
                y=[np.nan if r is None else r for r in ratio["ratio"]],
                width=np.diff(edges),
                name=name,
                marker={"color": CONTROL_SERIES if name == CONTROL_NAME else DATASET_SERIES},
                opacity=0.55,
                customdata=np.column_stack([edges[:-1], edges[1:], *columns[:2]]),
                hovertext=[
                    _angle_bin_hover(*row, level)
                    for row in zip(edges[:-1], edges[1:], *columns, ratio["band_count"], strict=True)
                ],
                hovertemplate="%{hovertext}<extra>" + name + "</extra>",
            )
        )
    shown = np.concatenate([np.asarray(t.y, np.float64) for t in fig.data]) if fig.data else np.zeros(0)
    shown = shown[np.isfinite(shown) & (shown > 0)]
    if not shown.size:
        # Nothing to draw: an empty log axis (plotly's default runs from 10^-1 to 10^4) reads as data.
        few = next(iter(given.values()), None)
        text = too_few_angles_text(few["n"], few["min_expected"]) if few and few["n"] else TOO_FEW_FOR_HISTOGRAM
        return message_figure(text, height=320)
    band = np.concatenate([np.ravel(r["band"]) for r in ratios.values()])
    band = band[band > 0]
    # The axis always holds 1 (uniform) and the band's top, with a little room above and below the bars.
    low = min(shown.min(), band.min(initial=1.0), 1.0) / 1.5
    high = max(shown.max(), band.max(initial=1.0), 1.0) * 1.5
    level = format_percent(next(iter(ratios.values()))["band_level"], digits=0, signed=False)
    drawn = []
    for name, ratio in ratios.items():
        if any(ratio["bin_edges_rad"] == d["bin_edges_rad"] and ratio["band"] == d["band"] for d in drawn):
            continue  # the control's band is the dataset's when both count the same angles
        label = f"{level} band of uniform sets" + ("" if not drawn else f" ({name})")
        fig.add_trace(_band_trace(ratio, low, label))
        drawn.append(ratio)
    fig.add_hline(y=1, line={"color": "#000000", "width": 2, "dash": "dash"})
    _base_layout(fig, "Angle to the reference orientation, as a ratio to uniform poses", height=HISTOGRAM_HEIGHT)
    fig.update_layout(
        barmode="overlay",
        uirevision=None,
        margin={"b": HISTOGRAM_BOTTOM},
        legend={"y": _below_plot(HISTOGRAM_BELOW_PX["legend"]), "yanchor": "top"},
        annotations=[
            # On a log axis an annotation's y is the exponent (plotly's rule): log10(1) = 0 puts it on the line.
            {"text": UNIFORM_LABEL, "x": 1, "xref": "paper", "xanchor": "right", "y": 0, "yref": "y",
             "yanchor": "bottom", "showarrow": False, "font": {"size": 12}, "bgcolor": "rgba(255,255,255,0.85)",
             "name": "uniform"},
            {"text": angle_histogram_note(drawn[0]), "x": 0, "y": _below_plot(HISTOGRAM_BELOW_PX["footnote"]),
             "xref": "paper", "yref": "paper", "showarrow": False, "xanchor": "left", "yanchor": "top",
             "align": "left", "font": {"size": 11}, "name": "footnote"},
        ],
    )  # fmt: skip
    fig.update_xaxes(title="angle (degrees)", range=[0, 180])
    fig.update_yaxes(
        title="observed / uniform", type="log", range=[np.log10(low), np.log10(high)], **log_ticks(low, high)
    )
    return fig


def message_figure(text: str, height: int = 460) -> dict:
    """An empty figure that shows a message instead of data (a plain dict: go.Figure costs ~60 ms here)."""
    return {
        "data": [],
        "layout": {
            "template": template_json(),
            "height": height,
            "xaxis": {"visible": False},
            "yaxis": {"visible": False},
            "margin": {"l": 10, "r": 10, "t": 20, "b": 10},
            "annotations": [
                {
                    "text": text,
                    "x": 0.5,
                    "y": 0.5,
                    "xref": "paper",
                    "yref": "paper",
                    "showarrow": False,
                    "font": {"size": 15},
                }
            ],
        },
    }
