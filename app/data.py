"""What the dashboard reads, all through backend services (no science here).

Everything returns plain arrays or dicts; errors the user can fix are
``OrientScopeError`` subclasses whose message the page shows as is.
"""

from __future__ import annotations

from pathlib import Path

from orientscope.core.errors import NotFoundError, OrientScopeError
from orientscope.services import grouping
from orientscope.services import groups as group_service
from orientscope.services import model_audits as audit_service
from orientscope.services import molecules as molecule_service
from orientscope.services import neighbors as neighbor_service
from orientscope.services.bytecache import shared_cache
from orientscope.services.cache import get_view
from orientscope.services.datasets import NEEDS_MIGRATION, READY, dataset_info, dataset_summary, list_datasets
from orientscope.services.errors import NotComputed, SearchPending
from orientscope.services.exports import ExportRequest
from orientscope.services.jobs import BackgroundJobs
from orientscope.services.map_data import MapData, load_map_data

__all__ = [
    "OrientScopeError",
    "NotFoundError",
    "SearchPending",
    "READY",
    "NEEDS_MIGRATION",
    "dataset_info",
    "dataset_summary",
    "list_datasets",
    "load_map_data",
    "MapData",
]


def per_result(data_dir: Path, dataset_id: str, name: str, build):
    """``build()`` once per stored result of a dataset, kept in the process's byte-bounded cache.

    Keyed by the result and the modification stamps of its files, so a recompute
    builds it again. App-level: the value may hold Dash components, which never
    go into the services' dataset views.
    """
    view = get_view(data_dir, dataset_id)
    key = (str(data_dir), dataset_id, view.result_key, view.signature)
    return shared_cache().get_or_build(f"app:{name}", key, build)


def property_names(data_dir: Path, dataset_id: str) -> list[str]:
    return list(get_view(data_dir, dataset_id).property_names)


def group_label_map(data_dir: Path, dataset_id: str, grouping_kind: str) -> dict[str, str]:
    """{group code: the label a person reads (formula, scaffold SMILES, representative's SMILES)}."""
    return grouping.group_label_map(get_view(data_dir, dataset_id), grouping_kind)


def ungrouped_count(data_dir: Path, dataset_id: str, grouping_kind: str) -> int:
    return grouping.ungrouped_count(get_view(data_dir, dataset_id), grouping_kind)


def submit_export(data_dir: Path, dataset_id: str, request: ExportRequest) -> dict:
    """Queue an export job of a dataset (the REST API's ``POST …/exports``); its record, with ``export_id``."""
    return BackgroundJobs(data_dir).submit_export(dataset_id, request)


def smarts_search_job(data_dir: Path, dataset_id: str, smarts: str) -> dict | None:
    """The background search job of a SMARTS pattern over a large sharded set, started if needed;
    None when the set is searched while the page waits, or when it cannot be (an invalid pattern, no
    writable search folder, too many searches running): the map says why."""
    try:
        return molecule_service.search_job(get_view(data_dir, dataset_id), smarts)
    except OrientScopeError:
        return None


def molecule_detail(data_dir: Path, dataset_id: str, mol_id: str) -> dict:
    return molecule_service.molecule_detail(data_dir, dataset_id, mol_id)


def neighbors(data_dir: Path, dataset_id: str, mol_id: str, by: str, k: int = 6) -> dict | None:
    """Nearest molecules by pose or chemistry; None when the needed stage has not been computed."""
    try:
        return neighbor_service.neighbors(data_dir, dataset_id, mol_id, by=by, k=k)
    except NotComputed:
        return None


def list_groups(data_dir: Path, dataset_id: str, grouping_kind: str, limit: int) -> dict | None:
    """The largest groups with labels and statistics, their total and the ungrouped count
    (``groups.list_groups``); None when that grouping is not computed."""
    try:
        return group_service.list_groups(data_dir, dataset_id, by=grouping_kind, limit=limit)
    except NotComputed:
        return None


def list_audits(data_dir: Path, dataset_id: str) -> list[dict]:
    """The dataset's model audits (done, queued, running or failed), oldest first."""
    return audit_service.list_audits(data_dir, dataset_id)


def get_audit(data_dir: Path, dataset_id: str, audit_id: str) -> dict:
    return audit_service.get_audit(data_dir, dataset_id, audit_id)
