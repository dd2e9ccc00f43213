"""GET /api/datasets/{id}/map (aggregated image or points), /map/nearest (click and hover), /map/preview (a hover's
point and preview card), /map/shared (the molecules sharing a clicked pixel), /map/molecules/{mol_id} (one molecule's
colour there), /map/pixel (what a pixel of the image holds), and what the dashboard draws: /map/paint (what the map's
renderer, frontend_assets/map_draw.js, draws of a region: image or points, or the density pair), /map/panel/{mol_id} (the molecule panel) and /map/first-paint
(everything the page draws before Dash has loaded).

The dashboard's drawings come from its figure builders, which the API cannot import (``api`` and ``app`` are
sibling layers): the composition root hands them over as ``app.state.map_painter`` (``app/map_paint.py``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from orientscope.api.deps import DataDirDep, DatasetIdPath, GroupingQuery, MapColorQuery, MoleculeIdPath
from orientscope.api.encoded import json_record
from orientscope.api.errors import NOT_FOUND, SEARCH_PENDING
from orientscope.api.schemas import (
    ErrorPublic,
    FirstPaintPublic,
    MapMoleculePublic,
    MapNearestPublic,
    MapPaintPublic,
    MapPanelPublic,
    MapPixelPublic,
    MapPreviewPublic,
    MapPublic,
    MapSharedPublic,
)
from orientscope.core.errors import Unavailable
from orientscope.services import map_pick
from orientscope.services import map_raster as svc
from orientscope.services.map_view import MapQuery

router = APIRouter(prefix="/datasets/{dataset_id}", tags=["map"])
X0, X1, Y0, Y1 = svc.FULL_MAP


def map_query(
    dataset_id: DatasetIdPath,
    axes: Annotated[str, Query(max_length=3, description="Shown axes as digits, e.g. '123' or '1'.")] = "123",
    color: MapColorQuery = "axis",
    grouping: GroupingQuery = "formula",
    group: Annotated[str | None, Query(max_length=500, description="Show only this group's molecules.")] = None,
    smarts: Annotated[
        str | None,
        Query(
            max_length=500,
            description="Highlight molecules matching this SMARTS. On a sharded set above "
            "ORIENTSCOPE_SMARTS_JOB_ABOVE molecules it is the kept result of its background search "
            "(POST /api/datasets/{id}/smarts), or 409 with the job to follow.",
        ),
    ] = None,
    table: Annotated[
        Literal["original", "control"], Query(description="The stored poses, or the randomly rotated control.")
    ] = "original",
) -> MapQuery:
    return MapQuery(dataset_id, table, axes, color, grouping, group or None, smarts or None)


def viewport(
    x0: Annotated[float, Query(description="Left edge, Mollweide x (the map spans ±2√2).")] = X0,
    x1: Annotated[float, Query(description="Right edge, Mollweide x.")] = X1,
    y0: Annotated[float, Query(description="Bottom edge, Mollweide y (the map spans ±√2).")] = Y0,
    y1: Annotated[float, Query(description="Top edge, Mollweide y.")] = Y1,
    width: Annotated[int, Query(ge=1, le=svc.MAX_PIXELS, description="Image width in pixels.")] = 800,
    height: Annotated[int, Query(ge=1, le=svc.MAX_PIXELS, description="Image height in pixels.")] = 400,
) -> svc.Viewport:
    return svc.Viewport(x0, x1, y0, y1, width, height)


QueryDep = Annotated[MapQuery, Depends(map_query)]
ViewportDep = Annotated[svc.Viewport, Depends(viewport)]
KindQuery = Annotated[
    Literal["color", "density"], Query(description="color: the view's colours; density: points relative to uniform.")
]
PNG = {200: {"content": {"image/png": {"schema": {"type": "string", "format": "binary"}}}}}


@router.get("/map", response_model=MapPublic, responses={**NOT_FOUND, **PNG, **SEARCH_PENDING})
async def orientation_map(
    data_dir: DataDirDep,
    query: QueryDep,
    vp: ViewportDep,
    kind: KindQuery = "color",
    format: Annotated[
        Literal["json", "png"], Query(description="json: image or points by the point budget; png: always the image.")
    ] = "json",
):
    """The orientation map of a view in a viewport: an aggregated image above the point budget, else the points."""
    if format == "png":
        render = await run_in_threadpool(svc.render_view, data_dir, query, vp, kind, 0)
        grid = render.image_viewport  # the image's own region (a cell-aligned one may be a little larger)
        headers = {"X-Map-Points": str(render.n_points), "X-Map-Drawn": str(render.n_drawn),
                   "X-Map-Scale": render.scale["kind"],
                   "X-Map-Extent": ",".join(repr(v) for v in (grid.x0, grid.x1, grid.y0, grid.y1))}  # fmt: skip
        return Response(await run_in_threadpool(render.png), media_type="image/png", headers=headers)
    render = await run_in_threadpool(svc.render_view, data_dir, query, vp, kind)
    return json_record(await run_in_threadpool(svc.render_record, render))


# A click's position, as /map/nearest and /map/shared both take it (one pick rule for both).
ClickX = Annotated[float, Query(description="Click position, Mollweide x.")]
ClickY = Annotated[float, Query(description="Click position, Mollweide y.")]


@router.get("/map/nearest", response_model=MapNearestPublic, responses={**NOT_FOUND, **SEARCH_PENDING})
async def nearest(
    data_dir: DataDirDep,
    query: QueryDep,
    vp: ViewportDep,
    x: ClickX,
    y: ClickY,
):
    """The shown point nearest to a click within 5 pixels of the viewport's pixel grid (all null if none)."""
    return json_record(await run_in_threadpool(map_pick.nearest_molecule, data_dir, query, vp, x, y))


