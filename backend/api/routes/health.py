"""GET /api/health."""

from fastapi import APIRouter

from backend import __version__
from backend.api.deps import SettingsDep
from backend.api.schemas import HealthPublic

router = APIRouter(tags=["health"])


@router.get("/health", response_model=HealthPublic)
def health(settings: SettingsDep) -> dict:
    """Liveness and version."""
    return {"status": "ok", "version": __version__, "read_only": settings.read_only}
