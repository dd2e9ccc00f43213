"""Map service errors to HTTP answers: 404 unknown ids, 409 not computed or not ready, 413 too large for the
route, 422 bad input, 429 busy, 503 unavailable in this setup.

Every 422 has FastAPI's validation shape ``{"detail": [{"loc", "msg", "type"}]}``
so clients parse one format whatever caught the problem.
"""

from __future__ import annotations

import logging
from typing import Literal

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import Field

from orientscope.api.schemas import ErrorPublic
from orientscope.core.errors import Busy, NotFoundError, NotReady, OrientScopeError, TooLarge, Unavailable
from orientscope.services.errors import NotComputed, SearchPending

log = logging.getLogger(__name__)

NOT_FOUND = {404: {"model": ErrorPublic, "description": "Unknown dataset or molecule (the message names it)."}}
NOT_COMPUTED = {409: {"model": ErrorPublic, "description": "The pipeline stage this needs has not been computed."}}
# Routes that start a job (export, SMARTS search): the queue is full, or the job has nowhere to write.
BUSY = {
    429: {
        "model": ErrorPublic,
        "description": "Too many jobs of any kind are queued or running (ORIENTSCOPE_MAX_QUEUED_JOBS); see Retry-After.",
    },
    503: {"model": ErrorPublic, "description": "The server has no writable export folder (ORIENTSCOPE_EXPORT_DIR)."},
}


class SearchPendingPublic(ErrorPublic):
    """A SMARTS search that runs as a background job has not finished."""

    job_id: str | None = Field(None, description="The search job: follow GET /api/jobs/{job_id}.")
    search_id: str | None = Field(None, description="Id of the search's kept result.")
    state: Literal["queued", "running", "done", "failed"] | None = Field(None, description="Where the job is.")
    progress: float | None = Field(None, ge=0, le=1, description="Fraction of the shards scanned, 0-1.")


SEARCH_PENDING = {
    409: {
        "model": SearchPendingPublic,
        "description": "With `smarts` on a large sharded set (above ORIENTSCOPE_SMARTS_JOB_ABOVE molecules): the "
        "search runs as a background job that has not finished (or not been started with POST …/smarts). The body "
        "adds job_id, search_id, state and progress when there is a job; the Location header names GET "
        "/api/jobs/{job_id}. Also 409 when a pipeline stage this needs has not been computed.",
    }
}


def validation_body(message: str, loc: tuple = ()) -> dict:
    return {"detail": [{"loc": list(loc) or ["body"], "msg": message, "type": "value_error"}]}


def _plain(status: int):
    async def answer(_: Request, exc: OrientScopeError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=status)

    return answer


async def _busy(_: Request, exc: Busy) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=429, headers={"Retry-After": str(exc.retry_after)})


async def _search_pending(_: Request, exc: SearchPending) -> JSONResponse:
    job = exc.job
    if job is None:
        return JSONResponse({"detail": str(exc)}, status_code=409)
    body = {"detail": str(exc), "job_id": job["id"], "search_id": job.get("search_id")}
    body |= {"state": job["state"], "progress": job["progress"]}
    return JSONResponse(body, status_code=409, headers={"Location": f"/api/jobs/{job['id']}"})


async def _invalid(_: Request, exc: OrientScopeError) -> JSONResponse:
    # InvalidInput names the field it is about (``loc``); any other error a user can fix is about the body.
    return JSONResponse(validation_body(str(exc), getattr(exc, "loc", ())), status_code=422)


async def _value_error(request: Request, exc: ValueError) -> JSONResponse:
    # Services and loaders raise ValueError naming what is wrong with the input; never a 500 for it.
    log.info("%s %s: %s", request.method, request.url.path, exc)
    return JSONResponse(validation_body(str(exc)), status_code=422)


# FastAPI repeats each wrong value as "input"; a whole body sent to the wrong route (a 2 MB file posted as
# multipart to /api/canonicalize) came back in full. Longer values are cut to this many characters.
MAX_ECHO_CHARS = 200


def _echo(value):
    """``value`` as a 422 repeats it: whole when short, else its start and its length."""
    text = value.decode("latin-1") if isinstance(value, bytes) else value if isinstance(value, str) else None
    if text is None:
        text = str(value)
        if len(text) <= MAX_ECHO_CHARS:
            return value
    if len(text) <= MAX_ECHO_CHARS:
        return text
    return f"{text[:MAX_ECHO_CHARS]}… (cut: {len(text):,} characters)"


async def _request_invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
    errors = [{**e, "input": _echo(e["input"])} if "input" in e else e for e in exc.errors()]
    return JSONResponse({"detail": jsonable_encoder(errors)}, status_code=422)


def install_error_handlers(app: FastAPI) -> None:
    """Starlette answers an error with the handler of its nearest class (its MRO): a DatasetError, also a
    ValueError, is an OrientScopeError first."""
    plain = ((NotFoundError, 404), (NotComputed, 409), (NotReady, 409), (TooLarge, 413), (Unavailable, 503))
    for error, status in plain:
        app.add_exception_handler(error, _plain(status))
    app.add_exception_handler(SearchPending, _search_pending)
    app.add_exception_handler(Busy, _busy)
    app.add_exception_handler(OrientScopeError, _invalid)
    app.add_exception_handler(ValueError, _value_error)
    app.add_exception_handler(RequestValidationError, _request_invalid)
