"""GET /api/health."""

from fastapi import APIRouter, Request
from pydantic import Field

from orientscope import __version__
from orientscope.api.deps import SettingsDep
from orientscope.api.routes.jobs import start_recovery
from orientscope.api.schemas import HealthPublic
from orientscope.services.datasets import COMPUTING, FAILED, NEEDS_MIGRATION, READY, list_datasets
from orientscope.services.jobs import job_counts

router = APIRouter(tags=["health"])


class HealthStatus(HealthPublic):
    """Liveness, readiness and the state of the datasets and background jobs."""

    ready: bool = Field(description="True once at least one dataset is ready to browse.")
    datasets: dict[str, int] = Field(
        description="How many datasets are ready, computing, failed and needs_migration (stored before the "
        "sharded layout; `orientscope migrate ID` converts them)."
    )
    jobs: dict[str, int] = Field(description="How many background jobs are queued, running, done and failed.")
    warming: bool = Field(
        description="True while the server loads its ready datasets, map indexes and search trees in the background "
        "after start; requests are answered meanwhile, some of them slower."
    )


@router.get("/health", response_model=HealthStatus)
def health(request: Request, settings: SettingsDep) -> dict:
    """Liveness, version, readiness and counts of datasets and jobs by state."""
    start_recovery(request)
    datasets = dict.fromkeys((READY, COMPUTING, FAILED, NEEDS_MIGRATION), 0)
    for info in list_datasets(settings.data_dir):
        datasets[info.status] = datasets.get(info.status, 0) + 1
    jobs = job_counts(settings.data_dir)
    return {
        "status": "ok",
        "version": __version__,
        "read_only": settings.read_only,
        "ready": datasets[READY] > 0,
        "datasets": datasets,
        "jobs": jobs,
        "warming": bool(getattr(request.app.state, "warming", False)),
    }
