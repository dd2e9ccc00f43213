"""From a view state and a viewport to the map figure the browser draws, cached as ready-to-send JSON.

Above the point budget (``ORIENTSCOPE_MAP_POINT_BUDGET``) the flat map is the
server's aggregated image of the viewport (``orientscope.services.map_raster``) under
vector overlays; at or below it, the region's real points with their molecule ids.
Every figure's ``layout.meta.map`` tells the browser what was drawn (mode, distinct
molecules, the REST query for clicks and hover). The same view is served from a
byte-bounded cache (``orientscope.services.bytecache``) of plain dicts.
"""

from __future__ import annotations

import base64
import itertools
import secrets
from pathlib import Path

import numpy as np
import orjson
import plotly.graph_objects as go

from orientscope.figures.compat import unvalidated_figure
from orientscope.figures.mapview import MapLayers, map_layers, relevant_state, shown_points
from orientscope.figures.plots import (
    MAP_RANGE_X,
    MAP_RANGE_Y,
    MAP_SCALE,
    ColorSpec,
    density_map_figure,
    orientation_image_spec,
    orientation_map_spec,
    selection_ring,
    sphere_figure,
    typed_arrays,
)
from orientscope.figures.state import ViewState
from orientscope.services.bytecache import nbytes, shared_cache
from orientscope.services.datasets import dataset_summary
from orientscope.services.map_data import DENSITY_MIN_POINTS, MapData, density_grids, frame_lines, reference_points
from orientscope.services.map_raster import MapRender, Viewport, render_map
from orientscope.services.statistics import REFERENCE_KEY

# Each drawn flat map's token, unique across the server's life and its restarts (an object id may be
# reused): the browser's test hook tells figures apart by it.
_PROCESS = secrets.token_hex(3)
_DRAWS = itertools.count()


def _new_token() -> str:
    return f"{_PROCESS}-{next(_DRAWS):x}"


def reference_of(reference, axes) -> dict | None:
    """The shown axes of a reference orientation as map points (None without one)."""
    return reference_points(reference, sorted({int(a) for a in axes})) if reference else None


def density_figures(
    panels: list[tuple[MapLayers, object, str]], region: tuple[float, float, float, float] | None = None
) -> list[go.Figure]:
    """Density maps of (layers, reference orientation, title) on one shared colour scale (1 = uniform), of
    ``region`` (x0, x1, y0, y1, Mollweide units; default the whole map) binned on its own cells.

    Maps shown side by side (a dataset and its control, two compared sets) must share
    the scale, or a uniform set looks as concentrated as an aligned one.
    """
    # binned from the maps' own arrays: gathering a large view's points first took seconds (10M molecules)
    point_sets = [(layers.md.x, layers.md.y, layers.rows, layers.axes) for layers, _, _ in panels]
    grids, zmax = density_grids(point_sets, region)
    figures = []
    for g, (layers, ref, title) in zip(grids, panels, strict=True):
        points = None  # a set too small for a density is drawn as its points (three molecules were blocks of 40x)
        if layers.n_points < DENSITY_MIN_POINTS:
            points = (*layers.md.xy(layers.rows, layers.axes), layers.axes)
        figures.append(
            density_map_figure(
                g.x_centers,
                g.y_centers,
                g.ratio,
                reference=reference_of(ref, layers.shown),
                frame=frame_lines(),
                title=title,
                zmax=zmax,
                extent=region,
                points=points,
            )  # fmt: skip
        )
    return figures


def density_figure(layers: MapLayers, reference, title: str) -> go.Figure:
    """Server-binned density of the layers' points, with the reference orientation marked."""
    return density_figures([(layers, reference, title)])[0]


def distinct_molecules(layers: MapLayers) -> int:
    """Molecules with at least one point in the layers (a pass over the rows, not a sort: 1 ms against
    50 ms for QM9's 392k points)."""
    seen = np.zeros(layers.md.n_molecules, bool)
    seen[layers.rows] = True
    return int(np.count_nonzero(seen))


def selected_ring(md: MapData, st: ViewState, selected: str | None) -> list[list[float]]:
    """Points to ring for the selected molecule: map units on the Mollweide plane (the map and the density
    view), unit vectors [x, y, z] on the 3D sphere (ringed by frontend_assets/map_sphere.js)."""
    if st.view == "sphere":
        picked = _selected_points(md, st.axes, selected)
        if picked is None:
            return []
        rows, axes = picked  # md.vectors numbers the axes 1..3, the map arrays' columns 0..2
        return md.vectors(rows, axes + 1).astype(float).round(5).tolist()
    return selection_ring(selected_xy(md, st.axes, selected)) if st.view in ("map", "density") else []


def _selected_points(md: MapData, axes: str, selected: str | None) -> tuple[np.ndarray, np.ndarray] | None:
    """(rows, axes) of the selected molecule's shown axis points (None if nothing valid is selected)."""
    if not selected:
        return None
    try:
        row = md.row_of(selected)
    except KeyError:
        return None
    shown = np.array(sorted({int(a) for a in axes if a in "123"}) or [1, 2, 3])
    return np.full(len(shown), row), shown - 1


