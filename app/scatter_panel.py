"""The scatter view: a stored property (y) against a coordinate of one principal axis (x), answered by the
services (``orientscope.services.scatter``): its controls and its figure.

Points at or below the map's point budget (hover names the molecule, a click opens it through the
dashboard's click callback), else the services' aggregated image. Both are coloured by the dashboard's
Colour-by as the map is (``orientscope.services.scatter.scatter_colors``): the points' marker colour with
a colour bar or legend, the image's mean value or mean category colour per pixel. ``layout.meta.map``
carries the view, mode and molecules drawn, as every map figure does (the browser's test hook).
"""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
from dash import dcc, html

from orientscope.app import data, ids
from orientscope.core.palette import AXIS_COLORS, CIVIDIS, OTHER_GREY
from orientscope.figures.plots import (
    ColorSpec,
    color_marker,
    colorbar_trace,
    figure_layout,
    legend_entry,
    message_figure,
    template_json,
    typed_arrays,
)
from orientscope.figures.state import ViewState
from orientscope.services.errors import InvalidInput
from orientscope.services.map_markers import vector_marker
from orientscope.services.map_view import MapColors
from orientscope.services.scatter import (
    COORDINATE_NAMES,
    COORDINATES,
    IMAGE_SIZE,
    ScatterPoints,
    ScatterQuery,
    resolve_scale,
    scatter_colors,
    scatter_image,
    scatter_mode,
    scatter_points,
)


def scatter_controls() -> html.Div:
    """Property, axis, coordinate and scale; shown in the scatter view only (frontend_assets/scatter.js)."""
    return html.Div(
        [
            html.Label(
                [
                    "Property (y)",
                    dcc.Dropdown(id=ids.SCATTER_PROP, clearable=False, options=[], placeholder="the first"),
                ],
                className="control",
            ),
            html.Label(
                ["Axis (x)", dcc.RadioItems(id=ids.SCATTER_AXIS, options=["1", "2", "3"], value="1", inline=True)],
                className="control",
            ),
            html.Label(
                [
                    "Coordinate",
                    dcc.RadioItems(
                        id=ids.SCATTER_COORD,
                        options=[{"label": COORDINATE_NAMES[c].split(" ")[0], "value": c} for c in COORDINATES],
                        value="lat",
                        inline=True,
                    ),
                ],
                className="control",
            ),
            html.Label(
                [
                    "Scale (y)",
                    dcc.RadioItems(id=ids.SCATTER_SCALE, options=["linear", "log"], value="linear", inline=True),
                    # why the scale shown is not the one clicked (a log scale of values <= 0)
                    html.Span(id=ids.SCATTER_SCALE_HINT, className="note", role="status"),
                ],
                className="control",
            ),
        ],
        id=ids.SCATTER_CONTROLS,
        className="controls scatter-controls",
        hidden=True,
    )


def property_options(data_dir: Path, dataset: str | None) -> list[dict]:
    """The scatter's property choices: every stored property of the dataset."""
    try:
        names = data.property_names(data_dir, dataset) if dataset else []
    except data.OrientScopeError:
        names = []
    return [{"label": n, "value": n} for n in names]


def scatter_query(data_dir: Path, st: ViewState) -> ScatterQuery:
    """The services' query of a scatter view state as :func:`resolved` draws it."""
    st, _ = resolved(data_dir, st)
    if not st.prop:
        raise data.OrientScopeError(f"dataset {st.dataset!r} has no stored property to plot")
    return ScatterQuery(st.dataset, st.prop, int(st.xaxis), st.coord, st.yscale or "linear")


def resolved(data_dir: Path, st: ViewState) -> tuple[ViewState, str]:
    """A scatter view state as the view draws it, so that the controls show what is drawn, and why its scale is
    not the one asked for ("" when it is): the property (the dataset's first when none is chosen) and the scale
    (:func:`orientscope.services.scatter.resolve_scale`: the one that suits the data when none is chosen,
    linear for a log scale of values ≤ 0). Other views, and a property the dataset lacks, are left as they are."""
    if st.view != "scatter" or not st.ready:
        return st, ""
    try:
        prop = st.prop or next(iter(data.property_names(data_dir, st.dataset)), None)
        if prop is None:
            return st, ""
        scale, why = resolve_scale(data_dir, st.dataset, prop, st.yscale)
    except (InvalidInput, data.OrientScopeError):  # the figure says what is wrong
        return st, ""
    return st.with_(prop=prop, yscale=scale), why or ""


