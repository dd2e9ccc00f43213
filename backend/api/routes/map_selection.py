"""GET /api/datasets/{id}/map/selection (the molecules a box or lasso on the map selects, paged) and
/map/selection.csv (all of them, as CSV)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from starlette.concurrency import run_in_threadpool

from orientscope.api.deps import DataDirDep, DatasetIdPath
from orientscope.api.encoded import json_record
from orientscope.api.errors import NOT_FOUND, SEARCH_PENDING
from orientscope.api.routes.orientation_map import QueryDep
from orientscope.api.schemas import MapSharedPublic
from orientscope.core.selection import MAX_VERTICES
from orientscope.services import map_selection as svc

router = APIRouter(prefix="/datasets/{dataset_id}", tags=["map"])

SelQuery = Annotated[
    str,
    Query(
        max_length=MAX_VERTICES * 2 * 9 + 10,
        description="The selection, Mollweide units: box:x0,x1,y0,y1 or lasso:x1,y1,x2,y2,... (3 to "
        f"{MAX_VERTICES} vertices), as the dashboard's URL carries it (sel=).",
    ),
]
CSV = {200: {"content": {"text/csv": {"schema": {"type": "string"}}}}}


@router.get("/map/selection", response_model=MapSharedPublic, responses={**NOT_FOUND, **SEARCH_PENDING})
async def selection(
    data_dir: DataDirDep,
    query: QueryDep,
    sel: SelQuery,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=svc.MAX_PAGE)] = 20,
):
    """A page of the molecules with a shown point inside the selection, in the dataset's order."""
    return json_record(await run_in_threadpool(svc.selection_page, data_dir, query, sel, offset, limit))


@router.get("/map/selection.csv", responses={**NOT_FOUND, **SEARCH_PENDING, **CSV})
async def selection_csv(data_dir: DataDirDep, dataset_id: DatasetIdPath, query: QueryDep, sel: SelQuery):
    """Every selected molecule as CSV: id, formula and what the map is coloured by."""
    text = await run_in_threadpool(svc.selection_csv, data_dir, query, sel)
    headers = {"Content-Disposition": f'attachment; filename="{dataset_id}-selection.csv"'}
    return Response(text, media_type="text/csv", headers=headers)
