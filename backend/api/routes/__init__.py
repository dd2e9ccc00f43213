"""One APIRouter per resource; ``ROUTERS`` is mounted under /api in this order."""

from orientscope.api.routes import (
    canonicalize,
    datasets,
    exports,
    groups,
    health,
    ingest,
    jobs,
    map_selection,
    model_audits,
    molecules,
    neighbors,
    orientation_map,
    orientations,
    scatter,
    smarts,
)

ROUTERS = [
    health.router,
    datasets.router,
    molecules.router,
    smarts.router,
    orientations.router,
    orientation_map.router,
    map_selection.router,
    scatter.router,
    groups.router,
    neighbors.router,
    canonicalize.router,
    ingest.router,
    exports.router,
    jobs.router,
    model_audits.router,
]
