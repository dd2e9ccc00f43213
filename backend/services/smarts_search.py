"""SMARTS searches that outgrow a request: background jobs on the engine, and their kept results.

A sharded set above ``ORIENTSCOPE_SMARTS_JOB_ABOVE`` molecules is searched by a
job (``orientscope.pipeline.smarts_jobs``); reads of its matches answer from the
kept result, or raise :class:`SearchPending` naming the job to follow. Smaller
sets keep the in-request scan of ``services.molecules.match_smarts`` (10 s).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from orientscope.pipeline import smarts_jobs
from orientscope.pipeline.jobs import ACTIVE, DONE
from orientscope.pipeline.shard_smarts import searchable_shards
from orientscope.pipeline.smarts_jobs import SearchTarget, StoredSearch, smarts_job_above
from orientscope.science import substructure
from orientscope.services.cache import DatasetView
from orientscope.services.errors import InvalidInput, SearchPending
from orientscope.services.jobs import manager

__all__ = ["SearchPending", "StoredSearch", "canonical", "needs_job", "stored_or_pending"]


def canonical(smarts: str, loc: tuple = ("query", "smarts")) -> str:
    """The pattern's canonical spelling (InvalidInput naming ``loc`` if it is invalid or too long)."""
    try:
        return substructure.canonical_smarts(smarts)
    except ValueError as exc:
        raise InvalidInput(str(exc), loc) from None


def needs_job(view: DatasetView) -> bool:
    """True when the view's set is searched by a background job: sharded and above the threshold."""
    return len(view) > smarts_job_above() and searchable_shards(view.data_dir, view.dataset_id, view.store.dir)


def target(view: DatasetView) -> SearchTarget:
    return SearchTarget(
        data_dir=Path(view.data_dir),
        dataset_id=view.dataset_id,
        name=str(view.meta.get("name", view.dataset_id)),
        result_key=view.result_key,
        result_dir=Path(view.store.dir),
        stamp=int(view.signature[1]),  # the result manifest's mtime (ns): (meta, manifest) stamps
        n_molecules=len(view),
    )


def _pending(view: DatasetView, job: dict | None, smarts: str) -> SearchPending:
    base = f"/api/datasets/{view.dataset_id}"
    if job is None:
        return SearchPending(
            f"dataset {view.dataset_id!r} has {len(view):,} molecules: its SMARTS search for {smarts!r} runs as a "
            f'background job; start it with POST {base}/smarts {{"smarts": ...}}, then follow GET /api/jobs/{{job_id}}'
        )
    if job["state"] in ACTIVE:
        shards = job.get("shards") or [0, 0]
        where = f"{shards[0]} of {shards[1]} shards scanned" if shards[1] else job["state"]
        why = f"is {job['state']} ({where})"
    else:
        why = f"failed: {job['message']}; POST {base}/smarts again to retry"
    return SearchPending(f"the SMARTS search for {smarts!r} {why}; follow GET /api/jobs/{job['id']}", job)


def stored_or_pending(view: DatasetView, smarts: str, start: bool = False) -> StoredSearch:
    """The kept result of a job-searched set's SMARTS search, else SearchPending naming the job to follow.

    ``start`` queues the job when there is none yet (the dashboard); the REST reads leave that to POST.
    """
    pattern = canonical(smarts)
    jobs = manager(view.data_dir)
    aim = target(view)
    job = smarts_jobs.submit_search(jobs, aim, pattern) if start else smarts_jobs.lookup(jobs, aim, pattern)
    if job is not None and job["state"] == DONE:
        try:
            return smarts_jobs.result(jobs, job)
        except FileNotFoundError:  # pruned between the two reads
            job = None
    raise _pending(view, job, smarts)


def submit(view: DatasetView, smarts: str) -> dict:
    """The job of a search of a sharded set (queued now, or the one already queued, running or done)."""
    return smarts_jobs.submit_search(manager(view.data_dir), target(view), canonical(smarts, ("body", "smarts")))


def record(view: DatasetView, smarts: str, mask: np.ndarray, complete: bool, n_scanned: int) -> dict:
    """Keep a search that ran while the request waited as a finished job."""
    pattern = canonical(smarts, ("body", "smarts"))
    return smarts_jobs.record_search(manager(view.data_dir), target(view), pattern, mask, complete, n_scanned)
