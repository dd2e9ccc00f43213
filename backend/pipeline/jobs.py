"""One manager for every background job: uploads (ingest), model audits, exports and SMARTS searches.

A job is a JSON record (state ``queued | running | done | failed``, ``progress``
0-1, ``stage``, ``message``, the dataset it creates or reads, its inputs and,
when done, its ``result``), written atomically on every change, so a reader never
sees a torn file. What a job runs is its kind's business: a :class:`JobKind` is a
small plug-in naming its id prefix, the folder of its records and the function
that does the work. The manager gives every kind the same things:

* one thread pool (``max_workers``, 2 by default: the machine has few cores);
* one bound on queued and running jobs per data folder, every kind counted
  (``ORIENTSCOPE_MAX_QUEUED_JOBS``, default 8): more is :class:`Busy`, with a
  ``retry_after`` in seconds, and no earlier job is touched;
* one crash rule: a job left queued or running by a process that no longer
  exists is failed, both as readers see it and, once a server that may write its
  folder starts, on disk. Its inputs are kept, so :meth:`JobManager.retry` runs it again;
* :meth:`JobManager.cancel`: a queued job never starts, a running one stops at
  its next progress step; either way the kind's partial output is removed;
* one engine per cluster setting (:meth:`JobManager.engine`), started on first use
  and shared by the jobs of this process.

The records of ingests and audits live under ``<data_dir>/jobs/`` (their uploads
in ``jobs/<job_id>/``); those of exports and searches in the writable area
(``ORIENTSCOPE_EXPORT_DIR``), so that those two kinds run on read-only servers too.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from orientscope.core.errors import Busy, NotFoundError, OrientScopeError, Unavailable
from orientscope.core.limits import Limits
from orientscope.core.numbers import format_count
from orientscope.core.progress import Progress
from orientscope.core.settings import env_name, resolve_export_dir, settings, validate_id
from orientscope.pipeline.engine import ClusterSpec, Engine, choose_cluster
from orientscope.pipeline.staging import staging_root
from orientscope.store.atomic import atomic_write_json, read_json
from orientscope.store.datasets import file_lock

log = logging.getLogger(__name__)

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
STATES = (QUEUED, RUNNING, DONE, FAILED)
ACTIVE = (QUEUED, RUNNING)
SAVE_INTERVAL_S = 0.25  # progress writes are throttled; state changes are always written
STALE_STAGING_S = 86_400.0
MAX_QUEUED_ENV = env_name("max_queued_jobs")
BOUND_LOCK = ".jobs-bound.lock"  # in the writable area: one per data folder and export folder
RETRY_AFTER_S = 30  # what a refused client is told to wait: about one small job's run
# Jobs queued or running in this process (a job of ours not listed here was orphaned).
LIVE: set[str] = set()


class Cancelled(OrientScopeError):
    """A job was cancelled while it ran; raised from its progress callback."""


def jobs_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "jobs"


def max_queued_jobs() -> int:
    """$ORIENTSCOPE_MAX_QUEUED_JOBS, else 8: jobs of every kind queued or running at once per data folder."""
    return settings().max_queued_jobs


# ---------------------------------------------------------------- records
def job_record(job_id: str, kind: str, dataset_id: str, name: str, inputs: dict, **extra) -> dict:
    """A new queued job; ``dataset_id`` is the dataset an ingest creates, or the one the job reads."""
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


def recording_progress(job: dict, write: Callable[[dict], None]) -> Progress:
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


# ---------------------------------------------------------------- kinds
def _nothing(manager: JobManager, job: dict) -> None:
    pass


@dataclass(frozen=True)
class JobKind:
    """What one kind of job runs.

    ``run(manager, job, progress)`` does the work and returns (message, result);
    it may raise, which fails the job with the error's message. ``discard(manager,
    job)`` removes what a cancelled job leaves behind; ``renew(manager, job)``
    updates a failed job's record before it is retried. ``in_store`` kinds keep their
    records and uploads under the data dir (so only a writable server runs them);
    the others in the writable area under ``subfolder``.
    """

    name: str
    prefix: str  # the first letter of its job ids
    run: Callable[[JobManager, dict, Progress], tuple[str, dict]]
    in_store: bool = False
    subfolder: str = "jobs"
    discard: Callable[[JobManager, dict], None] = field(default=_nothing)
    renew: Callable[[JobManager, dict], None] = field(default=_nothing)


# ---------------------------------------------------------------- the manager
class JobManager:
    """Runs every kind of background job of one data dir (see the module docstring).

    Parameters
    ----------
    data_dir : the store folder
    kinds : the job kinds it runs and reads
    export_dir : the writable area (default: ``resolve_export_dir(data_dir)``)
    limits : upload limits passed to the loaders (default: from the environment)
    cluster : ``--cluster`` value for the shared engine (default: chosen by a set's size)
    max_workers : jobs that run at once
    """

    def __init__(
        self,
        data_dir: Path,
        kinds: Iterable[JobKind],
        export_dir: Path | None = None,
        limits: Limits | None = None,
        cluster: str | None = None,
        max_workers: int = 2,
    ):
        self.data_dir = Path(data_dir)
        self.kinds = {kind.name: kind for kind in kinds}
        self.export_dir = Path(export_dir) if export_dir else resolve_export_dir(self.data_dir)
        self.limits = limits or Limits.from_env()
        self.cluster = cluster
        self.max_workers = max_workers
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="orientscope-job")
        self.lock = threading.RLock()  # held while a job is written, so ids are reserved against queued jobs
        self._cancel: set[str] = set()
        self._engines: dict[ClusterSpec, Engine] = {}
        self.recovered: list[str] | None = None

    # ------------------------------------------------------------- reads
    def kind_dir(self, kind: JobKind) -> Path:
        return jobs_dir(self.data_dir) if kind.in_store else self.export_dir / kind.subfolder

    def _kind_of(self, job_id: str) -> JobKind:
        for kind in self.kinds.values():
            if job_id.startswith(kind.prefix):
                return kind
        raise NotFoundError(f"unknown job {job_id!r}")

    def get(self, job_id: str) -> dict:
        """A job by id, as readers should see it (NotFoundError if there is none)."""
        return read_job_record(self.kind_dir(self._kind_of(job_id)), job_id)

    def list(self, kind: str | None = None) -> list[dict]:
        """Every job (of ``kind``), oldest first, orphans shown as failed."""
        folders = {self.kind_dir(k) for k in self.kinds.values() if kind in (None, k.name)}
        jobs = [as_seen(job) for folder in folders for job in stored_job_records(folder)]
        return sorted((j for j in jobs if kind in (None, j.get("kind", "ingest"))), key=lambda j: j.get("created", 0))

    def wait(self, job_id: str, timeout_s: float = 600.0, poll_s: float = 0.05) -> dict:
        """Block until the job is done or failed, or ``timeout_s`` has passed (for the CLI and tests)."""
        deadline = time.monotonic() + timeout_s
        while True:
            job = self.get(job_id)
            if job["state"] not in ACTIVE or time.monotonic() > deadline:
                return job
            time.sleep(poll_s)

    def upload_dir(self) -> Path:
        """Where an upload is spooled while it streams in (its job then moves it)."""
        folder = jobs_dir(self.data_dir) / ".incoming"
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def check_room(self) -> None:
        """Busy (with ``retry_after`` seconds) if the data folder's bound of queued and running jobs is reached."""
        limit = max_queued_jobs()
        active = sum(1 for job in self.list() if job["state"] in ACTIVE)
        if active >= limit:
            raise Busy(  # worded so that it reads right for any count ("1 jobs are" did not)
                f"jobs already queued or running: {format_count(active)}, the limit of this data folder "
                f"({MAX_QUEUED_ENV}={limit}); try again in {RETRY_AFTER_S} s",
                retry_after=RETRY_AFTER_S,
            )

    @contextmanager
    def bound_held(self) -> Iterator[None]:
        """The bound's count and a new job's record as one step, also across the worker processes of
        ``serve --workers N`` (each has its own manager, so this process's lock alone let two of them count
        the same free place): an flock in the writable area, which every server of the folder has."""
        with self.lock, ExitStack() as stack:
            try:
                stack.enter_context(file_lock(self.export_dir / BOUND_LOCK))
            except OSError as err:  # no writable area: this process's lock still holds
                log.warning("cannot lock %s (%s): the job bound holds per process only", self.export_dir, err)
            yield

    # ------------------------------------------------------------- writes
    def submit(self, job: dict, upload: Path | None = None) -> dict:
        """Queue ``job`` (a :func:`job_record` of a known kind); ``upload`` is moved into its folder as
        ``job["input"]["file"]``. Busy if the bound is reached."""
        kind = self.kinds[job["kind"]]
        with self.bound_held():
            self.check_room()
            if upload is not None:
                folder = self.kind_dir(kind) / job["id"]
                folder.mkdir(parents=True)
                shutil.move(str(upload), folder / job["input"]["file"])
            LIVE.add(job["id"])  # before the write, so no reader ever sees it as orphaned
            try:
                self.write(job)
            except Unavailable:
                LIVE.discard(job["id"])
                raise
        self._pool.submit(self._run, job["id"])
        return job

    def new_id(self, kind: str) -> str:
        return self.kinds[kind].prefix + uuid.uuid4().hex[:16]

    def retry(self, job_id: str) -> dict:
        """Run a failed job again from its stored input (its kind's ``renew`` updates it first)."""
        with self.bound_held():
            job = self.get(job_id)
            kind = self.kinds[job.get("kind", "ingest")]
            if job["state"] != FAILED:
                raise OrientScopeError(f"job {job_id!r} is {job['state']}; only failed jobs can be retried")
            stored = job["input"].get("file")
            if stored and not (self.kind_dir(kind) / job_id / stored).is_file():
                raise OrientScopeError(f"job {job_id!r} has no stored input any more; submit it again")
            self.check_room()
            kind.renew(self, job)
            job.update(
                state=QUEUED,
                progress=0.0,
                stage="queued",
                message="waiting for the worker (retry)",
                finished=None,
                pid=os.getpid(),
            )
            LIVE.add(job_id)
            self.write(job)
        self._pool.submit(self._run, job_id)
        return job

    def cancel(self, job_id: str) -> dict:
        """Cancel a queued or running job and remove its partial output; the record as it now stands.

        OrientScopeError if the job has ended, or runs in another live process.
        """
        with self.lock:
            job = self.get(job_id)
            if job["state"] not in ACTIVE:
                raise OrientScopeError(
                    f"job {job_id!r} is {job['state']}; only queued or running jobs can be cancelled"
                )
            if job.get("pid") != os.getpid():
                raise OrientScopeError(
                    f"job {job_id!r} runs in another server process (pid {job.get('pid')}); cancel it there"
                )
            self._cancel.add(job_id)
            if job["state"] == QUEUED:  # the worker will skip it
                self._end_cancelled(job)
            else:
                job.update(message="cancelling at the next step")
        return job

    def write(self, job: dict) -> None:
        """Write ``job``'s record atomically (Unavailable if its folder cannot be written)."""
        folder = self.kind_dir(self.kinds[job.get("kind", "ingest")])
        try:
            folder.mkdir(parents=True, exist_ok=True)
            atomic_write_json(folder / f"{job['id']}.json", job)
        except OSError as err:
            raise Unavailable(
                f"cannot write job records to {folder} ({err.strerror}); "
                "set ORIENTSCOPE_EXPORT_DIR to a writable folder"
            ) from None

    def finish(self, job: dict, message: str, result: dict) -> dict:
        """Record ``job`` as done."""
        job.update(state=DONE, progress=1.0, stage="done", finished=time.time(), message=message, result=result)
        self.write(job)
        return job

    def prune(self, kind: JobKind, ttl_s: float) -> None:
        """Delete the jobs of ``kind`` (records and output) that ended more than ``ttl_s`` ago."""
        now = time.time()
        for job in self.list(kind.name):
            if job["state"] not in ACTIVE and now - (job.get("finished") or now) > ttl_s:
                kind.discard(self, job)
                (self.kind_dir(kind) / f"{job['id']}.json").unlink(missing_ok=True)

    def recover(self) -> list[str]:
        """Record the orphaned jobs of every folder this server may write as failed; their ids.

        Only a writable server calls this (it writes under the data dir); stale
        staging folders of killed builds are removed too.
        """
        with self.lock:
            if self.recovered is not None:
                return self.recovered
            failed_ids = []
            for folder in sorted({self.kind_dir(kind) for kind in self.kinds.values()}):
                for job in stored_job_records(folder):
                    if _orphaned(job):  # written back where it was read: old records may lack a kind
                        atomic_write_json(folder / f"{job['id']}.json", _interrupted(job))
                        failed_ids.append(job["id"])
            if failed_ids:
                log.warning("marked %d interrupted job(s) as failed: %s", len(failed_ids), failed_ids)
            staging = staging_root(self.data_dir)
            if staging.is_dir():  # leftovers of killed ingests; recent ones may belong to a running CLI
                for folder in staging.iterdir():
                    if time.time() - folder.stat().st_mtime > STALE_STAGING_S:
                        shutil.rmtree(folder, ignore_errors=True)
            self.recovered = failed_ids
            return self.recovered

    def engine(self, n_molecules: int) -> Engine:
        """The engine this process's jobs share for a set of ``n_molecules`` (started on first use)."""
        spec = choose_cluster(self.cluster, n_molecules)
        with self.lock:
            if spec not in self._engines:
                self._engines[spec] = Engine(spec).__enter__()
            return self._engines[spec]

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=not wait)
        with self.lock:
            for engine in self._engines.values():
                engine.close()
            self._engines.clear()

    # ------------------------------------------------------------- internals
    def _end_cancelled(self, job: dict) -> None:
        self.kinds[job["kind"]].discard(self, job)
        job.update(state=FAILED, finished=time.time(), message="cancelled; its partial output was removed")
        self.write(job)

    def _run(self, job_id: str) -> None:
        try:
            with self.lock:
                job = self.get(job_id)
                if job_id in self._cancel or job["state"] != QUEUED:
                    return
                kind = self.kinds[job.get("kind", "ingest")]
                job.update(state=RUNNING, started=time.time(), attempts=job.get("attempts", 0) + 1)
                job.update(stage="load", message="starting")
                self.write(job)
            record = recording_progress(job, self.write)

            def progress(fraction: float, message: str, stage: str = "") -> None:
                if job_id in self._cancel:
                    raise Cancelled(f"job {job_id!r} was cancelled")
                record(fraction, message, stage)

            try:
                message, result = kind.run(self, job, progress)
            except Exception as err:  # every failure ends the job with a message, never the worker
                with self.lock:
                    if job_id in self._cancel:
                        self._end_cancelled(job)
                    else:
                        self.write(failed(job, err))
                return
            with self.lock:  # a cancel that comes after the last step is too late: the job is done
                self.finish(job, message, result)
        finally:
            LIVE.discard(job_id)
            self._cancel.discard(job_id)


def list_jobs(data_dir: Path) -> list[dict]:
    """Every ingest and audit job of ``data_dir``, oldest first, orphans shown as failed."""
    return [as_seen(job) for job in stored_job_records(jobs_dir(data_dir))]
