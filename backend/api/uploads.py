"""Receiving a multipart upload as it streams in: shared by the dataset upload and the model-audit upload.

A body larger than the limit is refused with 413 as soon as the limit is
crossed, before the rest is read; the file part is spooled to disk, never
held in memory; an empty file is a 422.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fastapi import HTTPException, Request
from fastapi.exceptions import RequestValidationError
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser

from orientscope.core.settings import MAX_NAME_LENGTH

MULTIPART_OVERHEAD = 64 * 1024  # boundaries, part headers and the small form fields
CHUNK = 1 << 20


class _TooLarge(Exception):
    pass


async def _limited(stream, limit: int):
    received = 0
    async for chunk in stream:
        received += len(chunk)
        if received > limit:
            raise _TooLarge
        yield chunk


def safe_filename(name: str | None) -> str:
    base = Path(name or "").name
    base = re.sub(r"[^A-Za-z0-9._\-]+", "_", base).lstrip(".")
    return base[:120] or "upload"


def invalid(problems: list[tuple[str, str]]) -> RequestValidationError:
    """A 422 naming each (form field, problem)."""
    return RequestValidationError(
        [{"loc": ("body", field), "msg": msg, "type": "value_error"} for field, msg in problems]
    )


# The answers every multipart upload route may give besides its own.
UPLOAD_RESPONSES = {
    400: {"description": "The multipart body cannot be parsed."},
    413: {"description": "The upload is larger than the limit."},
    415: {"description": "The body is not multipart/form-data with a 'file' part."},
    429: {"description": "The data folder has as many jobs queued or running as it takes; see Retry-After."},
}


def multipart_body(file_help: str, name_help: str, **more: dict) -> dict:
    """``openapi_extra`` documenting an upload body: a binary ``file``, a ``name`` and ``more`` fields."""
    properties = {
        "file": {"type": "string", "format": "binary", "description": file_help},
        "name": {"type": "string", "description": name_help},
        **more,
    }
    schema = {"type": "object", "required": ["file", "name"], "properties": properties}
    return {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": schema}}}}


@dataclass(frozen=True)
class Received:
    """An upload on disk (``path`` None when the body had no file part) and its text fields."""

    path: Path | None
    filename: str
    fields: dict[str, str | None]

    @property
    def name(self) -> str:
        """The ``name`` field without surrounding spaces ("" if absent)."""
        return (self.fields.get("name") or "").strip()

    def problems(self, file_help: str) -> list[tuple[str, str]]:
        """What every upload route checks: a ``file`` part (``file_help`` says what) and a name it can keep."""
        problems = []
        if self.path is None:
            problems.append(("file", f"the upload needs a 'file' part with {file_help}"))
        if not self.name or len(self.name) > MAX_NAME_LENGTH:
            problems.append(("name", f"the upload needs a 'name' field of 1 to {MAX_NAME_LENGTH} characters"))
        return problems

    @contextmanager
    def removed_on_failure(self) -> Iterator[None]:
        """Delete the spooled file if the block fails (a queued job moves it away instead)."""
        try:
            yield
        except BaseException:
            if self.path is not None:
                self.path.unlink(missing_ok=True)
            raise


async def receive_upload(request: Request, limit: int, incoming: Path, fields: tuple[str, ...], what: str) -> Received:
    """Stream a multipart body's ``file`` part to ``incoming`` and read the text ``fields``.

    Raises HTTPException 413 (over ``limit`` bytes), 415 (not multipart), 400
    (malformed) and a 422 for an empty file; ``what`` names the file in messages.
    """
    too_large = HTTPException(413, f"upload larger than the limit of {limit:,} bytes (ORIENTSCOPE_MAX_UPLOAD_MB)")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit + MULTIPART_OVERHEAD:
        raise too_large
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise HTTPException(415, f"send {what} as multipart/form-data with a 'file' part and a 'name' field")
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
        values = {}
        for key in fields:
            value = form.get(key)
            values[key] = None if value is None or isinstance(value, UploadFile) else str(value)
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            return Received(None, "", values)
        filename = safe_filename(upload.filename)
        incoming.mkdir(parents=True, exist_ok=True)
        target = incoming / f"{uuid.uuid4().hex}-{filename}"
        with open(target, "wb") as out:
            while chunk := await upload.read(CHUNK):
                out.write(chunk)
    finally:
        await form.close()
    if target.stat().st_size == 0:
        target.unlink()
        raise invalid([("file", f"the uploaded file {filename!r} is empty")])
    return Received(target, filename, values)
