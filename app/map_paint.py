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

import orjson
from plotly.io.json import to_json_plotly

from orientscope.app import data, panels
from orientscope.app.initial_view import resolve_view
from orientscope.app.plane_paint import (
    density_paint,
    flat_paint,
    frame,
    map_paint,
)
from orientscope.app.sphere_paint import sphere_view_paint
from orientscope.figures.mapfigure import density_pair_json, map_figure_json
from orientscope.figures.state import ViewState
from orientscope.services.map_raster import Viewport
from orientscope.services.map_view import MapQuery

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


def first_paint(data_dir: Path, search: str) -> dict:
    """What the first paint of the page at ``?search`` draws: ``{"view": None}`` unless the page shows the
    density view, the whole Mollweide map as an image or the sphere.

    Otherwise ``view``, ``settings`` (what its clicks and hover ask the REST API for), ``hook`` (the test
    hook's mode and molecules drawn), ``frame`` (outline and graticule) and ``panel`` (the molecule panel's
    layout, as Dash components, showing the page's molecule, and that molecule's viewer spec), plus the
    view's own drawing: ``image`` and ``title`` (map), ``sphere`` and ``title`` (sphere) or ``maps`` (density).
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
            paint = sphere_view_paint(payload, layers, st)
        else:
            paint = map_paint(payload)
    if paint is None:
        return {"view": None}
    shown = panels.molecule_outputs(data_dir, st, st.molecule)
    layout = orjson.loads(to_json_plotly(panels.molecule_panel(shown)))
    return {"view": st.view, **paint, "frame": frame(), "panel": {"layout": layout, "viewer": shown.viewer}}