def selected_xy(md: MapData, axes: str, selected: str | None):
    """Mollweide x/y of the selected molecule's shown axes (None if nothing valid is selected)."""
    picked = _selected_points(md, axes, selected)
    return None if picked is None else (md.x[picked], md.y[picked])


def _title_and_reference(data_dir: Path, st: ViewState, layers: MapLayers):
    report = dataset_summary(data_dir, st.dataset)  # not the dataset's view: a map needs only its map arrays
    ref = report.get(REFERENCE_KEY) if st.table == "original" else (report.get("control", {}).get(REFERENCE_KEY))
    title = f"{report.get('name', st.dataset)}: {layers.n_points:,} axis points of {layers.n_molecules:,} molecules"
    if layers.n_matches is not None:
        title += f" · {layers.n_matches:,} match {st.smarts}"
    return title, ref


# The first draw of a view, before the browser has said how large its plot is: the whole map
# range at about the pixel size of a wide plot. Zooming or panning then re-aggregates the
# visible region at the plot's own size (the map-viewport store, set by orientscope.js).
DEFAULT_VIEWPORT = Viewport(MAP_RANGE_X[0] / MAP_SCALE, MAP_RANGE_X[1] / MAP_SCALE, MAP_RANGE_Y[0] / MAP_SCALE,
                            MAP_RANGE_Y[1] / MAP_SCALE, 900, 458)  # fmt: skip


def region_viewport(region: tuple[float, float, float, float]) -> dict:
    """The viewport of a URL's zoom (x0, x1, y0, y1 Mollweide units): that region, in square pixels at about
    the first draw's size. The browser asks for the rest if its plot, widened to its own aspect, shows more."""
    x0, x1, y0, y1 = region
    scale = DEFAULT_VIEWPORT.width / max(x1 - x0, y1 - y0)
    width, height = max(1, round((x1 - x0) * scale)), max(1, round((y1 - y0) * scale))
    return {"x0": x0, "x1": x1, "y0": y0, "y1": y1, "width": width, "height": height}


def viewport_of(raw: dict | None) -> Viewport:
    """The viewport a browser reported ({x0, x1, y0, y1 Mollweide units, width, height pixels}), else the default."""
    if not raw:
        return DEFAULT_VIEWPORT
    try:
        return Viewport(*(float(raw[k]) for k in ("x0", "x1", "y0", "y1")), int(raw["width"]), int(raw["height"]))
    except (KeyError, TypeError, ValueError):
        return DEFAULT_VIEWPORT


def _draw_meta(st: ViewState, mode: str, drawn: int, token: str, render: MapRender | None = None) -> dict:
    """What the browser needs about a drawn map: the test hook's values and the REST query of its points."""
    query = {"axes": st.axes, "color": st.color, "grouping": st.grouping or "formula", "table": st.table}
    query |= {k: v for k, v in (("group", st.group), ("smarts", st.smarts)) if v}
    meta = {"view": st.view, "mode": mode, "drawn": int(drawn), "dataset": st.dataset, "query": query, "token": token}
    if render is not None:
        meta |= {"kind": render.kind, "n_points": render.n_points, "viewport": _grid(render.viewport)}
        if render.mode == "image":  # the image's own pixels: the grid a hover's and a click's pick counts on
            meta["grid"] = _grid(render.image_viewport)
        meta["state"] = st.map_state()  # the view state drawn
    return meta


def _grid(vp: Viewport) -> dict:
    return {"x0": vp.x0, "x1": vp.x1, "y0": vp.y0, "y1": vp.y1, "width": vp.width, "height": vp.height}


def _color_spec(colors, keep: np.ndarray) -> ColorSpec:
    """The dashboard's colour spec of the points ``keep`` of a view."""
    if colors.kind == "categorical":
        return ColorSpec("categorical", colors.codes[keep], list(colors.labels), list(colors.colors), colors.title)
    return ColorSpec("continuous", colors.values[keep], title=colors.title)


def _flat_figure(data_dir: Path, st: ViewState, vp: Viewport) -> dict:
    """The Mollweide map of a region: its aggregated image above the point budget, else its points."""
    layers = map_layers(data_dir, st)
    points = shown_points(data_dir, st, layers)
    render = render_map(points, vp)
    title, ref = _title_and_reference(data_dir, st, layers)
    reference = reference_of(ref, layers.shown)
    if render.mode == "image":
        image = "data:image/png;base64," + base64.b64encode(render.png()).decode("ascii")
        grid = render.image_viewport
        spec = orientation_image_spec(
            image, (vp.x0, vp.x1, vp.y0, vp.y1), render.scale, frame=frame_lines(), reference=reference,
            highlight=points.highlight is not None, title=title, image_extent=(grid.x0, grid.x1, grid.y0, grid.y1),
        )  # fmt: skip
    else:
        keep = render.index
        x, y = points.x[keep], points.y[keep]
        matched = points.highlight[keep] if points.highlight is not None else np.zeros(keep.size, bool)
        spec = orientation_map_spec(
            x, y, _color_spec(points.colors, keep), frame=frame_lines(),
            highlight_xy=(x[matched], y[matched]) if matched.any() else None,
            reference=reference, title=title, n_molecules=points.n_molecules,
            extent=(vp.x0, vp.x1, vp.y0, vp.y1), plot_px=(vp.width, vp.height),
        )  # fmt: skip
    spec["layout"]["meta"] = {"map": _draw_meta(st, render.mode, render.n_drawn, _new_token(), render)}
    return spec


