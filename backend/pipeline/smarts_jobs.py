"""The SMARTS search job kind: searches of large sharded datasets, their results kept apart from the store.

A search of a sharded set larger than ``ORIENTSCOPE_SMARTS_JOB_ABOVE`` molecules
(default 250,000, one default shard: more does not fit a request's 10 s) runs
shard-parallel on the engine as a job, and its result is kept so that later
requests answer from it at once. Everything lives in the server's writable area
(``ORIENTSCOPE_EXPORT_DIR``, default ``<data_dir>/exports``), never in the
dataset store, so read-only servers search too:

* ``<export_dir>/smarts/jobs/<job_id>.json``: the job record (``orientscope.pipeline.jobs``),
  plus ``search_id`` and ``shards`` ([done, total]);
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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from orientscope.core.errors import NotFoundError
from orientscope.core.progress import Progress
from orientscope.core.settings import env_name, settings
from orientscope.pipeline.jobs import DONE, FAILED, JobKind, JobManager, job_record
from orientscope.pipeline.shard_smarts import search_dataset
from orientscope.store.atomic import atomic_write_bytes

SEARCH = "smarts"  # the job kind
JOB_PREFIX, SEARCH_PREFIX = "q", "s"
SMARTS_JOB_ABOVE_ENV = env_name("smarts_job_above")
SEARCH_TTL_S = 7 * 86_400.0  # a week: a kept result costs n/8 bytes of disk
# A job has no request waiting on it, but a pathological pattern must still end: the result then says
# it is not complete and how many molecules were scanned, as an in-request scan does after 10 s.
JOB_TIMEOUT_S = 3600.0


def smarts_job_above() -> int:
    """$ORIENTSCOPE_SMARTS_JOB_ABOVE (molecules), else 250,000: larger sharded sets search in a job."""
    return settings().smarts_job_above


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


def _result_path(export_dir: Path, search_id: str) -> Path:
    return search_dir(export_dir) / f"{search_id}.npz"


def _encode(mask: np.ndarray, complete: bool, n_scanned: int) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, bits=np.packbits(mask), n=len(mask), complete=complete, n_scanned=n_scanned)
    return buffer.getvalue()


def _job(target: SearchTarget, canonical: str) -> dict:
    token = search_token(target.dataset_id, target.result_key, canonical)
    inputs = {
        "smarts": canonical,
        "result_key": target.result_key,
        "result_dir": str(target.result_dir),
        "data_dir": str(target.data_dir),
        "stamp": target.stamp,
        "n_molecules": target.n_molecules,
    }
    job = job_record(
        JOB_PREFIX + token, SEARCH, target.dataset_id, target.name, inputs, search_id=SEARCH_PREFIX + token
    )
    job["shards"] = [0, 0]
    return job


def lookup(manager: JobManager, target: SearchTarget, canonical: str) -> dict | None:
    """The job of this search of this result (None if there is none, or it searched an older result)."""
    job_id = JOB_PREFIX + search_token(target.dataset_id, target.result_key, canonical)
    try:
        job = manager.get(job_id)
    except NotFoundError:
        return None
    if job["input"].get("stamp") != target.stamp:
        return None
    if job["state"] == DONE and not _result_path(manager.export_dir, job["search_id"]).is_file():
        return None  # pruned, or the area was cleaned: search again
    return job


def result(manager: JobManager, job: dict) -> StoredSearch:
    """The mask of a finished search job."""
    with np.load(_result_path(manager.export_dir, job["search_id"])) as data:
        mask = np.unpackbits(data["bits"], count=int(data["n"])).astype(bool)
        return StoredSearch(mask, bool(data["complete"]), int(data["n_scanned"]))


def submit_search(manager: JobManager, target: SearchTarget, canonical: str) -> dict:
    """The job of this search: the one queued, running or done, else a new one (queued now)."""
    with manager.lock:
        job = lookup(manager, target, canonical)
        if job is not None and job["state"] != FAILED:
            return job
        manager.prune(SEARCH_KIND, SEARCH_TTL_S)
        return manager.submit(_job(target, canonical))


def record_search(
    manager: JobManager, target: SearchTarget, canonical: str, mask: np.ndarray, complete: bool, n_scanned: int
) -> dict:
    """Keep a search that ran while the request waited (a set not stored as shards) as a finished job."""
    job = _job(target, canonical)
    job["shards"] = [1, 1]
    return manager.finish(job, *_keep(manager, job, mask, complete, n_scanned))


def _keep(manager: JobManager, job: dict, mask: np.ndarray, complete: bool, n_scanned: int) -> tuple[str, dict]:
    """Write the result (before the record says done, so a reader never sees a done job without it)."""
    atomic_write_bytes(_result_path(manager.export_dir, job["search_id"]), _encode(mask, complete, n_scanned))
    n_matches = int(np.count_nonzero(mask))
    stopped = "" if complete else f" (stopped after {n_scanned:,} molecules scanned)"
    message = f"SMARTS {job['input']['smarts']!r}: {n_matches:,} matches{stopped}"
    found = {"search_id": job["search_id"], "n_matches": n_matches, "n_scanned": n_scanned, "complete": complete}
    return message, found


def _search(manager: JobManager, job: dict, progress: Progress) -> tuple[str, dict]:
    inputs = job["input"]
    matches = [0]
    progress(0.0, "starting the engine", "scan")

    def shards_done(done: int, total: int) -> None:
        job["shards"] = [done, total]
        progress(
            done / total if total else 0.0, f"{done} of {total} shards scanned, {matches[0]:,} matches so far", "scan"
        )

    def streamed(index: np.ndarray) -> None:
        matches[0] += len(index)

    found = search_dataset(
        manager.engine(int(inputs["n_molecules"])),
        Path(inputs["data_dir"]),
        job["dataset_id"],
        Path(inputs["result_dir"]),
        inputs["smarts"],
        timeout_s=JOB_TIMEOUT_S,
        progress=shards_done,
        on_matches=streamed,
    )
    mask = np.zeros(int(inputs["n_molecules"]), bool)
    mask[found.indices] = True
    return _keep(manager, job, mask, found.complete, found.n_scanned)


def _discard(manager: JobManager, job: dict) -> None:
    _result_path(manager.export_dir, job["search_id"]).unlink(missing_ok=True)


SEARCH_KIND = JobKind(SEARCH, JOB_PREFIX, _search, subfolder="smarts/jobs", discard=_discard)
