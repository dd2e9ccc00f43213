"""Model audits: does a model's error depend on the pose?

POST /api/datasets/{id}/model-audits (multipart ``file`` + ``name``) queues an
audit of a predictions file; GET lists them or returns one (with ``state``);
DELETE removes one; GET …/{audit_id}/molecules downloads the per-molecule
table as CSV or Parquet.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from orientscope.api.deps import DataDirDep, DatasetIdPath, WriteAccess
from orientscope.api.errors import NOT_FOUND
from orientscope.api.routes.jobs import JobsDep
from orientscope.api.uploads import UPLOAD_RESPONSES, invalid, multipart_body, receive_upload
from orientscope.services import model_audits as svc
from orientscope.services.datasets import dataset_info

router = APIRouter(prefix="/datasets/{dataset_id}/model-audits", tags=["model audits"])

AuditIdPath = Annotated[str, PathParam(description="Audit id returned by the upload.", max_length=64)]


class AuditAccepted(BaseModel):
    """An accepted predictions file: poll GET /api/jobs/{job_id} or the audit itself."""

    job_id: str = Field(description="Id of the background audit job.")
    audit_id: str = Field(description="Id the audit has (GET …/model-audits/{audit_id}).")


class AuditPublic(BaseModel):
    """One audit: ``state`` and, once done, every figure (see docs/api.md, "Model audits")."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(description="Audit id.")
    state: Literal["queued", "running", "done", "failed"] = Field(description="Where the audit is.")
    name: str | None = Field(default=None, description="Display name given at upload.")
    dataset: str = Field(description="Dataset id.")
    message: str | None = Field(default=None, description="While queued or running, or why it failed.")
    properties: list[dict[str, Any]] | None = Field(
        default=None, description="Per property (and split): n, mse/mae stored and rotated, reliance, ci95, "
        "pvalue, pvalue_holm, the rotation shift (shift_median, shift_p95 with their ci95, shift_max_p95, "
        "shift_max, shift_rms), score correlations, verdict {code (invariant, robust, leans, better_rotated, "
        "inconclusive, frame_dependent), text, decided_by, margin, max_shift, rule_version}.",
    )  # fmt: skip
    audit_rule_version: int | None = Field(default=None, description="The audit rule the verdicts are served by.")
    made_by_rule: int | None = Field(
        default=None, description="The audit rule the stored verdicts were made by (re-read when older)."
    )


UPLOAD_BODY = multipart_body(
    "CSV or Parquet: id, property, stored, rotated [, copy, true, split]",
    "display name of the audit",
    margin={"type": "number", "description": "the tiers' reliance margin, a fraction (default 0.01: ±1 %)"},
    max_shift={"type": "number", "description": "robust needs the rotation shift's 95th percentile at most this "
               "(the property's unit; default: none, the shift is shown and left to the reader)"},
)  # fmt: skip


@router.post(
    "",
    status_code=202,
    response_model=AuditAccepted,
    dependencies=[WriteAccess],
    openapi_extra=UPLOAD_BODY,
    responses={
        **NOT_FOUND,
        **UPLOAD_RESPONSES,
    },
)
async def upload_predictions(dataset_id: DatasetIdPath, request: Request, jobs: JobsDep) -> dict:
    """Audit a model's predictions on stored and rotated poses (multipart: file, name), in the background."""
    dataset_info(jobs.data_dir, dataset_id)  # 404 before reading the body
    jobs.check_room()  # and 429 too
    received = await receive_upload(
        request, jobs.limits.max_upload_bytes, jobs.upload_dir(), ("name", "margin", "max_shift"), "the predictions"
    )
    problems = received.problems("the predictions (CSV or Parquet)")
    with received.removed_on_failure():
        if problems:
            raise invalid(problems)
        decision = svc.check_decision(received.fields.get("margin"), received.fields.get("max_shift"))
        # Off the event loop: the check reads up to 100,000 rows.
        await run_in_threadpool(svc.check_upload, jobs.data_dir, dataset_id, received.path, received.filename)
        job = jobs.submit_audit(received.path, dataset_id, received.name, original_name=received.filename,
                                decision=decision)  # fmt: skip
    return {"job_id": job["id"], "audit_id": job["audit_id"]}


@router.get("", response_model=list[AuditPublic], responses=NOT_FOUND)
def list_audits(dataset_id: DatasetIdPath, data_dir: DataDirDep) -> list[dict]:
    """The dataset's audits (done, and queued, running or failed ones), oldest first."""
    return svc.list_audits(data_dir, dataset_id)


@router.get("/{audit_id}", response_model=AuditPublic, responses=NOT_FOUND)
def get_audit(dataset_id: DatasetIdPath, audit_id: AuditIdPath, data_dir: DataDirDep) -> dict:
    """One audit with its state and, once done, its figures and verdicts."""
    return svc.get_audit(data_dir, dataset_id, audit_id)


@router.delete("/{audit_id}", status_code=204, responses=NOT_FOUND, dependencies=[WriteAccess])
def delete_audit(dataset_id: DatasetIdPath, audit_id: AuditIdPath, data_dir: DataDirDep) -> Response:
    """Delete one audit (nothing else is touched)."""
    svc.delete_audit(data_dir, dataset_id, audit_id)
    return Response(status_code=204)


@router.get(
    "/{audit_id}/molecules",
    response_class=Response,
    responses={**NOT_FOUND, 200: {"content": {"text/csv": {}, "application/vnd.apache.parquet": {}}}},
)
def audit_molecules(
    dataset_id: DatasetIdPath,
    audit_id: AuditIdPath,
    data_dir: DataDirDep,
    format: Annotated[Literal["csv", "parquet"], Query(description="csv or parquet")] = "csv",
) -> Response:
    """Per-molecule errors and prediction shift of a finished audit."""
    body, media, filename = svc.molecules_download(data_dir, dataset_id, audit_id, format)
    return Response(body, media_type=media, headers={"Content-Disposition": f'attachment; filename="{filename}"'})
