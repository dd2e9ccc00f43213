"""GET /api/datasets/{id}/groups?by=scaffold|formula|cluster."""

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from orientscope.api.deps import DataDirDep, DatasetIdPath
from orientscope.api.errors import NOT_COMPUTED, NOT_FOUND
from orientscope.api.schemas import GroupsPublic
from orientscope.core.groups import GROUP_KINDS
from orientscope.services import groups as svc

router = APIRouter(prefix="/datasets/{dataset_id}", tags=["groups"])


@router.get("/groups", response_model=GroupsPublic, responses={**NOT_FOUND, **NOT_COMPUTED})
def groups(
    dataset_id: DatasetIdPath,
    data_dir: DataDirDep,
    by: Annotated[
        Literal[GROUP_KINDS],
        Query(description="formula is always available; scaffold and cluster need the chemistry stage (else 409)."),
    ] = "formula",
) -> dict:
    """The groups with their statistics, largest first."""
    return svc.list_groups(data_dir, dataset_id, by)
