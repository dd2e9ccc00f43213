"""A molecule's 2D depiction as SVG (:mod:`orientscope.science.depiction`), cached by bytes.

From the dataset's SMILES where it has one RDKit can read, else the projection of the canonical
pose. A depiction is a few kB and takes RDKit 2 to 10 ms; the map's hover preview asks for the same
molecules again as the cursor moves back and forth, so each is kept in the process's shared cache
(:func:`orientscope.services.bytecache.shared_cache`), keyed by the result it was drawn from.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from orientscope.science.depiction import projection_svg, smiles_to_svg
from orientscope.services.bytecache import shared_cache
from orientscope.services.cache import get_view

log = logging.getLogger(__name__)


def depiction_svg(data_dir: Path, dataset_id: str, mol_id: str) -> str:
    """The SVG text of molecule ``mol_id``; NotFoundError naming the dataset or molecule if unknown."""
    view = get_view(data_dir, dataset_id)
    i = view.row_of(mol_id)
    key = (str(data_dir), dataset_id, view.result_key, str(view.cell("ids", i)))
    return shared_cache().get_or_build("depiction", key, lambda: _draw(view, i))


def _draw(view, i: int) -> str:
    smiles = str(view.cell("smiles", i))
    if smiles:
        try:
            return smiles_to_svg(smiles)
        except ValueError as err:  # a stored SMILES RDKit cannot read: the pose still has a picture
            log.info("depicting molecule %s from its pose: %s", view.cell("ids", i), err)
    z, pos = view.atoms(i)
    return projection_svg(z, view.canonical_positions(i, pos))


def warm_up() -> None:
    """Draw one molecule each way: the first hover preview of a server otherwise imported RDKit's
    drawing code (about 80 ms of its 125 ms on a warmed 10M-molecule store)."""
    smiles_to_svg("CCO")
    projection_svg(np.array([8, 1, 1]), np.array([[0.0, 0.0, 0.0], [0.96, 0.0, 0.0], [-0.24, 0.93, 0.0]]))
