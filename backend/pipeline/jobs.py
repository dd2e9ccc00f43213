"""Background jobs with progress, persisted as JSON under ``<data_dir>/jobs/``: ingests and model audits.

A job (``kind`` ``ingest`` or ``audit``) is ``jobs/<job_id>.json`` (state ``queued | running | done | failed``,
``progress`` 0-1, ``stage``, ``message``, the dataset id it will create or
audit, an audit's ``audit_id``, and the inputs needed to run it again) plus ``jobs/<job_id>/`` holding the uploaded
file. Every update is an atomic write, so a reader never sees a torn file.
Jobs run one at a time on a worker thread (the machine has few cores and
the pipeline stages are already vectorised).

When a manager starts, jobs left ``queued`` or ``running`` by a process that
no longer exists (a crash or restart) are marked ``failed``; their inputs are
kept, so :meth:`JobManager.retry` can run them again.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from backend.core.errors import NotFoundError, OrientScopeError
from backend.core.limits import Limits
from backend.core.progress import Progress
from backend.core.settings import display_name, validate_id
from backend.loaders.detect import check_format
from backend.pipeline.ingest import ingest_file, new_dataset_id
from backend.pipeline.staging import staging_root
from backend.store.atomic import atomic_write_json, read_json
from backend.store.audits import new_audit_id
from backend.store.results import ResultStore

log = logging.getLogger(__name__)

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
STATES = (QUEUED, RUNNING, DONE, FAILED)
ACTIVE = (QUEUED, RUNNING)
INGEST, AUDIT = "ingest", "audit"  # job kinds
SAVE_INTERVAL_S = 0.25  # progress writes are throttled; state changes are always written
STALE_STAGING_S = 86_400.0
# Jobs queued or running in this process (a job of ours not listed here was orphaned); ingest and export jobs.
LIVE: set[str] = set()


def job_record(job_id: str, kind: str, dataset_id: str, name: str, inputs: dict, **extra) -> dict:
    """A new queued job; ``dataset_id`` is the dataset an ingest creates or an audit reads."""
    return {
        "id": job_id,
        "kind": kind,
        **extra,
        "state": QUEUED,
        "progress": 0.0,
        "stage": "queued",
        "message": "waiting for the worker",
        "dataset_id": dataset_id,
        "name": name,
        "input": inputs,
        "created": time.time(),
        "started": None,
        "finished": None,
        "attempts": 0,
        "pid": os.getpid(),
        "result": None,
    }


def jobs_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "jobs"


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _orphaned(job: dict) -> bool:
    """Queued or running, but the process that owns it is gone."""
    if job.get("state") not in ACTIVE:
        return False
    pid = job.get("pid")
    return job["id"] not in LIVE if pid == os.getpid() else not _pid_alive(pid)


def _interrupted(job: dict) -> dict:
    return {
        **job,
        "state": FAILED,
        "message": f"interrupted while {job['state']} (the server stopped or crashed); retry the job to run it again",
        "finished": job.get("finished") or time.time(),
    }


def as_seen(job: dict) -> dict:
    """A job as readers should see it: an orphan is failed even before a writable server records that
    (a read-only server never does)."""
    return _interrupted(job) if _orphaned(job) else job


def read_job(data_dir: Path, job_id: str) -> dict:
    return read_job_record(jobs_dir(data_dir), job_id)


def read_job_record(folder: Path, job_id: str) -> dict:
    """The job ``folder/<job_id>.json`` as readers should see it; NotFoundError if there is none."""
    try:
        validate_id(job_id, "job id")
    except ValueError:
        raise NotFoundError(f"unknown job {job_id!r}") from None
    path = Path(folder) / f"{job_id}.json"
    if not path.is_file():
        raise NotFoundError(f"unknown job {job_id!r}")
    return as_seen(read_json(path))


def _stored_jobs(data_dir: Path) -> list[dict]:
    return stored_job_records(jobs_dir(data_dir))


def stored_job_records(folder: Path) -> list[dict]:
    """Every job record in ``folder`` as stored, oldest first."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    jobs = []
    for path in folder.glob("*.json"):
        try:
            jobs.append(read_json(path))
        except (OSError, ValueError):
            continue
    return sorted(jobs, key=lambda j: j.get("created", 0))


def list_jobs(data_dir: Path) -> list[dict]:
    """Every job, oldest first, orphans shown as failed."""
    return [as_seen(job) for job in _stored_jobs(data_dir)]


