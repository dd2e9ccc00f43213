"""GET /api/jobs, /api/jobs/{job_id} and POST /api/jobs/{job_id}/retry: background ingest jobs."""

from __future__ import annotations

import threading
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi import Path as PathParam
from pydantic import BaseModel, Field

from backend.api.deps import DataDirDep, WriteAccess
from backend.api.errors import NOT_FOUND
from backend.core.errors import OrientScopeError
from backend.pipeline import jobs as jobs_mod

router = APIRouter(prefix="/jobs", tags=["jobs"])
_create_lock = threading.Lock()

JobIdPath = Annotated[str, PathParam(description="Job id returned by POST /api/datasets.", max_length=64)]


class JobPublic(BaseModel):
    """A background ingest job."""

    id: str = Field(description="Job id.")
    state: Literal["queued", "running", "done", "failed"] = Field(description="Where the job is.")
    progress: float = Field(ge=0, le=1, description="Fraction done, 0-1.")
    stage: str = Field(description="Current step: load, save, a pipeline stage name, or done.")
    message: str = Field(description="What is happening, or why the job failed (naming the line or record).")
    dataset_id: str = Field(description="Id the dataset gets (it appears in /api/datasets once done).")
    name: str = Field(description="Display name of the dataset.")
    created: float = Field(description="Unix time the job was queued.")
    finished: float | None = Field(default=None, description="Unix time the job ended.")
    attempts: int = Field(default=0, description="How many times the job has been started.")
    result: dict | None = Field(
        default=None,
        description="On success: dataset_id, n_molecules, n_skipped, skipped-record messages (problems) and skipped_stages (analysis step → reason).",
    )


def public(job: dict) -> dict:
    return {k: job.get(k) for k in JobPublic.model_fields}


def get_jobs(request: Request) -> jobs_mod.JobManager:
    """The app's job manager, started on first use (it marks interrupted jobs failed when it starts)."""
    state = request.app.state
    manager = getattr(state, "jobs", None)
    if manager is None:
        with _create_lock:
            manager = getattr(state, "jobs", None)
            if manager is None:
                manager = state.jobs = jobs_mod.JobManager(state.settings.data_dir)
    return manager


JobsDep = Annotated[jobs_mod.JobManager, Depends(get_jobs)]


def _started(request: Request) -> None:
    """On a writable server, start the manager so jobs orphaned by a crash show as failed."""
    if not request.app.state.settings.read_only:
        get_jobs(request)


@router.get("", response_model=list[JobPublic], dependencies=[Depends(_started)])
def list_jobs(data_dir: DataDirDep) -> list[dict]:
    """Every job, oldest first."""
    return [public(j) for j in jobs_mod.list_jobs(data_dir)]


@router.get("/{job_id}", response_model=JobPublic, responses=NOT_FOUND, dependencies=[Depends(_started)])
def get_job(job_id: JobIdPath, data_dir: DataDirDep) -> dict:
    """State, progress (0-1), stage and message of one job."""
    return public(jobs_mod.read_job(data_dir, job_id))


@router.post(
    "/{job_id}/retry", status_code=202, response_model=JobPublic, responses=NOT_FOUND, dependencies=[WriteAccess]
)
def retry_job(job_id: JobIdPath, jobs: JobsDep) -> dict:
    """Run a failed job again from its stored upload."""
    jobs_mod.read_job(jobs.data_dir, job_id)  # 404 first
    try:
        return public(jobs.retry(job_id))
    except OrientScopeError as err:
        raise HTTPException(409, str(err)) from None
