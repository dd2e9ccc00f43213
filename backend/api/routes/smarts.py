"""POST /api/datasets/{id}/smarts: a SMARTS search of a large sharded set as a background job.

The job scans the shards in parallel on the engine; GET /api/jobs/{job_id} shows the
shards done of the total. Once it is done, GET …/molecules?smarts= and GET …/map?smarts=
with the same pattern answer from its kept result at once; before that they answer 409
naming the job. Searches write nothing to the dataset store (their results go to the
server's export area), so the route is open on read-only servers and needs no token.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from orientscope.api.deps import DataDirDep, DatasetIdPath
from orientscope.api.errors import BUSY, NOT_FOUND
from orientscope.services import molecules as svc

router = APIRouter(prefix="/datasets", tags=["molecules"])


class SmartsBody(BaseModel):
    """The pattern to search for."""

    model_config = ConfigDict(extra="forbid")

    smarts: str = Field(
        min_length=1,
        max_length=svc.MAX_SMARTS_LENGTH,
        description=f"SMARTS pattern (at most {svc.MAX_SMARTS_LENGTH} characters), e.g. C=O or [#7;R].",
    )


class SmartsAccepted(BaseModel):
    """An accepted search: follow GET /api/jobs/{job_id}; once it is done, read the matches with smarts=."""

    job_id: str = Field(description="Id of the search job (GET /api/jobs/{job_id} shows the shards scanned).")
    search_id: str = Field(description="Id of the search's kept result: the same pattern of the same result.")
    state: str = Field(description="Where the job is: queued, running, or done (the result was already kept).")


@router.post("/{dataset_id}/smarts", status_code=202, response_model=SmartsAccepted, responses={**NOT_FOUND, **BUSY})
async def submit_search(dataset_id: DatasetIdPath, body: Annotated[SmartsBody, Body()], data_dir: DataDirDep) -> dict:
    """Search a sharded set for a SMARTS pattern in the background (the same search is run once)."""
    job = await run_in_threadpool(svc.submit_search, data_dir, dataset_id, body.smarts)
    return {"job_id": job["id"], "search_id": job["search_id"], "state": job["state"]}