def recover_interrupted(data_dir: Path) -> list[str]:
    """Mark jobs whose process died while they were queued or running as failed; their ids."""
    failed = []
    for job in _stored_jobs(data_dir):
        if _orphaned(job):
            job = _interrupted(job)
            atomic_write_json(jobs_dir(data_dir) / f"{job['id']}.json", job)
            failed.append(job["id"])
    if failed:
        log.warning("marked %d interrupted job(s) as failed: %s", len(failed), failed)
    staging = staging_root(data_dir)
    if staging.is_dir():  # leftovers of killed ingests; recent ones may belong to a running CLI
        for folder in staging.iterdir():
            if time.time() - folder.stat().st_mtime > STALE_STAGING_S:
                shutil.rmtree(folder, ignore_errors=True)
    return failed


def wait_for(read: Callable[[str], dict], job_id: str, timeout_s: float, poll_s: float) -> dict:
    """Poll ``read(job_id)`` until the job is done or failed, or ``timeout_s`` has passed."""
    deadline = time.monotonic() + timeout_s
    while True:
        job = read(job_id)
        if job["state"] not in ACTIVE or time.monotonic() > deadline:
            return job
        time.sleep(poll_s)


def run_live(execute: Callable[[str], None], job_id: str) -> None:
    """Run a job on a worker thread; afterwards it is no longer this process's to finish."""
    try:
        execute(job_id)
    finally:
        LIVE.discard(job_id)


def running(job: dict) -> dict:
    """``job``, started now (one attempt more)."""
    job.update(
        state=RUNNING, started=time.time(), attempts=job.get("attempts", 0) + 1, stage="load", message="starting"
    )
    return job


def recording_progress(job: dict, write) -> Progress:
    """A progress callback that updates ``job`` and writes it on each new stage and at most every
    SAVE_INTERVAL_S otherwise; progress never moves backwards."""
    last = [0.0]

    def progress(fraction: float, message: str, stage: str = "") -> None:
        now = time.monotonic()
        changed = stage != job["stage"]
        job.update(progress=round(min(max(fraction, job["progress"]), 1.0), 4), stage=stage, message=message)
        if changed or now - last[0] >= SAVE_INTERVAL_S:
            last[0] = now
            write(job)

    return progress


def failed(job: dict, err: Exception) -> dict:
    """``job`` ended by ``err``: a user's error keeps its message, anything else is logged as internal."""
    expected = isinstance(err, OrientScopeError | ValueError | FileNotFoundError)
    if not expected:
        log.exception("job %s failed unexpectedly", job["id"])
    job.update(
        state=FAILED,
        finished=time.time(),
        message=str(err) if expected else f"internal error: {type(err).__name__}: {err}",
    )
    return job


