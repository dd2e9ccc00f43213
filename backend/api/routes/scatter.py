"""GET /api/datasets/{id}/scatter/nearest (the molecule a click on the scatter view, a property against an axis
coordinate, opens), /scatter/preview (what a hover there shows), /scatter/shared (the molecules sharing a
clicked pixel) and /scatter/image (its aggregated image of a region, as PNG)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Response
from starlette.concurrency import run_in_threadpool

from orientscope.api.deps import DataDirDep, DatasetIdPath, GroupingQuery, MapColorQuery
from orientscope.api.encoded import json_record
from orientscope.api.errors import NOT_FOUND
from orientscope.api.schemas import MapSharedPublic, ScatterNearestPublic, ScatterPreviewPublic
from orientscope.services import scatter as svc
from orientscope.services.errors import InvalidInput
from orientscope.services.map_pick import MAX_PAGE
from orientscope.services.map_raster import Viewport

router = APIRouter(prefix="/datasets/{dataset_id}", tags=["scatter"])


def scatter_query(
    dataset_id: DatasetIdPath,
    prop: Annotated[str, Query(max_length=200, description="A stored property of the dataset (y).")],
    axis: Annotated[int, Query(ge=1, le=3, description="The axis (x): 1, 2 or 3.")] = 1,
    coord: Annotated[
        Literal["lon", "lat", "x", "y", "z"],
        Query(description="Its longitude or latitude (degrees), or a component of it (R[axis][1..3])."),
    ] = "lat",
    scale: Annotated[Literal["linear", "log"], Query(description="The property's scale.")] = "linear",
) -> svc.ScatterQuery:
    return svc.ScatterQuery(dataset_id, prop, axis, coord, scale)


def shown_region(
    x0: Annotated[float | None, Query(description="The plot's left edge (the axis coordinate).")] = None,
    x1: Annotated[float | None, Query(description="Its right edge.")] = None,
    y0: Annotated[float | None, Query(description="Its bottom edge (log10 of the property with scale=log).")] = None,
    y1: Annotated[float | None, Query(description="Its top edge.")] = None,
    width: Annotated[int | None, Query(ge=1, le=svc.MAX_IMAGE_SIDE, description="Its width in pixels.")] = None,
    height: Annotated[int | None, Query(ge=1, le=svc.MAX_IMAGE_SIDE, description="Its height in pixels.")] = None,
) -> Viewport | None:
    """The region on screen, whose pixels a hover counts the molecules of (all six, or none)."""
    bounds = (x0, x1, y0, y1, width, height)
    if all(v is None for v in bounds):
        return None
    if any(v is None for v in bounds):
        raise InvalidInput("give all of x0, x1, y0, y1, width and height (the region shown), or none", ("query", "x0"))
    return Viewport(x0, x1, y0, y1, width, height)


def scatter_pick(
    x: Annotated[float, Query(description="Cursor position: the axis coordinate.")],
    y: Annotated[float, Query(description="Cursor position: the property (log10 of it on a log scale).")],
    dx: Annotated[float, Query(gt=0, description="Width of a pixel in x units.")],
    dy: Annotated[float, Query(gt=0, description="Height of a pixel in y units.")],
    shown: Annotated[Viewport | None, Depends(shown_region)],
    color: MapColorQuery = "axis",
    grouping: GroupingQuery = "formula",
) -> svc.ScatterPick:
    return svc.ScatterPick(x, y, dx, dy, shown, color, grouping)


QueryDep = Annotated[svc.ScatterQuery, Depends(scatter_query)]
PickDep = Annotated[svc.ScatterPick, Depends(scatter_pick)]


@router.get("/scatter/nearest", response_model=ScatterNearestPublic, responses={**NOT_FOUND})
async def nearest(data_dir: DataDirDep, query: QueryDep, at: PickDep):
    """The molecule nearest to a click within 5 pixels, its formula and colour, and who shares its pixel."""
    return json_record(await run_in_threadpool(svc.nearest_molecule, data_dir, query, at))


@router.get("/scatter/preview", response_model=ScatterPreviewPublic, responses={**NOT_FOUND})
async def preview(data_dir: DataDirDep, query: QueryDep, at: PickDep):
    """What a hover shows in one answer: /scatter/nearest's molecule, its card (caption, depiction) and words."""
    return json_record(await run_in_threadpool(svc.hover_preview, data_dir, query, at))


@router.get("/scatter/shared", response_model=MapSharedPublic, responses={**NOT_FOUND})
async def shared(
    data_dir: DataDirDep,
    query: QueryDep,
    at: PickDep,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 10,
):
    """The molecules sharing the pixel of the point /scatter/nearest picks, that molecule first (paged)."""
    return json_record(await run_in_threadpool(svc.shared_molecules, data_dir, query, at, offset, limit))


PNG = {200: {"content": {"image/png": {"schema": {"type": "string", "format": "binary"}}}}}


@router.get("/scatter/image", responses={**NOT_FOUND, **PNG})
async def image(
    data_dir: DataDirDep,
    query: QueryDep,
    x0: Annotated[float, Query(description="Left edge (the axis coordinate).")],
    x1: Annotated[float, Query(description="Right edge.")],
    y0: Annotated[float, Query(description="Bottom edge (the property, log10 of it with scale=log).")],
    y1: Annotated[float, Query(description="Top edge.")],
    width: Annotated[int, Query(ge=1, le=svc.MAX_IMAGE_SIDE, description="Image width in pixels.")] = 900,
    height: Annotated[int, Query(ge=1, le=svc.MAX_IMAGE_SIDE, description="Image height in pixels.")] = 500,
    color: MapColorQuery = "axis",
    grouping: GroupingQuery = "formula",
):
    """The molecules of the region as an image, coloured as the map colours them (a zoom's image)."""

    def draw() -> bytes:
        points = svc.scatter_points(data_dir, query)
        colors, _ = svc.scatter_colors(data_dir, points, color, grouping)
        return svc.scatter_image(points, (x0, x1, y0, y1), (width, height), colors).png

    return Response(await run_in_threadpool(draw), media_type="image/png")
