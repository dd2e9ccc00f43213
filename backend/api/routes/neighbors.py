"""GET /api/datasets/{id}/neighbors/{mol_id}?by=pose|chemistry&k=."""

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from orientscope.api.deps import DataDirDep, DatasetIdPath, MoleculeIdPath
from orientscope.api.encoded import answer, json_record
from orientscope.api.errors import NOT_COMPUTED, NOT_FOUND
from orientscope.api.schemas import NeighborsPublic
from orientscope.services import neighbors as svc

router = APIRouter(prefix="/datasets/{dataset_id}", tags=["neighbors"])


@router.get("/neighbors/{mol_id:path}", response_model=NeighborsPublic, responses={**NOT_FOUND, **NOT_COMPUTED})
async def neighbors(
    dataset_id: DatasetIdPath,
    mol_id: MoleculeIdPath,
    data_dir: DataDirDep,
    by: Annotated[
        Literal["pose", "chemistry"],
        Query(
            description="pose: geodesic angle between frames; chemistry: Tanimoto (needs the chemistry stage, else 409)."
        ),
    ] = "pose",
    k: Annotated[int, Query(ge=1, le=svc.MAX_K, description=f"Number of neighbours, at most {svc.MAX_K}.")] = 10,
):
    """The k nearest molecules in pose or in chemistry, nearest first."""
    return json_record(await answer(svc.neighbors, data_dir, dataset_id, mol_id, by, k))
