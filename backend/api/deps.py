"""Dependencies shared by the routers, as ``Annotated`` aliases."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Header, HTTPException, Request
from fastapi import Path as PathParam


@dataclass(frozen=True)
class ApiSettings:
    """What one server instance serves and who may write to it."""

    data_dir: Path
    read_only: bool = False
    token: str | None = None


async def get_settings(request: Request) -> ApiSettings:
    return request.app.state.settings


async def get_data_dir(request: Request) -> Path:
    return request.app.state.settings.data_dir


SettingsDep = Annotated[ApiSettings, Depends(get_settings)]
DataDirDep = Annotated[Path, Depends(get_data_dir)]
DatasetIdPath = Annotated[str, PathParam(description="Dataset id, e.g. 'qm9'.", max_length=64, examples=["qm9"])]
MoleculeIdPath = Annotated[
    str, PathParam(description="Molecule id within the dataset, e.g. '1'.", max_length=256, examples=["1"])
]


def require_write(request: Request, authorization: Annotated[str | None, Header()] = None) -> None:
    """Allow a write only on a writable server and, when a token is set, with ``Authorization: Bearer <token>``."""
    settings: ApiSettings = request.app.state.settings
    if settings.read_only:
        raise HTTPException(403, "this server is read-only (--read-only); uploads, renames and deletes are disabled")
    if settings.token:
        scheme, _, given = (authorization or "").partition(" ")
        # compare_digest: the time taken does not reveal how much of the token matched.
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), settings.token.encode()):
            raise HTTPException(
                401,
                "writes need the header 'Authorization: Bearer <token>' with the server's ORIENTSCOPE_TOKEN",
                headers={"WWW-Authenticate": "Bearer"},
            )


WriteAccess = Depends(require_write)
