"""What the figures read, all through backend services (no science here): a dataset's per-molecule values
in map row order, its groups and SMARTS matches.

Everything returns plain arrays; errors the user can fix are ``OrientScopeError`` subclasses whose
message the page (or the notebook) shows as is.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from orientscope.core.errors import DatasetError
from orientscope.services import grouping
from orientscope.services import model_audits as audit_service
from orientscope.services import molecules as molecule_service
from orientscope.services.cache import get_view


def property_units(data_dir: Path, dataset_id: str) -> dict[str, str]:
    return dict(get_view(data_dir, dataset_id).property_units)


def property_values(data_dir: Path, dataset_id: str, name: str) -> np.ndarray:
    """(n,) values of one property in map row order."""
    view = get_view(data_dir, dataset_id)
    if name not in view.property_names:
        raise DatasetError(f"unknown property {name!r}; expected one of {view.property_names}")
    return view.property_values[:, view.property_names.index(name)]


def classifier_scores(data_dir: Path, dataset_id: str) -> np.ndarray:
    """(n,) P(stored pose) per molecule; all NaN when the models stage has not run."""
    return np.asarray(get_view(data_dir, dataset_id).scores, np.float64)


def group_labels(data_dir: Path, dataset_id: str, grouping: str) -> np.ndarray | None:
    """(n,) group id per molecule (object array, None where unknown), or None if that grouping is not computed."""
    return molecule_service.group_ids(get_view(data_dir, dataset_id)).get(grouping)


def group_mask(data_dir: Path, dataset_id: str, grouping_kind: str, name: str) -> np.ndarray:
    """(n,) bool: molecules of the group named by its code, its label or the ungrouped name (InvalidInput if none)."""
    return np.asarray(grouping.group_rows(get_view(data_dir, dataset_id), grouping_kind, name), bool)


def graphs_from_3d(data_dir: Path, dataset_id: str) -> bool:
    """True when the set has no SMILES: SMARTS then match bonds perceived from the 3D coordinates."""
    return molecule_service.graphs_from_3d(get_view(data_dir, dataset_id))


def smarts_mask(data_dir: Path, dataset_id: str, smarts: str) -> np.ndarray:
    """(n,) bool: molecules matching a SMARTS pattern (DatasetError if the pattern is invalid).

    A scan stopped at its time limit gives the matches found so far. A large sharded set
    answers from its background search, which this starts if needed; until it is done
    this raises :class:`SearchPending`.
    """
    return molecule_service.match_smarts(get_view(data_dir, dataset_id), smarts, start=True).mask


def prediction_shift(data_dir: Path, dataset_id: str, audit_id: str, prop: str) -> np.ndarray:
    """(n,) each molecule's prediction shift in an audit, in map row order; NaN outside the audit."""
    return audit_service.prediction_shift(data_dir, dataset_id, audit_id, prop, get_view(data_dir, dataset_id).ids)
