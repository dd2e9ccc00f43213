"""Background export jobs, in an exports area apart from the dataset store.

An export reads a stored dataset and writes files only under the export folder
(``ORIENTSCOPE_EXPORT_DIR``, default ``<data_dir>/exports``), so it runs on
read-only servers too:

* ``<export_dir>/jobs/<job_id>.json``: the job record, shaped like an ingest job's
  (state, progress, stage, message) plus ``export_id``, with the ``ExportRequest`` as its ``input``;
* ``<export_dir>/<export_id>/``: the exported file and its ``.rotations.csv``,
  each written atomically.

The job id and the export id share their random part (``x…`` and ``e…``), so the
record of an export is found from either. Finished exports are deleted after
EXPORT_TTL_S, when a later export is submitted.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from orientscope.core.errors import Busy, NotFoundError, NotReady, Unavailable
from orientscope.core.settings import resolve_export_dir
from orientscope.pipeline.export import ExportRequest, copy_path, default_format, export_dataset, export_filename
from orientscope.pipeline.jobs import (
    ACTIVE,
    DONE,
    LIVE,
    as_seen,
    failed,
    job_record,
    read_job_record,
    recording_progress,
    run_live,
    running,
    stored_job_records,
    wait_for,
)
from orientscope.store import datasets as ds
from orientscope.store.atomic import atomic_write_json

log = logging.getLogger(__name__)

EXPORT = "export"  # the job kind
JOB_PREFIX, EXPORT_PREFIX = "x", "e"
EXPORT_TTL_S = 3600.0  # long enough to download a finished export
MAX_ACTIVE_EXPORTS = 4  # queued or running at once; each holds a whole dataset in memory while it runs


def export_jobs_dir(export_dir: Path) -> Path:
    return Path(export_dir) / "jobs"


def job_id_of(export_id: str) -> str:
    """The id of the job that writes export ``export_id`` (NotFoundError for a malformed export id)."""
    if not export_id.startswith(EXPORT_PREFIX):
        raise NotFoundError(f"unknown export {export_id!r}")
    return JOB_PREFIX + export_id[len(EXPORT_PREFIX) :]


def read_export_job(export_dir: Path, job_id: str) -> dict:
    return read_job_record(export_jobs_dir(export_dir), job_id)


def list_export_jobs(export_dir: Path) -> list[dict]:
    return [as_seen(job) for job in stored_job_records(export_jobs_dir(export_dir))]


def export_files(export_dir: Path, dataset_id: str, export_id: str, copy: int = 0) -> tuple[Path, Path]:
    """The exported file (of copy ``copy`` for a multi-copy export) and its rotations CSV; NotFoundError if
    unknown (or of another dataset), NotReady while the job is queued or running or if it failed."""
    try:
        job = read_export_job(export_dir, job_id_of(export_id))
    except NotFoundError:
        raise NotFoundError(f"unknown export {export_id!r} of dataset {dataset_id!r}") from None
    if job["dataset_id"] != dataset_id:
        raise NotFoundError(f"unknown export {export_id!r} of dataset {dataset_id!r}")
    if job["state"] != DONE:
        why = job["message"] if job["state"] not in ACTIVE else f"it is {job['state']} ({job['progress']:.0%})"
        raise NotReady(f"export {export_id!r} is not ready: {why}; follow GET /api/jobs/{job['id']}")
    data = Path(export_dir) / export_id / job["result"]["file"]
    rotations = data.with_name(data.name + ".rotations.csv")
    copies = job["result"].get("copies")
    if copy and not (copies and copy < copies):
        raise ValueError(f"export {export_id!r} has {copies or 1} file(s); copy must be 0 to {(copies or 1) - 1}")
    data = copy_path(data, copy) if copies else data
    if not (data.is_file() and rotations.is_file()):
        raise NotFoundError(f"export {export_id!r} has expired; submit it again")
    return data, rotations


class ExportJobs:
    """Runs export jobs of one data dir on a background worker.

    Parameters
    ----------
    data_dir : the store folder (only read)
    export_dir : where exports go (default: ``resolve_export_dir(data_dir)``)
    max_workers : concurrent exports (1 keeps the 2-core budget for serving)
    """

    def __init__(self, data_dir: Path, export_dir: Path | None = None, max_workers: int = 1):
        self.data_dir = Path(data_dir)
        self.export_dir = Path(export_dir) if export_dir else resolve_export_dir(self.data_dir)
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="orientscope-export")
        self._lock = threading.Lock()

    def submit(self, dataset_id: str, request: ExportRequest) -> dict:
        """Queue an export of ``dataset_id``; the job record (its ``export_id`` names the files)."""
        meta = ds.read_meta(self.data_dir, dataset_id)  # NotFoundError for unknown datasets
        fmt = request.format or default_format(meta)
        token = uuid.uuid4().hex[:16]
        job_id, export_id = JOB_PREFIX + token, EXPORT_PREFIX + token
        with self._lock:
            self._prune()
            active = [j for j in list_export_jobs(self.export_dir) if j["state"] in ACTIVE]
            if len(active) >= MAX_ACTIVE_EXPORTS:
                raise Busy(f"{len(active)} exports are already queued or running; try again when one is done")
            try:
                export_jobs_dir(self.export_dir).mkdir(parents=True, exist_ok=True)
                (self.export_dir / export_id).mkdir()
            except OSError as err:
                raise Unavailable(
                    f"cannot write exports to {self.export_dir} ({err.strerror}); "
                    "set ORIENTSCOPE_EXPORT_DIR to a writable folder"
                ) from None
            inputs = {**request.to_dict(), "format": fmt}
            job = job_record(job_id, EXPORT, dataset_id, meta.get("name", dataset_id), inputs, export_id=export_id)
            LIVE.add(job_id)  # before the write, so no reader ever sees it as orphaned
            self._write(job)
        self._pool.submit(run_live, self._execute, job_id)
        return job

    def wait(self, job_id: str, timeout_s: float = 600.0, poll_s: float = 0.05) -> dict:
        """Block until the job is done or failed (for tests)."""
        return wait_for(lambda i: read_export_job(self.export_dir, i), job_id, timeout_s, poll_s)

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=not wait)

    # ------------------------------------------------------------- internals
    def _write(self, job: dict) -> None:
        atomic_write_json(export_jobs_dir(self.export_dir) / f"{job['id']}.json", job)

    def _prune(self) -> None:
        """Delete exports (files and records) that ended more than EXPORT_TTL_S ago."""
        now = time.time()
        for job in list_export_jobs(self.export_dir):
            if job["state"] not in ACTIVE and now - (job.get("finished") or now) > EXPORT_TTL_S:
                shutil.rmtree(self.export_dir / job["export_id"], ignore_errors=True)
                (export_jobs_dir(self.export_dir) / f"{job['id']}.json").unlink(missing_ok=True)

    def _execute(self, job_id: str) -> None:
        job = running(read_export_job(self.export_dir, job_id))
        self._write(job)
        request = ExportRequest.from_dict(job["input"])
        filename = export_filename(job["dataset_id"], request.mode, request.format)
        try:
            info = export_dataset(
                self.data_dir,
                job["dataset_id"],
                request.mode,
                self.export_dir / job["export_id"] / filename,
                seed=request.seed,
                fmt=request.format,
                copies=request.copies,
                progress=recording_progress(job, self._write),
            )
        except Exception as err:  # every failure ends the job with a message, never the worker
            self._write(failed(job, err))
            return
        job.update(
            state=DONE,
            progress=1.0,
            stage="done",
            finished=time.time(),
            message=f"export {job['export_id']!r} ready: {info['n_molecules']:,} molecules",
            result={
                "export_id": job["export_id"],
                "file": filename,
                "copies": request.copies,
                "n_molecules": info["n_molecules"],
                "rotation_rule": info.get("rotation_rule"),
            },
        )
        self._write(job)
