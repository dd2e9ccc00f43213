"""POST /api/canonicalize: the canonical frame of one molecule, computed on the spot."""

from fastapi import APIRouter

from orientscope.api.schemas import CanonicalizePublic, CanonicalizeRequest
from orientscope.services import canonicalize as svc

router = APIRouter(tags=["canonicalize"])


@router.post("/canonicalize", response_model=CanonicalizePublic)
def canonicalize(body: CanonicalizeRequest) -> dict:
    """Canonicalise a molecule given as elements + positions or xyz text (stateless; same code as the pipeline)."""
    return svc.canonicalize(body.elements, body.positions, body.xyz, body.method, body.sign_rule, body.mass_weighted)
