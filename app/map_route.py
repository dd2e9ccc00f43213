"""``GET /_map-figure?state=&x0=&x1=&y0=&y1=&width=&height=``: the flat map's figure of a region, for a zoom, or
the density view's two figures (``{"density": [dataset's, control's]}``) binned anew for the region.

A zoom or pan asks for the region it shows straight from plotly.js's relayout event
(``frontend_assets/orientscope.js``, "the map at any size") and hands the answer to the graph
itself. Through Dash the request left only after dcc.Graph had replotted its echo of the old
figure with the new axis ranges and Dash had dispatched the viewport store's callback: 90 to
900 ms after the zoom on full QM9 in software WebGL, against 30 to 180 ms this way. The figure
is the one the map callback answers for that viewport (``mapfigure.map_figure_json``, cached).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import orjson
from fastapi import FastAPI, Query
from starlette.responses import JSONResponse, Response

from orientscope.app import data
from orientscope.figures.mapfigure import density_pair_json, map_figure_json, viewport_of
from orientscope.figures.state import ViewState

PATH = "/_map-figure"
MAX_PIXELS = 8192  # a plot wider or taller than any screen is not a map view


def install(server: FastAPI, data_dir: Path) -> None:
    """Add the route to ``server`` (outside the documented REST API: it answers the dashboard's format)."""

    # A plain function: FastAPI runs it in a worker thread, off the event loop.
    def map_figure(
        state: Annotated[str, Query(max_length=2000)],
        x0: float, x1: float, y0: float, y1: float,
        width: Annotated[int, Query(ge=1, le=MAX_PIXELS)],
        height: Annotated[int, Query(ge=1, le=MAX_PIXELS)],
    ) -> Response:  # fmt: skip
        try:
            st = ViewState.from_map_state(orjson.loads(state))
        except (orjson.JSONDecodeError, TypeError, ValueError) as err:
            return JSONResponse({"detail": f"bad map state: {err}"}, status_code=422)
        if not st.ready or st.view not in ("map", "density"):
            return JSONResponse({"detail": "only the flat map and the density view are drawn by region"},
                                status_code=422)  # fmt: skip
        viewport = viewport_of({"x0": x0, "x1": x1, "y0": y0, "y1": y1, "width": width, "height": height})
        try:
            if st.view == "density":  # both maps, the dataset's and its control's, binned anew for the region
                pair, _ = density_pair_json(data_dir, st, viewport.checked())
                payload = {"density": list(pair)}
            else:
                payload, _ = map_figure_json(data_dir, st, viewport)
        except data.NotFoundError as err:
            return JSONResponse({"detail": str(err)}, status_code=404)
        except data.OrientScopeError as err:  # a region no map can show (NaN, inverted, far off)
            return JSONResponse({"detail": str(err)}, status_code=422)
        return Response(orjson.dumps(payload), media_type="application/json")

    server.add_api_route(PATH, map_figure, methods=["GET"], include_in_schema=False)