def map_figure(data_dir: Path, st: ViewState) -> tuple[go.Figure, MapLayers]:
    """The density, sphere or whole-map figure of a view state (the map as the dashboard first draws it)."""
    layers = map_layers(data_dir, st)
    title, ref = _title_and_reference(data_dir, st, layers)
    if st.view == "density":
        fig = density_figure(layers, ref, title)
    elif st.view == "sphere":
        vectors = layers.md.vectors(layers.rows, layers.axes)
        fig = sphere_figure(
            vectors, layers.color, reference=ref, title=title, ids=layers.md.ids[layers.rows],
            highlight=layers.sphere_highlight, axes=layers.axes,
        )  # fmt: skip
    else:
        fig = unvalidated_figure(**_flat_figure(data_dir, st, DEFAULT_VIEWPORT))
    return fig, layers


def map_figure_json(data_dir: Path, st: ViewState, viewport: Viewport | None = None) -> tuple[dict, MapLayers]:
    """:func:`map_figure` as a JSON-ready dict (the flat map in ``viewport``, default the whole map), cached."""
    layers = map_layers(data_dir, st)
    vp = viewport if viewport is not None and st.view == "map" else DEFAULT_VIEWPORT
    key = (id(layers), vp)
    hit = shared_cache().get("map_figure", key)
    if hit is not None and hit[0] is layers:  # the id of a dropped layers object may be reused
        return hit[1], layers
    if st.view == "map":  # the common case, encoded without a go.Figure
        payload = typed_arrays(_flat_figure(data_dir, st, vp))
    else:
        payload = orjson.loads(map_figure(data_dir, st)[0].to_json())
        drawn = distinct_molecules(layers)
        mode = "image" if st.view == "density" else "points"  # a density is server-binned counts
        payload["layout"]["meta"] = {"map": _draw_meta(st, mode, drawn, f"{st.view[0]}{id(layers):x}")}
    shared_cache().put("map_figure", key, (layers, payload), size=nbytes(payload))  # the layers are cached apart
    return payload, layers


def density_pair_json(
    data_dir: Path, st: ViewState, viewport: Viewport | None = None
) -> tuple[tuple[dict, dict], MapLayers]:
    """The density view: the dataset's density and its control's beside it, on one colour scale, as JSON, of the
    region of ``viewport`` (default the whole map) binned anew on cells of its own (a zoom re-aggregates).

    Each figure's ``layout.meta.map`` names its table (the control's clicks and hover pick on the control),
    the view state and the viewport drawn.

    Cached per view state, region and pair of map data, not per pair of layers: the layers of a large view (30M
    points at 10M molecules) are too big to cache and are built again for each request (9 s at 10M
    molecules for the landing page), while their density is the same.
    """
    layers = map_layers(data_dir, st)
    control = map_layers(data_dir, st.with_(table="control"))
    region = None if viewport is None else (viewport.x0, viewport.x1, viewport.y0, viewport.y1)
    key = (str(data_dir), id(layers.md), id(control.md), relevant_state(st), region)
    hit = shared_cache().get("density_pair", key)
    if hit is not None and hit[0] is layers.md and hit[1] is control.md:  # the id of a dropped object may be reused
        return hit[2], layers
    report = dataset_summary(data_dir, st.dataset)
    _, ref = _title_and_reference(data_dir, st, layers)
    title = f"{report.get('name', st.dataset)} as stored · {layers.n_molecules:,} molecules"
    ctl_ref = (report.get("control") or {}).get(REFERENCE_KEY)
    ctl_title = "Control: the same molecules, randomly rotated"
    figures = density_figures([(layers, ref, title), (control, ctl_ref, ctl_title)], region)
    payload = tuple(orjson.loads(f.to_json()) for f in figures)
    # server-binned counts: an image in the test hook's terms, drawing every molecule of the view
    drawn = distinct_molecules(layers)
    shown = _grid(viewport or DEFAULT_VIEWPORT)
    for figure, table in zip(payload, ("original", "control"), strict=True):
        meta = _draw_meta(st.with_(table=table), "image", drawn, f"d{table[0]}{id(layers):x}{hash(region) & 0xFFFF:x}")
        figure["layout"]["meta"] = {"map": meta | {"viewport": shown, "state": st.map_state()}}
    if not (layers.pending or control.pending):  # a SMARTS search still runs: drawn again when it is done
        shared_cache().put("density_pair", key, (layers.md, control.md, payload), size=nbytes(payload))
    return payload, layers
