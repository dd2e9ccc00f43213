"""What the dashboard draws of a dataset's map, as plain data for the REST resource under ``/api/datasets/{id}/map``.

- :func:`region_paint`: what ``frontend_assets/map_draw.js`` draws of any region of the flat map (its image or, at
  or below the point budget, its points, with the legend) or of the density view's two maps;
- :func:`molecule_panel`: the molecule panel's id, info (Dash ``html`` components as JSON) and 3D viewer spec;
- :func:`first_paint`: everything the page's first paint draws (``frontend_assets/first_paint.js``): the image,
  the outline and graticule lines, the reference stars, the sphere's points, the density cells and the molecule
  panel. The page HTML carries the same answer inline (``app/first_paint.py``), so the first paint costs no
  round trip.

The API cannot import the dashboard (the layer contract: ``api`` and ``app`` are siblings), and the figure
builders still live here, so the composition root (``backend/server.py``) hands this module to the API
(``api/routes/orientation_map.py``, ``MapPainterDep``). Everything is read through the services and the
figure builders' caches; nothing here computes science.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
from plotly.io.json import to_json_plotly

from orientscope.app import data, panels
from orientscope.app.initial_view import resolve_view
from orientscope.app.plane_paint import (
    density_paint,
    flat_paint,
    frame,
    hook_of,
    map_paint,
    meta_of,
    settings_of,
    title_of,
)
from orientscope.core.palette import HIGHLIGHT, OTHER_GREY
from orientscope.figures.mapfigure import density_pair_json, map_figure_json
from orientscope.figures.plots import MUTED_OPACITY
from orientscope.figures.state import ViewState
from orientscope.services.map_raster import Viewport
from orientscope.services.map_view import MapQuery

# The direction plotly's 3D scene looks from by default (camera eye (1.25, 1.25, 1.25), z up), as
# screen right, screen up and towards the viewer: the static sphere shows what the scene then shows.
SPHERE_RIGHT = np.array([-1.0, 1.0, 0.0]) / np.sqrt(2.0)
SPHERE_UP = np.array([-1.0, -1.0, 2.0]) / np.sqrt(6.0)
SPHERE_TOWARDS = np.array([1.0, 1.0, 1.0]) / np.sqrt(3.0)
BACK_OPACITY = 0.35  # the sphere's far hemisphere
# A zoom's answer is mostly a base64 PNG: gzip saved a quarter of its 2 MB on the 10M-molecule map and cost
# 100-600 ms, so these routes answer uncompressed (backend/server.py).
REGION_PATHS = ("/map/paint",)


def view_state(query: MapQuery, view: str) -> ViewState:
    """The dashboard's view state of a REST map query (InvalidInput naming a field it does not accept)."""
    query = query.checked()
    return ViewState(
        dataset=query.dataset, view=view, axes=query.axes, color=query.color, grouping=query.grouping,
        group=query.group, smarts=query.smarts, table=query.table,
    )  # fmt: skip


def region_paint(data_dir: Path, query: MapQuery, viewport: Viewport, view: str) -> dict:
    """What ``map_draw.js`` draws of ``viewport``'s region in ``view`` ("map": the image above the point budget,
    else the points; "density": the dataset's and its control's cells binned anew for it, one colour scale)."""
    vp = viewport.checked()
    if view == "density":
        pair, _ = density_pair_json(data_dir, view_state(query, "density").with_(table="original"), vp)
        return {"view": "density", **density_paint(pair), "frame": frame()}
    payload, _ = map_figure_json(data_dir, view_state(query, "map"), vp)
    return {"view": "map", **flat_paint(payload), "frame": frame()}


def panel_record(shown: panels.MoleculePanel) -> dict:
    """A molecule panel's id, info (its Dash components as JSON, as the molecule callback answers them) and viewer."""
    return {"molecule_id": shown.molecule_id, "info": orjson.loads(to_json_plotly(shown.info)), "viewer": shown.viewer}


def molecule_panel(data_dir: Path, dataset_id: str, molecule_id: str) -> dict:
    """The molecule panel showing ``molecule_id``; NotFoundError for a molecule the dataset does not hold."""
    shown = panels.molecule_outputs(data_dir, ViewState(dataset=dataset_id), molecule_id)
    if not shown.molecule_id:  # the panel says what is wrong; the REST answer is the error itself
        data.molecule_detail(data_dir, dataset_id, molecule_id)
    return panel_record(shown)


# ----------------------------------------------------------------- the first paint


