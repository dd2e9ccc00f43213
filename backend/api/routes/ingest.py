"""POST /api/datasets (upload), PATCH and DELETE /api/datasets/{id}.

The upload body is parsed as it streams in (``orientscope.api.uploads``, shared
with the model-audit upload): a body larger than the upload limit is refused
with 413 as soon as the limit is crossed, and the file part is spooled to disk.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Request, Response
from pydantic import BaseModel, Field

from orientscope.api.deps import DataDirDep, DatasetIdPath, WriteAccess
from orientscope.api.errors import NOT_FOUND
from orientscope.api.routes.jobs import JobsDep
from orientscope.api.schemas import DatasetPublic
from orientscope.api.uploads import UPLOAD_RESPONSES, invalid, multipart_body, receive_upload
from orientscope.services import formats
from orientscope.services import ingest as ingest_service
from orientscope.services.errors import InvalidInput

router = APIRouter(prefix="/datasets", tags=["datasets"])


class IngestAccepted(BaseModel):
    """An accepted upload: poll GET /api/jobs/{job_id} for progress."""

    job_id: str = Field(description="Id of the background ingest job.")
    dataset_id: str = Field(description="Id the dataset will have once the job is done.")


class DatasetRename(BaseModel):
    """A new display name for a dataset."""

    name: str = Field(min_length=1, max_length=200, description="New display name (the id stays).")


UPLOAD_BODY = multipart_body(
    "the dataset file or a zip/tar of files",
    "display name; the dataset id is derived from it",
    format={"type": "string", "enum": list(formats.INGEST_CHOICES), "default": formats.AUTO},
    strict={"type": "boolean", "default": False, "description": "fail on the first malformed record"},
    format_options={
        "type": "string",
        "description": "the format's reading options as name=value pairs separated by commas, e.g. "
        "coordinates=model,fallback=yes for the Chemical Component Dictionary (docs/formats.md)",
    },
)


@router.post(
    "",
    status_code=202,
    response_model=IngestAccepted,
    dependencies=[WriteAccess],
    openapi_extra=UPLOAD_BODY,
    responses=UPLOAD_RESPONSES,
)
async def upload_dataset(request: Request, jobs: JobsDep) -> dict:
    """Upload a dataset (multipart: file, name, optional format, strict and format_options); it is ingested in
    the background."""
    jobs.check_room()  # before the body streams in: a full queue costs the client nothing to learn
    fields = ("name", "format", "strict", "format_options")
    received = await receive_upload(request, jobs.limits.max_upload_bytes, jobs.upload_dir(), fields, "the dataset")
    fmt = received.fields["format"] or formats.AUTO
    strict_text = (received.fields["strict"] or "false").strip().lower()
    strict = strict_text in ("1", "true", "yes", "on")
    problems = received.problems("the dataset")
    if not strict and strict_text not in ("0", "false", "no", "off"):
        problems.append(("strict", f"'strict' must be true or false (got {strict_text[:20]!r})"))
    options = {}
    if fmt not in formats.INGEST_CHOICES:
        problems.append(("format", f"'format' must be one of {list(formats.INGEST_CHOICES)} (got {fmt!r})"))
    else:
        try:
            options = formats.format_options(fmt, received.fields["format_options"])
        except InvalidInput as err:
            problems.append(("format_options", str(err)))
    with received.removed_on_failure():
        if problems:
            raise invalid(problems)
        job = jobs.submit_ingest(
            received.path,
            received.name,
            fmt=fmt,
            strict=strict,
            original_name=received.filename,
            format_options=options,
        )
    return {"job_id": job["id"], "dataset_id": job["dataset_id"]}


@router.patch("/{dataset_id}", response_model=DatasetPublic, responses=NOT_FOUND, dependencies=[WriteAccess])
def rename_dataset(dataset_id: DatasetIdPath, body: Annotated[DatasetRename, Body()], data_dir: DataDirDep) -> dict:
    """Change a dataset's display name."""
    return ingest_service.rename_dataset(data_dir, dataset_id, body.name).to_dict()


@router.delete("/{dataset_id}", status_code=204, responses=NOT_FOUND, dependencies=[WriteAccess])
def delete_dataset(dataset_id: DatasetIdPath, data_dir: DataDirDep) -> Response:
    """Delete a dataset and its results (no other dataset is touched)."""
    ingest_service.delete_dataset(data_dir, dataset_id)
    return Response(status_code=204)
