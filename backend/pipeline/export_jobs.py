"""The export job kind, in an exports area apart from the dataset store.

An export reads a stored dataset and writes files only under the export folder
(``ORIENTSCOPE_EXPORT_DIR``, default ``<data_dir>/exports``), so it runs on
read-only servers too:

* ``<export_dir>/jobs/<job_id>.json``: the job record (``orientscope.pipeline.jobs``)
  plus ``export_id``, with the ``ExportRequest`` as its ``input``;
* ``<export_dir>/<export_id>/``: the exported file and its ``.rotations.csv``,
  each written atomically.

The job id and the export id share their random part (``x…`` and ``e…``), so the
record of an export is found from either. Finished exports are deleted after
EXPORT_TTL_S, when a later export is submitted.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from orientscope.core.dataset import rows_of_ids
from orientscope.core.errors import NotFoundError, NotReady, Unavailable
from orientscope.core.progress import Progress
from orientscope.pipeline.export import (
    ExportRequest,
    copy_path,
    default_format,
    export_dataset,
    export_filename,
)
from orientscope.pipeline.jobs import ACTIVE, DONE, JobKind, JobManager, job_record, read_job_record
from orientscope.store import datasets as ds

EXPORT = "export"  # the job kind
JOB_PREFIX, EXPORT_PREFIX = "x", "e"
EXPORT_TTL_S = 3600.0  # long enough to download a finished export


def job_id_of(export_id: str) -> str:
    """The id of the job that writes export ``export_id`` (NotFoundError for a malformed export id)."""
    if not export_id.startswith(EXPORT_PREFIX):
        raise NotFoundError(f"unknown export {export_id!r}")
    return JOB_PREFIX + export_id[len(EXPORT_PREFIX) :]


def export_files(export_dir: Path, dataset_id: str, export_id: str, copy: int = 0) -> tuple[Path, Path]:
    """The exported file (of copy ``copy`` for a multi-copy export) and its rotations CSV; NotFoundError if
    unknown (or of another dataset), NotReady while the job is queued or running or if it failed."""
    try:
        job = read_job_record(Path(export_dir) / EXPORT_KIND.subfolder, job_id_of(export_id))
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


def submit_export(manager: JobManager, dataset_id: str, request: ExportRequest) -> dict:
    """Queue an export of ``dataset_id``; the job record (its ``export_id`` names the files)."""
    meta = ds.read_meta(manager.data_dir, dataset_id)  # NotFoundError for unknown datasets
    if request.ids is not None:  # unknown ids are refused now, not by a failed job later
        rows_of_ids(ds.read_molecule_columns(manager.data_dir, dataset_id, ["id"])["id"], request.ids,
                    f"dataset {dataset_id!r}")  # fmt: skip
    token = uuid.uuid4().hex[:16]
    inputs = {**request.to_dict(), "format": request.format or default_format(meta)}
    job = job_record(
        JOB_PREFIX + token, EXPORT, dataset_id, meta.get("name", dataset_id), inputs, export_id=EXPORT_PREFIX + token
    )
    with manager.lock:
        manager.prune(EXPORT_KIND, EXPORT_TTL_S)
        manager.check_room()
        try:
            (manager.export_dir / job["export_id"]).mkdir(parents=True)
        except OSError as err:
            raise Unavailable(
                f"cannot write exports to {manager.export_dir} ({err.strerror}); "
                "set ORIENTSCOPE_EXPORT_DIR to a writable folder"
            ) from None
        return manager.submit(job)


def _export(manager: JobManager, job: dict, progress: Progress) -> tuple[str, dict]:
    request = ExportRequest.from_dict(job["input"])
    filename = export_filename(job["dataset_id"], request.mode, request.format)
    info = export_dataset(
        manager.data_dir,
        job["dataset_id"],
        request.mode,
        manager.export_dir / job["export_id"] / filename,
        seed=request.seed,
        fmt=request.format,
        copies=request.copies,
        progress=progress,
        purpose=request.purpose,
        ids=request.ids,
        limit=request.limit,
    )
    result = {
        "export_id": job["export_id"],
        "file": filename,
        "copies": request.copies,
        "n_molecules": info["n_molecules"],
        **{k: info.get(k) for k in ("rotation_rule", "rotation_rule_version", "purpose")},
    }
    return f"export {job['export_id']!r} ready: {info['n_molecules']:,} molecules", result


def _discard(manager: JobManager, job: dict) -> None:
    shutil.rmtree(manager.export_dir / job["export_id"], ignore_errors=True)


EXPORT_KIND = JobKind(EXPORT, JOB_PREFIX, _export, discard=_discard)