def sphere_paint(payload: dict, vectors: np.ndarray, color, ids, keys, highlight=None) -> dict | None:
    """The static sphere of a sphere figure payload: its points (n, 3) seen along plotly's default camera,
    back to front, with the far hemisphere faded; None unless the colours are categorical or a SMARTS highlights.

    ``ids`` (n,) are the points' molecule ids (a click on a dot opens its molecule); ``keys`` (n,) their
    tie-break keys, so that a click between equally near dots picks the one the server's map would
    (``MapData.point_keys``). ``highlight`` (n,) bool marks SMARTS matches: drawn over the others, which are
    grey and faded, as the figure draws them.
    """
    meta = meta_of(payload)
    if meta.get("view") != "sphere" or len(vectors) == 0 or (color.kind != "categorical" and highlight is None):
        return None
    v = np.asarray(vectors, np.float64).reshape(-1, 3)
    sx, sy = np.round(v @ SPHERE_RIGHT, 3) + 0.0, np.round(-(v @ SPHERE_UP), 3) + 0.0  # + 0.0: no "-0.0"
    depth = v @ SPHERE_TOWARDS
    if highlight is None:
        codes, colors, muted = np.asarray(color.values).astype(int), color.colors, np.zeros(len(v), bool)
        order = np.argsort(depth, kind="stable")
    else:
        codes, colors = np.asarray(highlight, bool).astype(int), [OTHER_GREY, HIGHLIGHT]
        muted = codes == 0
        order = np.lexsort((depth, codes))  # the matches last, over the others; each back to front
    opacity = np.where(muted, MUTED_OPACITY, np.where(depth < 0, BACK_OPACITY, 1.0))[order]
    dots = {"x": sx[order], "y": sy[order], "code": codes[order], "colors": list(colors), "opacity": opacity}
    settings = settings_of(meta, ids=[str(i) for i in np.asarray(ids)[order]], keys=np.asarray(keys)[order].tolist())
    return {"settings": settings, "hook": hook_of(meta), "title": title_of(payload), "dots": dots}


def first_paint(data_dir: Path, search: str) -> dict:
    """What the first paint of the page at ``?search`` draws: ``{"view": None}`` unless the page shows the
    density view, the whole Mollweide map as an image or the sphere.

    Otherwise ``view``, ``settings`` (what its clicks and hover ask the REST API for), ``hook`` (the test
    hook's mode and molecules drawn), ``frame`` (outline and graticule) and ``panel`` (the molecule panel's
    layout, as Dash components, showing the page's molecule, and that molecule's viewer spec), plus the
    view's own drawing: ``image`` and ``title`` (map), ``dots`` and ``title`` (sphere) or ``maps`` (density).
    """
    return paint_of(data_dir, resolve_view(data_dir, search).state)


def first_paint_of(data_dir: Path, query: MapQuery, view: str, molecule_id: str | None) -> dict:
    """:func:`first_paint` of a REST map query: NotFoundError for an unknown dataset or molecule, not a fallback."""
    ready = {info.id for info in data.list_datasets(data_dir) if info.status == data.READY}
    if query.dataset not in ready:
        raise data.NotFoundError(f"no ready dataset {query.dataset!r}; ready: {', '.join(sorted(ready)) or 'none'}")
    if molecule_id is not None:
        try:
            data.load_map_data(data_dir, query.dataset).row_of(molecule_id)
        except KeyError as err:
            raise data.NotFoundError(err.args[0]) from None
    return paint_of(data_dir, view_state(query, view).with_(molecule=molecule_id))


def paint_of(data_dir: Path, st: ViewState) -> dict:
    """:func:`first_paint` of a resolved view state."""
    if st.view not in ("map", "sphere", "density") or st.dataset is None or st.region is not None:
        return {"view": None}  # a zoomed map is drawn by Dash (the static map shows the whole sky)
    if st.view == "density":  # the landing page: cached, the layout request reuses it
        paint = density_paint(density_pair_json(data_dir, st)[0])
    else:
        payload, layers = map_figure_json(data_dir, st)  # cached: the layout request reuses it
        if st.view == "sphere":
            vectors = layers.md.vectors(layers.rows, layers.axes)
            keys = layers.md.point_keys(layers.rows, layers.axes)
            ids = layers.md.ids[layers.rows]
            paint = sphere_paint(payload, vectors, layers.color, ids, keys, layers.sphere_highlight)
        else:
            paint = map_paint(payload)
    if paint is None:
        return {"view": None}
    shown = panels.molecule_outputs(data_dir, st, st.molecule)
    layout = orjson.loads(to_json_plotly(panels.molecule_panel(shown)))
    return {"view": st.view, **paint, "frame": frame(), "panel": {"layout": layout, "viewer": shown.viewer}}
