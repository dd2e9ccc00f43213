"""SMARTS searches of large sharded datasets as background jobs, their results kept apart from the store.

A search of a sharded set larger than ``ORIENTSCOPE_SMARTS_JOB_ABOVE`` molecules
(default 250,000, one default shard: more does not fit a request's 10 s) runs
shard-parallel on the engine as a job, and its result is kept so that later
requests answer from it at once. Everything lives in the server's writable area
(``ORIENTSCOPE_EXPORT_DIR``, default ``<data_dir>/exports``), never in the
dataset store, so read-only servers search too:

* ``<export_dir>/smarts/jobs/<job_id>.json``: the job record, shaped like an export's
  (state, progress, stage, message), plus ``search_id`` and ``shards`` ([done, total]);
* ``<export_dir>/smarts/<search_id>.npz``: the result, a bit-packed match mask
  (``n_molecules / 8`` bytes: 1.25 MB at 10M), written atomically.

Files rather than memory, because a server may run several worker processes:
any of them must find the job that another one started, and the result
survives a restart. The search id is a hash of (dataset id, result key,
canonical SMARTS), so the same search is never run twice while its result is
kept; the job id shares its random-looking part (``q…`` and ``s…``). A result
whose dataset result was recomputed since (another manifest time) is stale and
searched again. Finished searches are deleted after SEARCH_TTL_S.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from orientscope.core.errors import Busy, NotFoundError, Unavailable
from orientscope.pipeline.engine import Engine, choose_cluster
from orientscope.pipeline.jobs import (
    ACTIVE,
    DONE,
    FAILED,
    LIVE,
    as_seen,
    failed,
    job_record,
    read_job_record,
    run_live,
    running,
    stored_job_records,
    wait_for,
)
from orientscope.pipeline.shard_smarts import search_dataset
from orientscope.store.atomic import atomic_write_bytes, atomic_write_json

log = logging.getLogger(__name__)

SEARCH = "smarts"  # the job kind
JOB_PREFIX, SEARCH_PREFIX = "q", "s"
SMARTS_JOB_ABOVE_ENV = "ORIENTSCOPE_SMARTS_JOB_ABOVE"
DEFAULT_SMARTS_JOB_ABOVE = 250_000
SEARCH_TTL_S = 7 * 86_400.0  # a week: a kept result costs n/8 bytes of disk
MAX_ACTIVE_SEARCHES = 4  # queued or running at once
# A job has no request waiting on it, but a pathological pattern must still end: the result then says
# it is not complete and how many molecules were scanned, as an in-request scan does after 10 s.
JOB_TIMEOUT_S = 3600.0
SAVE_INTERVAL_S = 0.25


def smarts_job_above() -> int:
    """$ORIENTSCOPE_SMARTS_JOB_ABOVE (molecules), else 250,000: larger sharded sets search in a job."""
    raw = os.environ.get(SMARTS_JOB_ABOVE_ENV, "").strip()
    if not raw:
        return DEFAULT_SMARTS_JOB_ABOVE
    if not raw.isdigit():
        raise ValueError(f"{SMARTS_JOB_ABOVE_ENV}={raw!r}: expected a whole number of molecules")
    return int(raw)


@dataclass(frozen=True)
class SearchTarget:
    """What a search reads: a dataset's active result, identified by its key and its manifest's time."""

    data_dir: Path
    dataset_id: str
    name: str
    result_key: str
    result_dir: Path
    stamp: int  # the result manifest's modification time (ns): a recomputed result is searched again
    n_molecules: int


@dataclass(frozen=True)
class StoredSearch:
    """A finished search: ``mask`` is (n_molecules,) bool in dataset row order."""

    mask: np.ndarray
    complete: bool
    n_scanned: int


def search_token(dataset_id: str, result_key: str, canonical: str) -> str:
    """The random-looking part shared by a search's job id and search id (same inputs, same token)."""
    return hashlib.sha256(f"{dataset_id}\0{result_key}\0{canonical}".encode()).hexdigest()[:16]


