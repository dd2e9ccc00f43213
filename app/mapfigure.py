"""From a view state to the map figure the browser draws, cached as ready-to-send JSON.

Building the map and encoding its arrays costs about 50 ms at 392k points;
the same view (a shared link, a reload, another user) is then served from a
byte-bounded cache (``backend.services.bytecache``) of plain dicts whose arrays are
already base64 strings.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import plotly.graph_objects as go

from app import data
from app.compat import unvalidated_figure
from app.figures import (
    density_map_figure,
    density_zmax,
    orientation_map_spec,
    selection_ring,
    sphere_figure,
    typed_arrays,
)
from app.mapview import MapLayers, map_layers
from app.state import ViewState
from backend.services.bytecache import nbytes, shared_cache
from backend.services.map_data import MapData, density_grid, frame_lines, reference_points

DENSITY_POINTS_PER_CELL = 5


def reference_of(reference, axes) -> dict | None:
    """The shown axes of a reference orientation as map points (None without one)."""
    return reference_points(reference, sorted({int(a) for a in axes})) if reference else None


def density_figures(panels: list[tuple[MapLayers, object, str]]) -> list[go.Figure]:
    """Density maps of (layers, reference orientation, title) on one shared colour scale (1 = uniform).

    Maps shown side by side (a dataset and its control, two compared sets) must share
    the scale, or a uniform set looks as concentrated as an aligned one.
    """
    # Cells sized to the larger set (about 5 expected points each, at most 144 x 72): finer cells on a
    # small set show sampling noise, not orientation.
    nx = int(np.clip(np.sqrt(2 * max(p[0].rows.size for p in panels) / DENSITY_POINTS_PER_CELL), 24, 144)) // 2 * 2
    grids = [density_grid(*layers.md.xy(layers.rows, layers.axes), nx=nx, ny=nx // 2) for layers, _, _ in panels]
    zmax = density_zmax(*(g.ratio for g in grids))
    return [
        density_map_figure(
            g.x_centers,
            g.y_centers,
            g.ratio,
            reference=reference_of(ref, layers.shown),
            frame=frame_lines(),
            title=title,
            zmax=zmax,
        )
        for g, (layers, ref, title) in zip(grids, panels, strict=True)
    ]


def density_figure(layers: MapLayers, reference, title: str) -> go.Figure:
    """Server-binned density of the layers' points, with the reference orientation marked."""
    return density_figures([(layers, reference, title)])[0]


def selected_ring(md: MapData, st: ViewState, selected: str | None) -> list[list[float]]:
    """Map-unit points to ring for the selected molecule (none outside the Mollweide map view)."""
    return selection_ring(selected_xy(md, st.axes, selected)) if st.view == "map" else []


def selected_xy(md: MapData, axes: str, selected: str | None):
    """Mollweide x/y of the selected molecule's shown axes (None if nothing valid is selected)."""
    if not selected:
        return None
    try:
        row = md.row_of(selected)
    except KeyError:
        return None
    shown = np.array(sorted({int(a) for a in axes if a in "123"}) or [1, 2, 3])
    return md.x[row, shown - 1], md.y[row, shown - 1]


def _title_and_reference(data_dir: Path, st: ViewState, layers: MapLayers):
    report = data.dataset_summary(data_dir, st.dataset)
    ref = (
        report.get("reference_orientation")
        if st.table == "original"
        else (report.get("control", {}).get("reference_orientation"))
    )
    title = f"{report.get('name', st.dataset)}: {layers.rows.size:,} axis points of {layers.n_molecules:,} molecules"
    if layers.n_matches is not None:
        title += f" · {layers.n_matches:,} match {st.smarts}"
    return title, ref


def _map_spec(layers: MapLayers, ref, title: str) -> dict:
    md = layers.md
    return orientation_map_spec(
        *md.xy(layers.rows, layers.axes),
        layers.color,
        split=layers.split,
        frame=frame_lines(),
        highlight_xy=md.xy(layers.highlight_rows, layers.highlight_axes) if layers.highlight_rows.size else None,
        reference=reference_of(ref, layers.shown),
        title=title,
        n_molecules=layers.n_molecules,
    )


def map_figure(data_dir: Path, st: ViewState) -> tuple[go.Figure, MapLayers]:
    """The map, density or sphere figure of a view state."""
    layers = map_layers(data_dir, st)
    title, ref = _title_and_reference(data_dir, st, layers)
    view = st.view
    if view == "density":
        fig = density_figure(layers, ref, title)
    elif view == "sphere":
        fig = sphere_figure(layers.md.vectors[layers.rows, layers.axes - 1], layers.color, reference=ref, title=title)
    else:
        fig = unvalidated_figure(**_map_spec(layers, ref, title))
    return fig, layers


def map_figure_json(data_dir: Path, st: ViewState) -> tuple[dict, MapLayers]:
    """:func:`map_figure` as a JSON-ready dict, cached per layers."""
    layers = map_layers(data_dir, st)
    key = id(layers)
    hit = shared_cache().get("map_figure", key)
    if hit is not None and hit[0] is layers:  # the id of a dropped layers object may be reused
        return hit[1], layers
    if st.view == "map":  # the common case, encoded without a go.Figure
        title, ref = _title_and_reference(data_dir, st, layers)
        payload = typed_arrays(_map_spec(layers, ref, title))
    else:
        payload = orjson.loads(map_figure(data_dir, st)[0].to_json())
    shared_cache().put("map_figure", key, (layers, payload), size=nbytes(payload))  # the layers are cached apart
    return payload, layers


def density_pair_json(data_dir: Path, st: ViewState) -> tuple[tuple[dict, dict], MapLayers]:
    """The density view: the dataset's density and its control's beside it, on one colour scale, as JSON.

    Cached per pair of layers, like :func:`map_figure_json`.
    """
    layers = map_layers(data_dir, st)
    control = map_layers(data_dir, st.with_(table="control"))
    key = (id(layers), id(control))
    hit = shared_cache().get("density_pair", key)
    if hit is not None and hit[0] is layers and hit[1] is control:
        return hit[2], layers
    report = data.dataset_summary(data_dir, st.dataset)
    _, ref = _title_and_reference(data_dir, st, layers)
    title = f"{report.get('name', st.dataset)} as stored · {layers.n_molecules:,} molecules"
    ctl_ref = (report.get("control") or {}).get("reference_orientation")
    ctl_title = "Control: the same molecules, randomly rotated"
    figures = density_figures([(layers, ref, title), (control, ctl_ref, ctl_title)])
    payload = tuple(orjson.loads(f.to_json()) for f in figures)
    shared_cache().put("density_pair", key, (layers, control, payload), size=nbytes(payload))
    return payload, layers
