"""The background jobs of one server process: one manager per data folder, shared by the API and the dashboard.

Ingests and model audits write the store, so only a writable server queues them;
exports and SMARTS searches write only the writable area and run on read-only
servers too. The manager of ``orientscope.pipeline.jobs`` does the work.
"""

from __future__ import annotations

import threading
from pathlib import Path

from orientscope.core.limits import Limits
from orientscope.core.settings import resolve_export_dir
from orientscope.pipeline import upload_jobs
from orientscope.pipeline.export import ExportRequest
from orientscope.pipeline.export_jobs import EXPORT_KIND, submit_export
from orientscope.pipeline.jobs import STATES, JobManager
from orientscope.pipeline.smarts_jobs import SEARCH_KIND

KINDS = (upload_jobs.INGEST_KIND, upload_jobs.AUDIT_KIND, EXPORT_KIND, SEARCH_KIND)
_MANAGERS: dict[tuple[Path, Path], JobManager] = {}
_LOCK = threading.Lock()


def manager(data_dir: Path) -> JobManager:
    """The one job manager of ``data_dir`` (and its writable area) in this process, made on first use."""
    key = (Path(data_dir).resolve(), resolve_export_dir(data_dir).resolve())
    with _LOCK:
        found = _MANAGERS.get(key)
        if found is None:
            found = _MANAGERS[key] = JobManager(data_dir, KINDS, export_dir=key[1])
        return found


class BackgroundJobs:
    """What the API asks of the job manager of ``data_dir``."""

    def __init__(self, data_dir: Path):
        self.data_dir = Path(data_dir)
        self.manager = manager(self.data_dir)

    def recover(self) -> list[str]:
        """Record jobs orphaned by a crash as failed (a writable server only); their ids."""
        return self.manager.recover()

    @property
    def limits(self) -> Limits:
        return self.manager.limits

    def upload_dir(self) -> Path:
        """Where an upload is spooled while it streams in (its job then moves it)."""
        return self.manager.upload_dir()

    def check_room(self) -> None:
        """Busy (429, with Retry-After) when this data folder has as many jobs queued or running as it takes."""
        self.manager.check_room()

    def submit_ingest(
        self, upload: Path, name: str, fmt: str, strict: bool, original_name: str, format_options=None
    ) -> dict:
        """Queue an ingest of the spooled ``upload``; the job record."""
        return upload_jobs.submit_ingest(self.manager, upload, name, fmt, strict, original_name, format_options)

    def submit_audit(
        self, upload: Path, dataset_id: str, name: str, original_name: str, decision: dict | None = None
    ) -> dict:
        """Queue a model audit of the spooled predictions ``upload`` against ``dataset_id``; the job record.

        ``decision``: the tiers' ``margin`` and ``max_shift`` (checked by :func:`check_decision`)."""
        return upload_jobs.submit_audit(self.manager, upload, dataset_id, name, original_name, decision)

    def submit_export(self, dataset_id: str, request: ExportRequest) -> dict:
        """Queue an export of ``dataset_id``; the job record with its ``export_id``."""
        return submit_export(self.manager, dataset_id, request)

    def retry(self, job_id: str) -> dict:
        """Run a failed job again (NotFoundError for unknown ids, OrientScopeError if it cannot be)."""
        return self.manager.retry(job_id)

    def cancel(self, job_id: str) -> dict:
        """Cancel a queued or running job, removing its partial output (OrientScopeError if it has ended)."""
        return self.manager.cancel(job_id)


def get_job(data_dir: Path, job_id: str) -> dict:
    """A job of any kind by id (NotFoundError if none)."""
    return manager(data_dir).get(job_id)


def list_jobs(data_dir: Path) -> list[dict]:
    """Every job of every kind, oldest first."""
    return manager(data_dir).list()


def job_counts(data_dir: Path) -> dict[str, int]:
    """How many jobs are in each state."""
    counts = dict.fromkeys(STATES, 0)
    for job in list_jobs(data_dir):
        counts[job.get("state")] = counts.get(job.get("state"), 0) + 1
    return counts
