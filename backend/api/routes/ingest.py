"""POST /api/datasets (upload), PATCH and DELETE /api/datasets/{id}, GET /api/datasets/{id}/export.

The upload body is parsed as it streams in: a body larger than the upload
limit is refused with 413 as soon as the limit is crossed, before the rest is
read, and the file part is spooled to disk, never held in memory.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Body, HTTPException, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse
from pydantic import BaseModel, Field
from starlette.background import BackgroundTask
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser

from backend.api.deps import DataDirDep, DatasetIdPath, WriteAccess
from backend.api.errors import NOT_FOUND
from backend.api.routes.jobs import JobsDep
from backend.api.schemas import DatasetPublic
from backend.loaders.detect import FORMAT_CHOICES
from backend.pipeline import export as export_mod
from backend.pipeline import ingest as ingest_mod
from backend.pipeline.jobs import jobs_dir
from backend.services import datasets as svc
from backend.store import datasets as ds

router = APIRouter(prefix="/datasets", tags=["datasets"])

MULTIPART_OVERHEAD = 64 * 1024  # boundaries, part headers and the small form fields
CHUNK = 1 << 20


class IngestAccepted(BaseModel):
    """An accepted upload: poll GET /api/jobs/{job_id} for progress."""

    job_id: str = Field(description="Id of the background ingest job.")
    dataset_id: str = Field(description="Id the dataset will have once the job is done.")


class DatasetRename(BaseModel):
    """A new display name for a dataset."""

    name: str = Field(min_length=1, max_length=200, description="New display name (the id stays).")


class _TooLarge(Exception):
    pass


async def _limited(stream, limit: int):
    received = 0
    async for chunk in stream:
        received += len(chunk)
        if received > limit:
            raise _TooLarge
        yield chunk


def _safe_filename(name: str | None) -> str:
    base = Path(name or "").name
    base = re.sub(r"[^A-Za-z0-9._\-]+", "_", base).lstrip(".")
    return base[:120] or "upload"


def _form_text(form, key: str) -> str | None:
    value = form.get(key)
    if value is None or isinstance(value, UploadFile):
        return None
    return str(value)


UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file", "name"],
                    "properties": {
                        "file": {
                            "type": "string",
                            "format": "binary",
                            "description": "the dataset file or a zip/tar of files",
                        },
                        "name": {"type": "string", "description": "display name; the dataset id is derived from it"},
                        "format": {"type": "string", "enum": list(FORMAT_CHOICES), "default": "auto"},
                        "strict": {
                            "type": "boolean",
                            "default": False,
                            "description": "fail on the first malformed record",
                        },
                    },
                }
            }
        },
    }
}


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
    limit = jobs.limits.max_upload_bytes
    too_large = HTTPException(413, f"upload larger than the limit of {limit:,} bytes (ORIENTSCOPE_MAX_UPLOAD_MB)")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit + MULTIPART_OVERHEAD:
        raise too_large
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise HTTPException(415, "send the dataset as multipart/form-data with a 'file' part and a 'name' field")
    parser = MultiPartParser(
        request.headers, _limited(request.stream(), limit + MULTIPART_OVERHEAD), max_files=1, max_fields=8
    )
    try:
        form = await parser.parse()
    except _TooLarge:
        raise too_large from None
    except MultiPartException as err:
        raise HTTPException(400, f"malformed multipart body: {err.message}") from None
    try:
        upload = form.get("file")
        name = (_form_text(form, "name") or "").strip()
        fmt = _form_text(form, "format") or "auto"
        strict_text = (_form_text(form, "strict") or "false").strip().lower()
        strict = strict_text in ("1", "true", "yes", "on")
        problems = []
        if not strict and strict_text not in ("0", "false", "no", "off"):
            problems.append(("strict", f"'strict' must be true or false (got {strict_text[:20]!r})"))
        if not isinstance(upload, UploadFile):
            problems.append(("file", "the upload needs a 'file' part with the dataset"))
        if not name or len(name) > 200:
            problems.append(("name", "the upload needs a 'name' field of 1 to 200 characters"))
        if fmt not in FORMAT_CHOICES:
            problems.append(("format", f"'format' must be one of {list(FORMAT_CHOICES)} (got {fmt!r})"))
        if problems:
            raise RequestValidationError(
                [{"loc": ("body", field), "msg": msg, "type": "value_error"} for field, msg in problems]
            )
        incoming = jobs_dir(jobs.data_dir) / ".incoming"
        incoming.mkdir(parents=True, exist_ok=True)
        filename = _safe_filename(upload.filename)
        target = incoming / f"{uuid.uuid4().hex}-{filename}"
        with open(target, "wb") as out:
            while chunk := await upload.read(CHUNK):
                out.write(chunk)
        if target.stat().st_size == 0:
            target.unlink()
            raise RequestValidationError(
                [{"loc": ("body", "file"), "msg": f"the uploaded file {filename!r} is empty", "type": "value_error"}]
            )
        job = jobs.submit_ingest(target, name, fmt=fmt, strict=strict, original_name=filename)
    finally:
        await form.close()
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
