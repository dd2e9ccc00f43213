"""``GET /_molecule-viewer?dataset=&molecule=``: the molecule panel's 3D viewer spec, for a map click.

A click on the map draws its molecule before Dash hears of it (``frontend_assets/orientscope.js``,
"a click's fast path"): the page asks the server for the nearest shown point (``/api/.../map/nearest``),
then for this spec, draws it, and only then sets the page's "selected" store. Through Dash alone the
viewer waited for the URL callback, the molecule callback and the neighbour lists' re-render
(about 300 ms on full QM9). The spec is built by the function whose answer the molecule callback
puts into the viewer-spec store (``panels.molecule_outputs``), so the viewer sees Dash's copy as
the one it already shows and does not draw it again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import FastAPI, Query
from starlette.responses import JSONResponse

from orientscope.app import data
from orientscope.app.viewer import molecule_viewer_spec

PATH = "/_molecule-viewer"
IdQuery = Annotated[str, Query(min_length=1, max_length=200)]


def install(server: FastAPI, data_dir: Path) -> None:
    """Add the route to ``server`` (outside the documented REST API: it answers the dashboard's format)."""

    # A plain function: FastAPI runs it in a worker thread, off the event loop.
    def molecule_viewer(dataset: IdQuery, molecule: IdQuery) -> JSONResponse:
        try:
            detail = data.molecule_detail(data_dir, dataset, molecule)
        except data.OrientScopeError as err:
            return JSONResponse({"detail": str(err)}, status_code=404)
        return JSONResponse(molecule_viewer_spec(detail))

    server.add_api_route(PATH, molecule_viewer, methods=["GET"], include_in_schema=False)
