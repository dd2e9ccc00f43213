"""GET /api/datasets, /api/datasets/{id} and /api/datasets/{id}/summary (``summary_router``, made per app)."""

from fastapi import APIRouter, Request, Response

from orientscope.api.deps import DataDirDep, DatasetIdPath
from orientscope.api.encoded import answer, json_bytes
from orientscope.api.errors import NOT_FOUND
from orientscope.api.schemas import DatasetPublic, summary_model
from orientscope.services import datasets as svc

router = APIRouter(prefix="/datasets", tags=["datasets"])


@router.get("", response_model=list[DatasetPublic])
def list_datasets(data_dir: DataDirDep) -> list[dict]:
    """Every stored dataset with its status."""
    return [d.to_dict() for d in svc.list_datasets(data_dir)]


@router.get("/{dataset_id}", response_model=DatasetPublic, responses=NOT_FOUND)
def get_dataset(dataset_id: DatasetIdPath, data_dir: DataDirDep) -> dict:
    """One dataset with its status."""
    return svc.dataset_info(data_dir, dataset_id).to_dict()


async def summary(dataset_id: DatasetIdPath, data_dir: DataDirDep, request: Request) -> Response:
    """The report object, exactly as `orientscope report ID --json` prints it."""
    raw = await answer(svc.summary_json, data_dir, dataset_id)
    return json_bytes(request, raw, await answer(svc.summary_json_gzip, data_dir, dataset_id))


def summary_router() -> APIRouter:
    """The summary's route, made per app: its schema lists the statistics registered when the app is built."""
    out = APIRouter(prefix=router.prefix, tags=router.tags)
    out.add_api_route("/{dataset_id}/summary", summary, response_model=summary_model(), responses=NOT_FOUND)
    return out