def _point_traces(points: ScatterPoints, colors: MapColors | None) -> list[dict]:
    """The points as scattergl traces: the first holds every molecule with a colour (marker colours on a scale,
    with its colour bar), a grey one those without a value."""
    shape = vector_marker(points.x.size, *IMAGE_SIZE)  # the map's marker rule: size and outline by the count
    size = shape["size"]
    if colors is None:  # by axis: the chosen axis's colour, as the map draws it
        groups = [(np.arange(points.x.size), {**shape, "color": AXIS_COLORS[points.query.axis], "opacity": 0.6})]
    elif colors.kind == "categorical":
        spec = ColorSpec("categorical", colors.codes.astype(np.float32), list(colors.labels), list(colors.colors))
        groups = [(np.arange(points.x.size), color_marker(spec, size) | shape)]
    else:
        known = np.isfinite(colors.values)
        marker = color_marker(ColorSpec("continuous", colors.values[known], title=colors.title), size) | shape
        groups = [(np.flatnonzero(known), marker)]
        if not known.all():
            groups.append((np.flatnonzero(~known), {**shape, "color": OTHER_GREY, "opacity": 0.6}))
    traces = [
        {
            "type": "scattergl",
            "mode": "markers",
            # typed arrays (base64), as the map's points: a third of the bytes of JSON numbers
            "x": points.x[idx].astype(np.float32),
            "y": points.y[idx].astype(np.float32),
            "customdata": points.ids[idx].tolist(),
            "marker": marker,
            # hover and clicks are the server's pick, as the map's (frontend_assets/scatter.js): plotly's own
            # would name another molecule than a click opens, and never the molecules sharing a pixel
            "hoverinfo": "none",
            "name": "molecules" if k == 0 else "no value",
            "showlegend": k > 0,
        }
        for k, (idx, marker) in enumerate(groups)
    ]
    if colors is not None and colors.kind == "categorical":
        traces += [
            legend_entry(label, color, {"kind": "legend"})
            for label, color in zip(colors.labels, colors.colors, strict=True)
        ]
    return traces


def _image_legend(colors: MapColors | None) -> list[dict]:
    """The traces that explain the image's colours: a colour bar of values or a legend of categories."""
    if colors is None:
        return []
    if colors.kind == "categorical":
        return [
            legend_entry(lab, col, {"kind": "legend"}) for lab, col in zip(colors.labels, colors.colors, strict=True)
        ]
    bar = {**colorbar_trace({"title": colors.title, "cmin": colors.lo, "cmax": colors.hi}), "type": "scatter"}
    bar["marker"]["colorscale"] = [[i / (len(CIVIDIS) - 1), c] for i, c in enumerate(CIVIDIS)]  # the image's own
    return [bar]


def scatter_figure(
    data_dir: Path, st: ViewState, region: tuple[float, float, float, float] | None = None
) -> tuple[dict, list[str]]:
    """The scatter view's figure (a plain dict) and its notes, showing ``region`` (x0, x1, y0, y1 in its data
    units, y in log10 units on a log scale; default the view's home region, ``ScatterPoints.home``)."""
    points = scatter_points(data_dir, scatter_query(data_dir, st))
    colors, color_notes = scatter_colors(data_dir, points, st.color, st.grouping)
    mode = scatter_mode(points)
    title = f"{points.y_title} against {points.x_title} · {points.x.size:,} molecules"
    layout = {
        **figure_layout(title),
        "template": template_json(),
        "xaxis": {"title": {"text": points.x_title}, "zeroline": False},
        "yaxis": {"title": {"text": points.y_title}, "type": "log" if points.log else "linear"},
        "margin": {"l": 70, "r": 20, "t": 40, "b": 50},
        "hovermode": "closest",
        "clickmode": "none",  # the server picks (frontend_assets/scatter.js)
        "dragmode": "zoom",
    }
    home = list(points.home)  # where double-click and home return (frontend_assets/scatter.js)
    shown = region or points.home
    layout["xaxis"]["range"] = [shown[0], shown[1]]
    layout["yaxis"]["range"] = [shown[2], shown[3]]  # log10 units on a log axis
    grid = None
    if mode == "points":
        traces = _point_traces(points, colors)
    else:
        image = scatter_image(points, region, colors=colors)
        (x0, x1), (y0, y1) = image.x_range, image.y_range
        grid = {"x0": x0, "x1": x1, "y0": y0, "y1": y1, "width": image.width, "height": image.height}
        layout["images"] = [
            {
                "source": "data:image/png;base64," + base64.b64encode(image.png).decode("ascii"),
                "xref": "x",
                "yref": "y",
                "x": x0,
                "y": y1,
                "sizex": x1 - x0,
                "sizey": y1 - y0,
                "sizing": "stretch",
                "layer": "below",
            }
        ]
        traces = [
            {
                "type": "scatter",
                "x": [x0, x1],
                "y": [None, None],
                "mode": "markers",
                "showlegend": False,
                "hoverinfo": "skip",
            },  # plotly draws no axes without a trace
            *_image_legend(colors),
        ]
    q = points.query  # what an image click or zoom asks the server for (frontend_assets/scatter.js)
    query = {"prop": q.prop, "axis": q.axis, "coord": q.coord, "scale": "log" if points.log else "linear"}
    paint = {"color": st.color, "grouping": st.grouping}  # and how a zoom's image is coloured
    layout["meta"] = {
        "map": {"view": "scatter", "mode": mode, "drawn": int(points.x.size), "dataset": st.dataset,
                "token": f"s{id(points):x}-{id(colors):x}-{mode}-{hash(region) & 0xFFFFFF:x}", "x": points.x_title,
                "y": points.y_title,
                "log": points.log, "color": None if colors is None else colors.title, "query": query, "paint": paint,
                "home": home, "grid": grid}
    }  # fmt: skip
    return typed_arrays({"data": traces, "layout": layout}), [*points.notes, *color_notes]


def scatter_outputs(
    data_dir: Path, st: ViewState, region: tuple[float, float, float, float] | None = None
) -> tuple[dict, list]:
    """(figure, notes under it) of a scatter view state showing ``region`` (default its home region); a message
    figure and the error on bad input."""
    try:
        fig, notes = scatter_figure(data_dir, st, region)
    except data.OrientScopeError as err:
        return message_figure(str(err)), [html.P(str(err), className="error", role="alert")]
    return fig, [html.P(" ".join(n + "." for n in notes), className="note")] if notes else []