class JobManager:
    """Runs ingest jobs for one data dir on a background worker.

    Parameters
    ----------
    data_dir : the store folder
    limits : upload limits passed to the loaders (default: from the environment)
    max_workers : concurrent jobs (1 keeps the 2-core budget for serving)
    """

    def __init__(self, data_dir: Path, limits: Limits | None = None, max_workers: int = 1):
        self.data_dir = Path(data_dir)
        self.limits = limits or Limits.from_env()
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="orientscope-job")
        self._lock = threading.Lock()
        jobs_dir(self.data_dir).mkdir(parents=True, exist_ok=True)
        self.recovered = recover_interrupted(self.data_dir)

    # -------------------------------------------------------------- submit
    def submit_ingest(
        self, upload: Path, name: str, fmt: str = "auto", strict: bool = False, original_name: str | None = None
    ) -> dict:
        """Queue an ingest of ``upload`` (moved into the job folder); the job record."""
        check_format(fmt)
        name = display_name(name)

        def record(job_id: str, filename: str) -> dict:
            dataset_id = new_dataset_id(self.data_dir, name, self._reserved())
            return job_record(
                job_id, INGEST, dataset_id, name, {"file": filename, "format": fmt, "strict": bool(strict)}
            )

        return self._submit(upload, original_name or Path(upload).name, "upload", record)

    def submit_audit(self, upload: Path, dataset_id: str, name: str, original_name: str | None = None) -> dict:
        """Queue a model audit of ``upload`` (a predictions file, moved into the job folder) against a dataset."""
        name = display_name(name, "audit")

        def record(job_id: str, filename: str) -> dict:
            return job_record(job_id, AUDIT, dataset_id, name, {"file": filename}, audit_id=new_audit_id())

        return self._submit(upload, original_name or Path(upload).name, "predictions", record)

    def retry(self, job_id: str) -> dict:
        """Run a failed job again from its stored input."""
        with self._lock:
            job = read_job(self.data_dir, job_id)
            if job["state"] != FAILED:
                raise OrientScopeError(f"job {job_id!r} is {job['state']}; only failed jobs can be retried")
            if not (jobs_dir(self.data_dir) / job_id / job["input"]["file"]).is_file():
                raise OrientScopeError(f"job {job_id!r} has no stored input any more; upload the file again")
            if job.get("kind", INGEST) == INGEST:  # an audit keeps its dataset and audit id
                reserved = self._reserved() - {job["dataset_id"]}
                job["dataset_id"] = new_dataset_id(self.data_dir, job["name"], reserved)
            job.update(
                state=QUEUED,
                progress=0.0,
                stage="queued",
                message="waiting for the worker (retry)",
                finished=None,
                pid=os.getpid(),
            )
            LIVE.add(job_id)
            self._write(job)
        self._pool.submit(run_live, self._execute, job_id)
        return job

    def get(self, job_id: str) -> dict:
        return read_job(self.data_dir, job_id)

    def upload_dir(self) -> Path:
        """Where an upload is spooled while it streams in (its job then moves it)."""
        folder = jobs_dir(self.data_dir) / ".incoming"
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def list(self) -> list[dict]:
        return list_jobs(self.data_dir)

    def wait(self, job_id: str, timeout_s: float = 600.0, poll_s: float = 0.1) -> dict:
        """Block until the job is done or failed (for the CLI and tests)."""
        return wait_for(self.get, job_id, timeout_s, poll_s)

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=not wait)

    # ------------------------------------------------------------- internals
    def _submit(self, upload: Path, filename: str, fallback: str, record: Callable[[str, str], dict]) -> dict:
        """Move ``upload`` into a new job folder as ``filename``, write ``record(job_id, filename)``, queue it."""
        job_id = f"j{uuid.uuid4().hex[:16]}"
        folder = jobs_dir(self.data_dir) / job_id
        folder.mkdir(parents=True)
        filename = Path(filename).name or fallback  # never a path out of the folder
        shutil.move(str(upload), folder / filename)
        with self._lock:  # ids are reserved against the other queued jobs
            job = record(job_id, filename)
            LIVE.add(job_id)  # before the write, so no reader ever sees it as orphaned
            self._write(job)
        self._pool.submit(run_live, self._execute, job_id)
        return job

    def _reserved(self) -> set[str]:
        jobs = list_jobs(self.data_dir)
        return {j["dataset_id"] for j in jobs if j.get("state") in ACTIVE and j.get("kind", INGEST) == INGEST}

    def _write(self, job: dict) -> None:
        atomic_write_json(jobs_dir(self.data_dir) / f"{job['id']}.json", job)

    def _execute(self, job_id: str) -> None:
        job = running(read_job(self.data_dir, job_id))
        self._write(job)
        progress = recording_progress(job, self._write)
        upload = jobs_dir(self.data_dir) / job_id / job["input"]["file"]
        work = self._audit if job.get("kind") == AUDIT else self._ingest
        try:
            message, result = work(job, upload, progress)
        except Exception as err:  # every failure ends the job with a message, never the worker
            self._write(failed(job, err))
            return
        job.update(state=DONE, progress=1.0, stage="done", finished=time.time(), message=message, result=result)
        self._write(job)
        shutil.rmtree(jobs_dir(self.data_dir) / job_id, ignore_errors=True)  # the store holds the data now

    def _ingest(self, job: dict, upload: Path, progress) -> tuple[str, dict]:
        meta = ingest_file(
            self.data_dir,
            upload,
            job["name"],
            fmt=job["input"]["format"],
            strict=job["input"]["strict"],
            dataset_id=job["dataset_id"],
            limits=self.limits,
            progress=progress,
            original_name=job["input"]["file"],
        )
        skipped = f"; {meta['n_skipped']} malformed record(s) skipped" if meta.get("n_skipped") else ""
        stages_skipped = ResultStore(self.data_dir, meta["id"], meta["active_params"]).skipped_stages()
        if stages_skipped:
            skipped += f"; {len(stages_skipped)} analysis step(s) skipped (see skipped_stages)"
        result = {
            "dataset_id": meta["id"],
            "n_molecules": meta["n_molecules"],
            "n_skipped": meta.get("n_skipped", 0),
            "problems": meta.get("problems", []),
            "skipped_stages": stages_skipped,
        }
        return f"dataset {meta['id']!r} ready: {meta['n_molecules']:,} molecules{skipped}", result

    def _audit(self, job: dict, upload: Path, progress) -> tuple[str, dict]:
        # Imported here: the audit pulls in SciPy's statistics, which listing jobs should not pay for.
        from backend.pipeline.model_audit import run_audit

        record = run_audit(
            self.data_dir,
            job["dataset_id"],
            upload,
            job["name"],
            audit_id=job["audit_id"],
            limits=self.limits,
            progress=progress,
            original_name=job["input"]["file"],
        )
        codes = ", ".join(f"{p['property']}: {p['verdict']['code']}" for p in record["properties"] if not p["split"])
        result = {
            "dataset_id": job["dataset_id"],
            "audit_id": record["id"],
            "n_molecules": record["n_molecules"],
            "n_unknown_ids": record["n_unknown_ids"],
        }
        return f"audit {record['id']!r} of {job['dataset_id']!r} ready ({codes})", result
