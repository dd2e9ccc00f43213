"""Background jobs of one server: ingest and model-audit jobs (writes) and export jobs (reads), and their state.

The API keeps one ``BackgroundJobs`` per app and calls these functions only; the
job managers of ``orientscope.pipeline`` do the work.
"""

from __future__ import annotations

import threading
from pathlib import Path

from orientscope.core.errors import NotFoundError
from orientscope.core.limits import Limits
from orientscope.core.settings import resolve_export_dir
from orientscope.pipeline import export_jobs
from orientscope.pipeline.export import ExportRequest
from orientscope.pipeline.jobs import STATES, JobManager, read_job
from orientscope.pipeline.jobs import list_jobs as list_ingest_jobs
from orientscope.services import smarts_search


class BackgroundJobs:
    """The job workers of one server for ``data_dir``, each started on first use.

    ``manager`` runs ingest and model-audit jobs; starting it marks jobs orphaned
    by a crash as failed, so only a writable server starts it. ``exports`` runs
    export jobs, which write nothing to the store and run on read-only servers too.
    """

    def __init__(self, data_dir: Path):
        self.data_dir = Path(data_dir)
        self.export_dir = resolve_export_dir(self.data_dir)
        self._lock = threading.Lock()
        self._manager: JobManager | None = None
        self._exports: export_jobs.ExportJobs | None = None

    @property
    def manager(self) -> JobManager:
        with self._lock:
            if self._manager is None:
                self._manager = JobManager(self.data_dir)
            return self._manager

    @property
    def exports(self) -> export_jobs.ExportJobs:
        with self._lock:
            if self._exports is None:
                self._exports = export_jobs.ExportJobs(self.data_dir, self.export_dir)
            return self._exports

    def recover(self) -> list[str]:
        """Start the ingest and audit worker, which records jobs orphaned by a crash as failed; their ids."""
        return self.manager.recovered

    @property
    def limits(self) -> Limits:
        return self.manager.limits

    def upload_dir(self) -> Path:
        """Where an upload is spooled while it streams in (its job then moves it)."""
        return self.manager.upload_dir()

    def submit_ingest(self, upload: Path, name: str, fmt: str, strict: bool, original_name: str) -> dict:
        """Queue an ingest of the spooled ``upload``; the job record."""
        return self.manager.submit_ingest(upload, name, fmt=fmt, strict=strict, original_name=original_name)

    def submit_audit(self, upload: Path, dataset_id: str, name: str, original_name: str) -> dict:
        """Queue a model audit of the spooled predictions ``upload`` against ``dataset_id``; the job record."""
        return self.manager.submit_audit(upload, dataset_id, name, original_name=original_name)

    def retry(self, job_id: str) -> dict:
        """Run a failed ingest job again (NotFoundError for unknown ids, OrientScopeError if it cannot be)."""
        read_job(self.data_dir, job_id)
        return self.manager.retry(job_id)

    def submit_export(self, dataset_id: str, request: ExportRequest) -> dict:
        """Queue an export of ``dataset_id``; the job record with its ``export_id``."""
        return self.exports.submit(dataset_id, request)

    def shutdown(self) -> None:
        for manager in (self._manager, self._exports):
            if manager is not None:
                manager.shutdown(wait=False)


def get_job(data_dir: Path, job_id: str) -> dict:
    """An ingest, audit, export or SMARTS search job by id (NotFoundError if none)."""
    try:
        return read_job(data_dir, job_id)
    except NotFoundError:
        pass
    try:
        return export_jobs.read_export_job(resolve_export_dir(data_dir), job_id)
    except NotFoundError:
        return smarts_search.get_job(data_dir, job_id)


def list_jobs(data_dir: Path) -> list[dict]:
    """Every ingest, audit, export and SMARTS search job, oldest first."""
    export_dir = resolve_export_dir(data_dir)
    jobs = list_ingest_jobs(data_dir) + export_jobs.list_export_jobs(export_dir) + smarts_search.list_jobs(data_dir)
    return sorted(jobs, key=lambda j: j.get("created", 0))


def job_counts(data_dir: Path) -> dict[str, int]:
    """How many jobs are in each state."""
    counts = dict.fromkeys(STATES, 0)
    for job in list_jobs(data_dir):
        counts[job.get("state")] = counts.get(job.get("state"), 0) + 1
    return counts
