"""Exports with de-biased poses: GET /api/datasets/{id}/export (direct, for datasets up to
ORIENTSCOPE_DIRECT_EXPORT_MAX molecules), and POST /api/datasets/{id}/exports (a background job of any size)
with GET /api/datasets/{id}/exports/{export_id} to download its files.

Exports only read the dataset store, so they are open on read-only servers and need no token.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Body, Query
from fastapi import Path as PathParam
from fastapi.responses import FileResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from starlette.background import BackgroundTask

from orientscope.api.deps import DataDirDep, DatasetIdPath
from orientscope.api.errors import BUSY, NOT_FOUND
from orientscope.api.routes.jobs import JobsDep
from orientscope.api.schemas import ErrorPublic
from orientscope.services import exports as export_service
from orientscope.services import formats
from orientscope.services.exports import EXPORT_FORMATS, MAX_COPIES, MODES, PURPOSES, ExportFiles, ExportRequest

router = APIRouter(prefix="/datasets", tags=["exports"])

ModeField = Literal[MODES]  # type: ignore[valid-type]
FormatField = Literal[EXPORT_FORMATS]  # type: ignore[valid-type]
PurposeField = Literal[PURPOSES]  # type: ignore[valid-type]
PURPOSE_HELP = (
    "random mode: the rotation stream. augment (default): training data, the de-biased set; audit: the copies "
    "a model audit scores. A copy's rotation is a function of (purpose, seed, copy, molecule id), so the two "
    "never share a pose"
)
LIMIT_HELP = "export an evenly spread subset of this many molecules (of the ids, when given)"
# An export's ids travel in its job record: a bound keeps that record small.
MAX_EXPORT_IDS = 1_000_000
MODE_HELP = "random: every molecule uniformly rotated; canonical: every molecule in its canonical pose"
FORMAT_HELP = f"file format (default: the input's format where it can be written, else {formats.DEFAULT_EXPORT})"
SEED_HELP = "seed of the random rotations"
PartQuery = Annotated[
    Literal["data", "rotations"], Query(description="the dataset file or the per-molecule rotations (CSV)")
]
ExportIdPath = Annotated[
    str, PathParam(description="Export id returned by POST /api/datasets/{id}/exports.", max_length=64)
]
TOO_LARGE = {413: {"model": ErrorPublic, "description": "Too large to export directly: use POST …/exports."}}
NOT_READY = {409: {"model": ErrorPublic, "description": "The export job is still running, or failed."}}
CSV = "text/csv"
FILES = {
    200: {
        "description": "The exported file (part=data), in its format's media type, or the rotations (part=rotations).",
        "content": {
            media: {"schema": {"type": "string", "format": "binary"}} for media in (*formats.export_media_types(), CSV)
        },
    }
}


class ExportBody(BaseModel):
    """What to export."""

    model_config = ConfigDict(extra="forbid")

    mode: ModeField = Field(description=MODE_HELP)
    format: FormatField | None = Field(default=None, description=FORMAT_HELP)
    # strict: a JSON true/false is not a number (pydantic would read it as 1/0)
    seed: int = Field(default=0, ge=0, le=2**63 - 1, strict=True, description=SEED_HELP)
    copies: int | None = Field(
        default=None,
        ge=1,
        strict=True,
        le=MAX_COPIES,
        description="random mode only: write that many rotated copies (training data, or with purpose "
        "audit the input of a model audit); download copy k with ?copy=k",
    )
    purpose: PurposeField = Field(default="augment", description=PURPOSE_HELP)
    ids: list[str] | None = Field(
        default=None, min_length=1, max_length=MAX_EXPORT_IDS, description="export only the molecules with these ids"
    )
    limit: int | None = Field(default=None, ge=1, strict=True, description=LIMIT_HELP)

    @field_validator("copies")
    @classmethod
    def _random_only(cls, copies: int | None, info: ValidationInfo) -> int | None:
        if copies is not None and info.data.get("mode") != "random":
            raise ValueError("copies are rotated copies: use mode 'random' with copies")
        return copies


class ExportAccepted(BaseModel):
    """An accepted export: follow GET /api/jobs/{job_id}, then download GET …/exports/{export_id}."""

    job_id: str = Field(description="Id of the background export job.")
    export_id: str = Field(description="Id of the export's files once the job is done.")


def _file(files: ExportFiles, part: str) -> FileResponse:
    path = files.rotations if part == "rotations" else files.data
    media = CSV if part == "rotations" else formats.media_type_of(path)
    cleanup = BackgroundTask(files.cleanup) if files.folder is not None else None
    return FileResponse(path, media_type=media, filename=path.name, background=cleanup)


@router.get("/{dataset_id}/export", response_class=FileResponse, responses={**NOT_FOUND, **TOO_LARGE, **FILES})
def export_dataset(
    dataset_id: DatasetIdPath,
    data_dir: DataDirDep,
    mode: Annotated[ModeField, Query(description=MODE_HELP)],
    format: Annotated[FormatField | None, Query(description=FORMAT_HELP)] = None,
    seed: Annotated[int, Query(ge=0, le=2**63 - 1, description=SEED_HELP)] = 0,
    part: PartQuery = "data",
    purpose: Annotated[PurposeField, Query(description=PURPOSE_HELP)] = "augment",
    limit: Annotated[int | None, Query(ge=1, description=LIMIT_HELP)] = None,
) -> FileResponse:
    """The dataset with de-biased poses, written while you wait (or, with part=rotations, each molecule's rotation)."""
    request = ExportRequest(mode, format, seed, purpose=purpose, limit=limit)
    files = export_service.export_now(data_dir, dataset_id, request)
    return _file(files, part)


@router.post(
    "/{dataset_id}/exports",
    status_code=202,
    response_model=ExportAccepted,
    responses={**NOT_FOUND, **BUSY},
)
def submit_export(dataset_id: DatasetIdPath, body: Annotated[ExportBody, Body()], jobs: JobsDep) -> dict:
    """Export the dataset with de-biased poses in the background; answers the job and export ids."""
    request = ExportRequest(body.mode, body.format, body.seed, body.copies, body.purpose, body.ids, body.limit)
    job = jobs.submit_export(dataset_id, request)
    return {"job_id": job["id"], "export_id": job["export_id"]}


@router.get(
    "/{dataset_id}/exports/{export_id}", response_class=FileResponse, responses={**NOT_FOUND, **NOT_READY, **FILES}
)
def download_export(
    dataset_id: DatasetIdPath,
    export_id: ExportIdPath,
    data_dir: DataDirDep,
    part: PartQuery = "data",
    copy: Annotated[
        int, Query(ge=0, lt=MAX_COPIES, description="which rotated copy of an export with copies (0 first)")
    ] = 0,
) -> FileResponse:
    """The file of a finished export (or, with part=rotations, each molecule's rotation as CSV)."""
    return _file(export_service.export_files(data_dir, dataset_id, export_id, copy), part)
