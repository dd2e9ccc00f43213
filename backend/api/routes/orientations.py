"""GET /api/datasets/{id}/orientations?format=json|csv|parquet."""

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from orientscope.api.deps import DataDirDep, DatasetIdPath
from orientscope.api.encoded import answer
from orientscope.api.errors import NOT_FOUND
from orientscope.api.schemas import OrientationRow
from orientscope.services import orientations as svc

router = APIRouter(prefix="/datasets/{dataset_id}", tags=["orientations"])

CHUNK = 1 << 20
RESPONSES = {
    **NOT_FOUND,
    200: {
        "description": "One row per molecule: id, R (r00..r22), quaternion, eigenvalues, degenerate flag and reason, axes lon/lat, classifier score.",
        "content": {
            "text/csv": {"schema": {"type": "string"}},
            "application/vnd.apache.parquet": {"schema": {"type": "string", "format": "binary"}},
        },
    },
}


async def _chunks(parts):
    # Large datasets are encoded block by block while they are sent: each block in a worker thread.
    while (data := await run_in_threadpool(next, parts, None)) is not None:
        view = memoryview(data)
        for start in range(0, len(view), CHUNK):
            yield view[start : start + CHUNK]


@router.get("/orientations", response_model=list[OrientationRow], responses=RESPONSES)
async def orientations(
    dataset_id: DatasetIdPath,
    data_dir: DataDirDep,
    format: Annotated[Literal["json", "csv", "parquet"], Query(description="json records, csv or parquet.")] = "json",
) -> StreamingResponse:
    """Every molecule's orientation, to redo the plots elsewhere (streamed)."""
    parts, size, media_type, filename = await answer(svc.orientations_stream, data_dir, dataset_id, format)
    headers = {} if size is None else {"Content-Length": str(size)}
    if format != "json":
        headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return StreamingResponse(_chunks(parts), media_type=media_type, headers=headers)
