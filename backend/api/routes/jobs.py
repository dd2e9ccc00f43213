"""GET /api/jobs, /api/jobs/{job_id}, POST /api/jobs/{job_id}/retry and DELETE /api/jobs/{job_id}: background
ingest, audit, export and SMARTS search jobs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Header, HTTPException, Request
from fastapi import Path as PathParam
from pydantic import BaseModel, Field

from orientscope.api.deps import DataDirDep, WriteAccess, require_write
from orientscope.api.errors import NOT_FOUND
from orientscope.core.errors import NotFoundError, OrientScopeError
from orientscope.services import jobs as job_service

router = APIRouter(prefix="/jobs", tags=["jobs"])
_create_lock = threading.Lock()

JobIdPath = Annotated[
    str,
    PathParam(
        description="Job id returned by POST /api/datasets, …/model-audits, …/exports or …/smarts.", max_length=64
    ),
]


class JobPublic(BaseModel):
    """A background job: an ingest (dataset upload), a model audit (predictions upload), an export or a SMARTS
    search."""

    id: str = Field(description="Job id.")
    kind: Literal["ingest", "audit", "export", "smarts"] = Field(default="ingest", description="What the job does.")
    state: Literal["queued", "running", "done", "failed"] = Field(description="Where the job is.")
    progress: float = Field(ge=0, le=1, description="Fraction done, 0-1.")
    stage: str = Field(
        description="Current step: load, save or a pipeline stage name (ingest); load, pose or write (export); "
        "scan (smarts); done."
    )
    message: str = Field(description="What is happening, or why the job failed (naming the line or record).")
    dataset_id: str = Field(
        description="Ingest: id the dataset gets (it appears in /api/datasets once done). Audit, export: the dataset."
    )
    name: str = Field(description="Display name of the dataset.")
    created: float = Field(description="Unix time the job was queued.")
    finished: float | None = Field(default=None, description="Unix time the job ended.")
    attempts: int = Field(default=0, description="How many times the job has been started.")
    export_id: str | None = Field(
        default=None, description="Export jobs: GET /api/datasets/{dataset_id}/exports/{export_id} once done."
    )
    search_id: str | None = Field(
        default=None, description="SMARTS jobs: the kept result read by …/molecules?smarts= and …/map?smarts=."
    )
    shards: list[int] | None = Field(
        default=None, description="SMARTS jobs: [shards scanned, shards in all] (progress is their ratio)."
    )
    result: dict | None = Field(
        default=None,
        description="On success, ingests: dataset_id, n_molecules, n_skipped, skipped-record messages (problems), "
        "warnings (ids or properties renamed, D/T read as hydrogen …) and "
        "skipped_stages (analysis step → reason); audits: dataset_id, audit_id, n_molecules, n_unknown_ids; "
        "exports: export_id, file and n_molecules; SMARTS searches: search_id, n_matches, n_scanned and complete "
        "(false if the scan stopped at its time limit).",
    )


def public(job: dict) -> dict:
    return {k: job.get(k, JobPublic.model_fields[k].default) for k in JobPublic.model_fields}


def get_jobs(request: Request) -> job_service.BackgroundJobs:
    """The app's background jobs (each worker starts on first use)."""
    state = request.app.state
    jobs = getattr(state, "jobs", None)
    if jobs is None:
        with _create_lock:
            jobs = getattr(state, "jobs", None)
            if jobs is None:
                jobs = state.jobs = job_service.BackgroundJobs(state.settings.data_dir)
    return jobs


JobsDep = Annotated[job_service.BackgroundJobs, Depends(get_jobs)]


def start_recovery(request: Request) -> None:
    """On a writable server, start the ingest worker so jobs orphaned by a crash are recorded as failed."""
    if not request.app.state.settings.read_only:
        get_jobs(request).recover()


@contextmanager
def _conflict() -> Iterator[None]:
    """409 for a job whose state forbids the change (an OrientScopeError other than NotFoundError)."""
    try:
        yield
    except NotFoundError:
        raise
    except OrientScopeError as err:
        raise HTTPException(409, str(err)) from None


@router.get("", response_model=list[JobPublic], dependencies=[Depends(start_recovery)])
def list_jobs(data_dir: DataDirDep) -> list[dict]:
    """Every job, oldest first."""
    return [public(j) for j in job_service.list_jobs(data_dir)]


@router.get("/{job_id}", response_model=JobPublic, responses=NOT_FOUND, dependencies=[Depends(start_recovery)])
def get_job(job_id: JobIdPath, data_dir: DataDirDep) -> dict:
    """State, progress (0-1), stage and message of one job."""
    return public(job_service.get_job(data_dir, job_id))


@router.post(
    "/{job_id}/retry", status_code=202, response_model=JobPublic, responses=NOT_FOUND, dependencies=[WriteAccess]
)
def retry_job(job_id: JobIdPath, jobs: JobsDep) -> dict:
    """Run a failed ingest or audit job again from its stored upload."""
    with _conflict():
        return public(jobs.retry(job_id))


@router.delete("/{job_id}", response_model=JobPublic, responses=NOT_FOUND)
def cancel_job(
    job_id: JobIdPath, jobs: JobsDep, request: Request, authorization: Annotated[str | None, Header()] = None
) -> dict:
    """Cancel a queued or running job; its partial output is removed."""
    job = job_service.get_job(jobs.data_dir, job_id)
    if job.get("kind", "ingest") in ("ingest", "audit"):  # jobs that write the store need write access to stop
        require_write(request, authorization)
    with _conflict():
        return public(jobs.cancel(job_id))
