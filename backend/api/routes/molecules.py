"""GET /api/datasets/{id}/molecules, /api/datasets/{id}/molecules/{mol_id} and its depiction.svg."""

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response
from starlette.concurrency import run_in_threadpool

from orientscope.api.deps import DataDirDep, DatasetIdPath, MoleculeIdPath
from orientscope.api.encoded import answer, json_record
from orientscope.api.errors import NOT_COMPUTED, NOT_FOUND, SEARCH_PENDING
from orientscope.api.schemas import MoleculePublic, MoleculesPublic
from orientscope.core.groups import GROUP_KINDS
from orientscope.services import formats
from orientscope.services import molecules as svc
from orientscope.services.depiction import depiction_svg

router = APIRouter(prefix="/datasets/{dataset_id}/molecules", tags=["molecules"])

SVG = "image/svg+xml"
FILES = "|".join(formats.DOWNLOADS)
DOWNLOADS = {
    200: {
        "description": f"JSON record, or the molecule as a file when format={FILES}.",
        "content": {formats.media_type(name): {"schema": {"type": "string"}} for name in formats.DOWNLOADS},
    }
}
FormatQuery = Literal[(formats.RECORD, *formats.DOWNLOADS)]  # type: ignore[valid-type]


@router.get("", response_model=MoleculesPublic, responses={**NOT_FOUND, **NOT_COMPUTED, **SEARCH_PENDING})
async def list_molecules(
    dataset_id: DatasetIdPath,
    data_dir: DataDirDep,
    offset: Annotated[int, Query(ge=0, le=svc.MAX_OFFSET, description="Index of the first molecule to return.")] = 0,
    limit: Annotated[
        int, Query(ge=1, le=svc.MAX_PAGE, description=f"Page size, at most {svc.MAX_PAGE}.")
    ] = svc.DEFAULT_PAGE,
    group_by: Annotated[Literal[GROUP_KINDS] | None, Query(description="Grouping that `group` refers to.")] = None,
    group: Annotated[
        str | None,
        Query(
            max_length=512,
            description="Keep only this group (needs group_by): its code or its label (C7H10O2, a scaffold or "
            "cluster-representative SMILES), or 'unclustered' for the molecules in no cluster.",
        ),
    ] = None,
    smarts: Annotated[
        str | None,
        Query(
            max_length=svc.MAX_SMARTS_LENGTH,
            description="Keep molecules containing this SMARTS (their SMILES, or bonds perceived from 3D). "
            "Small sets are scanned while you wait (at most 10 s; `complete` false and `n_scanned` if it stops). "
            "A sharded set above ORIENTSCOPE_SMARTS_JOB_ABOVE molecules answers from its background search "
            "(POST /api/datasets/{id}/smarts), or 409 with the job to follow.",
        ),
    ] = None,
    sort: Annotated[
        str,
        Query(
            max_length=64,
            description="index, id, n_atoms, formula, classifier_score, degenerate or a property name; prefix '-' for descending.",
        ),
    ] = "index",
) -> dict:
    """One page of molecules, filtered by group and SMARTS and sorted."""
    args = (data_dir, dataset_id, offset, limit, group_by, group, smarts, sort)
    # SMARTS matching and sorting scan the whole dataset: never on the event loop
    hot = smarts is None and sort == "index"
    page = await (answer(svc.list_molecules, *args) if hot else run_in_threadpool(svc.list_molecules, *args))
    record = {"total": page.total, "offset": page.offset, "limit": page.limit, "items": page.items}
    return json_record({**record, "complete": page.complete, "n_scanned": page.n_scanned})


# Ids are text as written and may hold "/" (a client sends it as %2F, which the server decodes before routing):
# the id is a path parameter, and the depiction is declared first so that ".../depiction.svg" reaches it.
@router.get(
    "/{mol_id:path}/depiction.svg",
    response_class=Response,
    responses={**NOT_FOUND, 200: {"content": {SVG: {"schema": {"type": "string"}}}}},
)
async def get_depiction(dataset_id: DatasetIdPath, mol_id: MoleculeIdPath, data_dir: DataDirDep) -> Response:
    """A 2D depiction (SVG): from the SMILES, else the canonical pose seen down its third axis."""
    svg = await run_in_threadpool(depiction_svg, data_dir, dataset_id, mol_id)
    # The same molecule of the same result draws the same way: the browser may keep it a while.
    return Response(svg, media_type=SVG, headers={"Cache-Control": "private, max-age=300"})


@router.get("/{mol_id:path}", response_model=MoleculePublic, responses={**NOT_FOUND, **DOWNLOADS})
async def get_molecule(
    dataset_id: DatasetIdPath,
    mol_id: MoleculeIdPath,
    data_dir: DataDirDep,
    format: Annotated[
        FormatQuery, Query(description=f"{formats.RECORD} record, or a file in one of {', '.join(formats.DOWNLOADS)}.")
    ] = formats.RECORD,
    pose: Annotated[
        Literal["stored", "canonical"], Query(description="Pose of the file: as stored, or canonical.")
    ] = "stored",
):
    """One molecule: atoms in both poses, frame, score, groups and properties; or the molecule as a file."""
    if format == formats.RECORD:
        return json_record(await answer(svc.molecule_detail, data_dir, dataset_id, mol_id))
    text, filename = await run_in_threadpool(svc.export_molecule, data_dir, dataset_id, mol_id, format, pose)
    headers = {"Content-Disposition": f'attachment; filename="{filename}"'}
    return Response(text, media_type=formats.media_type(format), headers=headers)
