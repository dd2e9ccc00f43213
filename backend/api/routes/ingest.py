"""POST /api/datasets (upload), PATCH and DELETE /api/datasets/{id}, GET /api/datasets/{id}/export.

The upload body is parsed as it streams in (``backend.api.uploads``, shared
with the model-audit upload): a body larger than the upload limit is refused
with 413 as soon as the limit is crossed, and the file part is spooled to disk.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Body, Query, Request, Response
from fastapi.responses import FileResponse
from pydantic import BaseModel, Field
from starlette.background import BackgroundTask

from backend.api.deps import DataDirDep, DatasetIdPath, WriteAccess
from backend.api.errors import NOT_FOUND
from backend.api.routes.jobs import JobsDep
from backend.api.schemas import DatasetPublic
from backend.api.uploads import invalid, multipart_body, receive_upload
from backend.loaders.detect import FORMAT_CHOICES
from backend.pipeline import export as export_mod
from backend.pipeline import ingest as ingest_mod
from backend.services import datasets as svc
from backend.store import datasets as ds

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
    format={"type": "string", "enum": list(FORMAT_CHOICES), "default": "auto"},
    strict={"type": "boolean", "default": False, "description": "fail on the first malformed record"},
)


@router.post(
    "",
    status_code=202,
    response_model=IngestAccepted,
    dependencies=[WriteAccess],
    openapi_extra=UPLOAD_BODY,
    responses={
        400: {"description": "The multipart body cannot be parsed."},
        413: {"description": "The upload is larger than the limit."},
        415: {"description": "The body is not multipart/form-data with a 'file' part."},
    },
)
async def upload_dataset(request: Request, jobs: JobsDep) -> dict:
    """Upload a dataset (multipart: file, name, optional format and strict); it is ingested in the background."""
    received = await receive_upload(
        request, jobs.limits.max_upload_bytes, jobs.upload_dir(), ("name", "format", "strict"), "the dataset"
    )
    name = (received.fields["name"] or "").strip()
    fmt = received.fields["format"] or "auto"
    strict_text = (received.fields["strict"] or "false").strip().lower()
    strict = strict_text in ("1", "true", "yes", "on")
    problems = []
    if not strict and strict_text not in ("0", "false", "no", "off"):
        problems.append(("strict", f"'strict' must be true or false (got {strict_text[:20]!r})"))
    if received.path is None:
        problems.append(("file", "the upload needs a 'file' part with the dataset"))
    if not name or len(name) > 200:
        problems.append(("name", "the upload needs a 'name' field of 1 to 200 characters"))
    if fmt not in FORMAT_CHOICES:
        problems.append(("format", f"'format' must be one of {list(FORMAT_CHOICES)} (got {fmt!r})"))
    try:
        if problems:
            raise invalid(problems)
        job = jobs.submit_ingest(received.path, name, fmt=fmt, strict=strict, original_name=received.filename)
    except BaseException:
        if received.path is not None:
            received.path.unlink(missing_ok=True)
        raise
    return {"job_id": job["id"], "dataset_id": job["dataset_id"]}


@router.patch("/{dataset_id}", response_model=DatasetPublic, responses=NOT_FOUND, dependencies=[WriteAccess])
def rename_dataset(dataset_id: DatasetIdPath, body: Annotated[DatasetRename, Body()], data_dir: DataDirDep) -> dict:
    """Change a dataset's display name."""
    ds.read_meta(data_dir, dataset_id)  # 404 for unknown ids
    ingest_mod.rename_dataset(data_dir, dataset_id, body.name)
    return svc.dataset_info(data_dir, dataset_id).to_dict()


@router.delete("/{dataset_id}", status_code=204, responses=NOT_FOUND, dependencies=[WriteAccess])
def delete_dataset(dataset_id: DatasetIdPath, data_dir: DataDirDep) -> Response:
    """Delete a dataset and its results (no other dataset is touched)."""
    ds.read_meta(data_dir, dataset_id)
    ingest_mod.delete_dataset(data_dir, dataset_id)
    return Response(status_code=204)


@router.get("/{dataset_id}/export", response_class=FileResponse, responses=NOT_FOUND)
def export_dataset(
    dataset_id: DatasetIdPath,
    data_dir: DataDirDep,
    mode: Annotated[
        Literal["random", "canonical"], Query(description="random: uniformly rotated; canonical: canonical poses")
    ],
    format: Annotated[
        Literal["xyz", "extxyz", "sdf", "asedb", "npz", "parquet"] | None,
        Query(description="default: the input's format"),
    ] = None,
    seed: Annotated[int, Query(ge=0, le=2**63 - 1, description="seed of the random rotations")] = 0,
    part: Annotated[
        Literal["data", "rotations"], Query(description="the dataset file or the per-molecule rotations (CSV)")
    ] = "data",
) -> FileResponse:
    """The dataset with de-biased poses (or, with part=rotations, the rotation applied to each molecule)."""
    meta = ds.read_meta(data_dir, dataset_id)
    fmt = format or export_mod.default_format(meta)
    filename = export_mod.export_filename(dataset_id, mode, fmt)
    tmp = Path(tempfile.mkdtemp(prefix="orientscope-export-"))
    try:
        info = export_mod.export_dataset(data_dir, dataset_id, mode, tmp / filename, seed=seed, fmt=fmt)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    path = Path(info["rotations_path"] if part == "rotations" else info["path"])
    media = "text/csv" if part == "rotations" else "application/octet-stream"
    cleanup = BackgroundTask(shutil.rmtree, tmp, ignore_errors=True)
    return FileResponse(path, media_type=media, filename=path.name, background=cleanup)
