"""Dependencies shared by the routers, as ``Annotated`` aliases."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from fastapi import Depends, Header, HTTPException, Query, Request
from fastapi import Path as PathParam
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError

from orientscope.api.tokens import bearer, same_secret


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
# How the map and the scatter view colour their molecules (orientscope.services.map_view.point_colors).
MapColorQuery = Annotated[
    str,
    Query(
        max_length=200,
        description="axis, group, score, prop:<name> (a property of the dataset) or shift:<audit_id>:<property> "
        "(a model audit's prediction shift; molecules outside the audit have none).",
    ),
]
GroupingQuery = Annotated[
    Literal["scaffold", "formula", "cluster"], Query(description="Groups for color=group and for `group`.")
]


def require_write(request: Request, authorization: Annotated[str | None, Header()] = None) -> None:
    """Allow a write only on a writable server and, when a token is set, with ``Authorization: Bearer <token>``."""
    settings: ApiSettings = request.app.state.settings
    if settings.read_only:
        raise HTTPException(403, "this server is read-only (--read-only); uploads, renames and deletes are disabled")
    if settings.token:
        if not same_secret(bearer(authorization), settings.token):
            raise HTTPException(
                401,
                "writes need the header 'Authorization: Bearer <token>' with the server's ORIENTSCOPE_TOKEN",
                headers={"WWW-Authenticate": "Bearer"},
            )


WriteAccess = Depends(require_write)


def _query_names(dependant: Dependant) -> frozenset[str]:
    """Query parameter names a route declares, its dependencies' included."""
    names = {field.alias for field in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return frozenset(names)


async def reject_unknown_query(request: Request) -> None:
    """422 naming the accepted parameters when the query string has one the route does not declare.

    A typo such as ``limt=5`` would otherwise be ignored silently and the default used.
    Async, so it runs on the event loop rather than costing a thread hop per request.
    """
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None:
        return
    declared = _query_names(dependant)  # a few fields: cheaper than any cache keyed on the route
    unknown = [name for name in dict.fromkeys(request.query_params) if name not in declared]
    if unknown:
        accepted = ", ".join(sorted(declared)) or "none"
        raise RequestValidationError(
            [
                {
                    "loc": ("query", name),
                    "msg": f"unknown query parameter {name!r}; {request.url.path} accepts: {accepted}",
                    "type": "value_error",
                }
                for name in unknown
            ]
        )


KnownQueryOnly = Depends(reject_unknown_query)