@router.get("/map/preview", response_model=MapPreviewPublic, responses={**NOT_FOUND, **SEARCH_PENDING})
async def preview(
    data_dir: DataDirDep,
    query: QueryDep,
    vp: ViewportDep,
    x: ClickX,
    y: ClickY,
    kind: KindQuery = "color",
):
    """What a hover shows in one answer: /map/nearest's point, its caption, 2D depiction, pixel and words."""
    return json_record(await run_in_threadpool(map_pick.hover_preview, data_dir, query, vp, x, y, kind))


@router.get("/map/shared", response_model=MapSharedPublic, responses={**NOT_FOUND, **SEARCH_PENDING})
async def shared(
    data_dir: DataDirDep,
    query: QueryDep,
    vp: ViewportDep,
    x: ClickX,
    y: ClickY,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=map_pick.MAX_PAGE)] = 10,
):
    """The molecules sharing the pixel of the point /map/nearest picks, that molecule first (paged)."""
    return json_record(await run_in_threadpool(map_pick.shared_molecules, data_dir, query, vp, x, y, offset, limit))


@router.get("/map/molecules/{mol_id:path}", response_model=MapMoleculePublic, responses={**NOT_FOUND, **SEARCH_PENDING})
async def map_molecule(
    data_dir: DataDirDep,
    query: QueryDep,
    mol_id: MoleculeIdPath,
    axis: Annotated[int | None, Query(ge=1, le=3, description="Its point of this axis (default its first).")] = None,
):
    """One molecule as this view of the map shows it: its formula and the value its colour shows."""
    return json_record(await run_in_threadpool(map_pick.molecule_caption, data_dir, query, mol_id, axis))


@router.get("/map/pixel", response_model=MapPixelPublic, responses={**NOT_FOUND, **SEARCH_PENDING})
async def pixel(
    data_dir: DataDirDep,
    query: QueryDep,
    vp: ViewportDep,
    x: Annotated[float, Query(description="Cursor position, Mollweide x.")],
    y: Annotated[float, Query(description="Cursor position, Mollweide y.")],
    kind: KindQuery = "color",
):
    """What the aggregated image shows under the cursor: point count and dominant category or mean value."""
    return json_record(await run_in_threadpool(svc.hover_info, data_dir, query, vp, x, y, kind))


# ----------------------------------------------------------------- what the dashboard draws


def map_painter(request: Request) -> Any:
    """The dashboard's figure builders (``app/map_paint.py``), handed over by the composition root."""
    painter = getattr(request.app.state, "map_painter", None)
    if painter is None:
        raise Unavailable("this server has no map drawings: serve the API with orientscope serve")
    return painter


PainterDep = Annotated[Any, Depends(map_painter)]
UNAVAILABLE = {503: {"model": ErrorPublic, "description": "The API is served without the map's figure builders."}}
DRAWN = {**NOT_FOUND, **SEARCH_PENDING, **UNAVAILABLE}


@router.get("/map/paint", response_model=MapPaintPublic, responses=DRAWN)
async def map_paint(
    data_dir: DataDirDep,
    query: QueryDep,
    vp: ViewportDep,
    painter: PainterDep,
    view: Annotated[
        Literal["map", "density"], Query(description="map: the flat map; density: the density pair.")
    ] = "map",
):
    """What the map's renderer draws of a region: the image above the point budget, else the points; or the density pair."""
    return json_record(await run_in_threadpool(painter.region_paint, data_dir, query, vp, view))


@router.get("/map/panel/{mol_id:path}", response_model=MapPanelPublic, responses={**NOT_FOUND, **UNAVAILABLE})
async def map_panel(data_dir: DataDirDep, dataset_id: DatasetIdPath, mol_id: MoleculeIdPath, painter: PainterDep):
    """The molecule panel of a clicked molecule: its id, info table (Dash components) and 3D viewer spec."""
    return json_record(await run_in_threadpool(painter.molecule_panel, data_dir, dataset_id, mol_id))


@router.get("/map/first-paint", response_model=FirstPaintPublic, responses=DRAWN)
async def first_paint(
    data_dir: DataDirDep,
    query: QueryDep,
    painter: PainterDep,
    view: Annotated[Literal["map", "sphere", "density"], Query(description="The page's view.")] = "density",
    molecule: Annotated[str | None, Query(max_length=500, description="The molecule the panel shows.")] = None,
):
    """Everything a page's first paint draws (image, lines, stars, sphere points, cells, molecule panel)."""
    return json_record(await run_in_threadpool(painter.first_paint_of, data_dir, query, view, molecule))