def search_dir(export_dir: Path) -> Path:
    return Path(export_dir) / "smarts"


def search_jobs_dir(export_dir: Path) -> Path:
    return search_dir(export_dir) / "jobs"


def read_search_job(export_dir: Path, job_id: str) -> dict:
    """A search job by id (NotFoundError if there is none)."""
    return read_job_record(search_jobs_dir(export_dir), job_id)


def list_search_jobs(export_dir: Path) -> list[dict]:
    return [as_seen(job) for job in stored_job_records(search_jobs_dir(export_dir))]


def _result_path(export_dir: Path, search_id: str) -> Path:
    return search_dir(export_dir) / f"{search_id}.npz"


def _encode(mask: np.ndarray, complete: bool, n_scanned: int) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, bits=np.packbits(mask), n=len(mask), complete=complete, n_scanned=n_scanned)
    return buffer.getvalue()


class SmartsSearches:
    """Runs SMARTS search jobs of one data dir on a background worker and finds their kept results.

    Parameters
    ----------
    export_dir : the server's writable area (``resolve_export_dir(data_dir)``)
    cluster : ``--cluster`` value for the searches (default: ``choose_cluster`` by the set's size)
    max_workers : concurrent searches (each may start a local Dask cluster)
    """

    def __init__(self, export_dir: Path, cluster: str | None = None, max_workers: int = 1):
        self.export_dir = Path(export_dir)
        self.cluster = cluster
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="orientscope-smarts")
        self._lock = threading.Lock()

    # ------------------------------------------------------------- reads
    def lookup(self, target: SearchTarget, canonical: str) -> dict | None:
        """The job of this search of this result (None if there is none, or it searched an older result)."""
        job_id = JOB_PREFIX + search_token(target.dataset_id, target.result_key, canonical)
        try:
            job = read_search_job(self.export_dir, job_id)
        except NotFoundError:
            return None
        if job["input"].get("stamp") != target.stamp:
            return None
        if job["state"] == DONE and not _result_path(self.export_dir, job["search_id"]).is_file():
            return None  # pruned, or the area was cleaned: search again
        return job

    def result(self, job: dict) -> StoredSearch:
        """The mask of a finished search job."""
        with np.load(_result_path(self.export_dir, job["search_id"])) as data:
            mask = np.unpackbits(data["bits"], count=int(data["n"])).astype(bool)
            return StoredSearch(mask, bool(data["complete"]), int(data["n_scanned"]))

    # ------------------------------------------------------------- submit
    def submit(self, target: SearchTarget, canonical: str) -> dict:
        """The job of this search: the one queued, running or done, else a new one (queued now)."""
        with self._lock:
            job = self.lookup(target, canonical)
            if job is not None and job["state"] != FAILED:
                return job
            self._prune()
            active = [j for j in list_search_jobs(self.export_dir) if j["state"] in ACTIVE]
            if len(active) >= MAX_ACTIVE_SEARCHES:
                raise Busy(f"{len(active)} SMARTS searches are already queued or running; try again when one is done")
            token = search_token(target.dataset_id, target.result_key, canonical)
            job = job_record(
                JOB_PREFIX + token,
                SEARCH,
                target.dataset_id,
                target.name,
                self._inputs(target, canonical),
                search_id=SEARCH_PREFIX + token,
            )
            job["shards"] = [0, 0]
            LIVE.add(job["id"])  # before the write, so no reader ever sees it as orphaned
            try:
                self._write(job)
            except Unavailable:
                LIVE.discard(job["id"])
                raise
        self._pool.submit(run_live, self._execute, job["id"])
        return job

    def record(self, target: SearchTarget, canonical: str, mask: np.ndarray, complete: bool, n_scanned: int) -> dict:
        """Keep a search that ran while the request waited (a set not stored as shards) as a finished job."""
        token = search_token(target.dataset_id, target.result_key, canonical)
        job = job_record(
            JOB_PREFIX + token, SEARCH, target.dataset_id, target.name, self._inputs(target, canonical),
            search_id=SEARCH_PREFIX + token,
        )  # fmt: skip
        job["shards"] = [1, 1]
        self._finish(job, mask, complete, n_scanned)
        return job

    def wait(self, job_id: str, timeout_s: float = 600.0, poll_s: float = 0.05) -> dict:
        """Block until the job is done or failed (for tests)."""
        return wait_for(lambda i: read_search_job(self.export_dir, i), job_id, timeout_s, poll_s)

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=not wait)

    # ------------------------------------------------------------- internals
    @staticmethod
    def _inputs(target: SearchTarget, canonical: str) -> dict:
        return {
            "smarts": canonical,
            "result_key": target.result_key,
            "result_dir": str(target.result_dir),
            "data_dir": str(target.data_dir),
            "stamp": target.stamp,
            "n_molecules": target.n_molecules,
        }

    def _write(self, job: dict) -> None:
        try:
            search_jobs_dir(self.export_dir).mkdir(parents=True, exist_ok=True)
            atomic_write_json(search_jobs_dir(self.export_dir) / f"{job['id']}.json", job)
        except OSError as err:
            raise Unavailable(
                f"cannot keep SMARTS searches in {search_dir(self.export_dir)} ({err.strerror}); "
                "set ORIENTSCOPE_EXPORT_DIR to a writable folder"
            ) from None

    def _finish(self, job: dict, mask: np.ndarray, complete: bool, n_scanned: int) -> None:
        """Write the result, then the job as done (a reader never sees a done job without its result)."""
        atomic_write_bytes(_result_path(self.export_dir, job["search_id"]), _encode(mask, complete, n_scanned))
        n_matches = int(np.count_nonzero(mask))
        stopped = "" if complete else f" (stopped after {n_scanned:,} molecules scanned)"
        job.update(
            state=DONE,
            progress=1.0,
            stage="done",
            finished=time.time(),
            message=f"SMARTS {job['input']['smarts']!r}: {n_matches:,} matches{stopped}",
            result={
                "search_id": job["search_id"],
                "n_matches": n_matches,
                "n_scanned": n_scanned,
                "complete": complete,
            },
        )
        self._write(job)

    def _prune(self) -> None:
        """Delete searches (results and records) that ended more than SEARCH_TTL_S ago."""
        now = time.time()
        for job in list_search_jobs(self.export_dir):
            if job["state"] not in ACTIVE and now - (job.get("finished") or now) > SEARCH_TTL_S:
                _result_path(self.export_dir, job["search_id"]).unlink(missing_ok=True)
                (search_jobs_dir(self.export_dir) / f"{job['id']}.json").unlink(missing_ok=True)

    def _execute(self, job_id: str) -> None:
        job = running(read_search_job(self.export_dir, job_id))
        job.update(stage="scan", message="starting the engine")
        self._write(job)
        inputs = job["input"]
        matches, last = [0], [0.0]

        def progress(done: int, total: int) -> None:
            job.update(
                shards=[done, total],
                progress=round(done / total, 4) if total else 0.0,
                message=f"{done} of {total} shards scanned, {matches[0]:,} matches so far",
            )
            if done == total or time.monotonic() - last[0] >= SAVE_INTERVAL_S:
                last[0] = time.monotonic()
                self._write(job)

        def streamed(index: np.ndarray) -> None:
            matches[0] += len(index)

        try:
            spec = choose_cluster(self.cluster, int(inputs["n_molecules"]))
            with Engine(spec) as engine:
                found = search_dataset(
                    engine,
                    Path(inputs["data_dir"]),
                    job["dataset_id"],
                    Path(inputs["result_dir"]),
                    inputs["smarts"],
                    timeout_s=JOB_TIMEOUT_S,
                    progress=progress,
                    on_matches=streamed,
                )
            mask = np.zeros(int(inputs["n_molecules"]), bool)
            mask[found.indices] = True
            self._finish(job, mask, found.complete, found.n_scanned)
        except Exception as err:  # every failure ends the job with a message, never the worker
            self._write(failed(job, err))
