"""The landing page's first paint: the density view's two heatmaps as images of their cells in the page HTML,
coloured and valued as the layout's figures (real HTTP)."""

import base64
import io

import httpx
import numpy as np
from PIL import Image

from orientscope.app.density_paint import density_image, heatmap_rgba, payload_array
from orientscope.core.palette import CIVIDIS
from orientscope.figures.plots import MAP_SCALE
from orientscope.server import create_app
from tests.api.conftest import ServerThread
from tests.app.components import carried_paint, props_of


def _rgb(hex_color: str) -> list[int]:
    return [int(hex_color[k : k + 2], 16) for k in (1, 3, 5)]


def test_cells_take_the_scales_end_colours_and_cells_outside_the_ellipse_are_transparent():
    z = np.array([[0.0, 2.0, np.nan], [4.0, 9.0, 1.0]])
    rgba = heatmap_rgba(z, zmax=4.0)
    assert rgba[0, 0].tolist() == [*_rgb(CIVIDIS[0]), 255]
    assert rgba[1, 0].tolist() == rgba[1, 1].tolist() == [*_rgb(CIVIDIS[-1]), 255]  # above zmax: the top colour
    assert rgba[0, 2, 3] == 0
    # halfway: between the two middle stops of ten
    mid = (np.array(_rgb(CIVIDIS[4])) + np.array(_rgb(CIVIDIS[5]))) / 2
    assert np.abs(rgba[0, 1, :3] - mid).max() <= 1


def test_a_payload_array_reads_plotlys_typed_arrays_and_lists():
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    spec = {"dtype": "f4", "bdata": base64.b64encode(values.tobytes()).decode(), "shape": "2, 3"}
    assert payload_array(spec).tolist() == values.tolist()
    assert np.isnan(payload_array([[1.0, None]])[0, 1])


def test_a_heatmaps_image_spans_its_cells_with_the_bottom_row_last():
    heat = {"x": [-15.0, -5.0, 5.0, 15.0], "y": [-5.0, 5.0], "z": [[0.0, 1.0, 2.0, None], [3.0, 4.0, 4.0, 4.0]]}
    im = density_image({**heat, "zmax": 4.0})
    assert im.extent == (-20.0, 20.0, -10.0, 10.0)
    png = Image.open(io.BytesIO(base64.b64decode(im.source.split(",", 1)[1])))
    assert png.size == (4, 2)
    assert png.getpixel((0, 1))[:3] == tuple(_rgb(CIVIDIS[0])) and png.getpixel((3, 1))[3] == 0  # bottom row
    assert png.getpixel((1, 0))[:3] == tuple(_rgb(CIVIDIS[-1]))  # the top row: z = 4 = zmax
    assert im.grid == {"x0": -20.0, "dx": 10.0, "y0": -10.0, "dy": 10.0, "nx": 4, "ny": 2,
                       "z": [0.0, 1.0, 2.0, None, 3.0, 4.0, 4.0, 4.0]}  # fmt: skip


def test_the_landing_page_carries_the_density_view_and_its_control_as_the_layout_draws_them(qm9_store):
    from orientscope.figures.mapfigure import density_pair_json
    from orientscope.figures.state import ViewState

    with ServerThread(create_app(qm9_store, dashboard=True)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        page = c.get("/").text
        layout = c.get("/_dash-layout", headers={"X-OrientScope-Page": ""}).json()
    paint = carried_paint(page)
    drawn = props_of(layout, "map-paint")["data"]  # what Dash's map box draws (map_draw.js): the same paint
    (figure, control), _ = density_pair_json(qm9_store, ViewState(dataset="qm9"))
    meta = figure["layout"]["meta"]["map"]
    assert meta["view"] == "density" and drawn["view"] == "density"
    # what the renderer asks the server for a click: the layout's own REST query; its hover is the density's
    assert paint["settings"] == drawn["settings"] == {"view": "density", "dataset": "qm9", "query": meta["query"],
                                                      "kind": "density", "scale": MAP_SCALE}  # fmt: skip
    assert paint["hook"] == drawn["hook"] == {"mode": "image", "drawn": meta["drawn"], "token": meta["token"]}
    assert [m["grid"] for m in paint["maps"]] == [m["grid"] for m in drawn["maps"]]
    # both maps' cells, as the density figures hold them (to the hover's two decimals)
    grids = [m["grid"] for m in paint["maps"]]
    assert len(grids) == 2
    for grid, fig in zip(grids, (figure, control), strict=True):
        heat = next(t for t in fig["data"] if t["type"] == "heatmap")
        z = payload_array(heat["z"])
        assert (grid["ny"], grid["nx"]) == z.shape
        shown = np.array([np.nan if v is None else v for v in grid["z"]]).reshape(z.shape)
        np.testing.assert_allclose(shown, np.round(z, 2), atol=1e-9)
    assert all(m["image"]["source"].startswith("data:image/png") for m in drawn["maps"])
    assert paint["maps"][0]["stars"]  # and the reference orientation's stars
