"""Dependencies shared by the routers, as ``Annotated`` aliases."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request
from fastapi import Path as PathParam


@dataclass(frozen=True)
class ApiSettings:
    """What one server instance serves and who may write to it."""

    data_dir: Path
    read_only: bool = False
    token: str | None = None


def get_settings(request: Request) -> ApiSettings:
    return request.app.state.settings


def get_data_dir(request: Request) -> Path:
    return request.app.state.settings.data_dir


SettingsDep = Annotated[ApiSettings, Depends(get_settings)]
DataDirDep = Annotated[Path, Depends(get_data_dir)]
DatasetIdPath = Annotated[str, PathParam(description="Dataset id, e.g. 'qm9'.", max_length=64)]
MoleculeIdPath = Annotated[str, PathParam(description="Molecule id within the dataset, e.g. '1'.", max_length=256)]
