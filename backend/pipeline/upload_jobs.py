"""The job kinds fed by an upload: an ingest (a dataset file) and a model audit (a predictions file).

Both keep their records and the uploaded file under ``<data_dir>/jobs/`` (the
file in ``jobs/<job_id>/`` until the store holds the data), so only a writable
server runs them; a failed job keeps its file for a retry.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
from pathlib import Path

from orientscope.core.progress import Progress
from orientscope.core.settings import display_name
from orientscope.loaders.registry import check_format, check_options
from orientscope.pipeline.ingest import ingest_file, new_dataset_id
from orientscope.pipeline.jobs import ACTIVE, JobKind, JobManager, job_record
from orientscope.pipeline.staging import staging_dir
from orientscope.store.atomic import dumps_json
from orientscope.store.audits import new_audit_id
from orientscope.store.results import ResultStore

INGEST, AUDIT = "ingest", "audit"


def _upload_path(manager: JobManager, job: dict) -> Path:
    return manager.kind_dir(manager.kinds[job["kind"]]) / job["id"] / job["input"]["file"]


def _remove_upload(manager: JobManager, job: dict) -> None:
    """Remove the job's upload and whatever its attempt staged."""
    shutil.rmtree(_upload_path(manager, job).parent, ignore_errors=True)
    if job.get("resume"):
        shutil.rmtree(staging_dir(manager.data_dir, job["dataset_id"], job["resume"]), ignore_errors=True)


def _resume_key(manager: JobManager, job: dict) -> str:
    """Names the staging folder of an ingest: the same file, inputs, name and limits (a retry, or the same
    upload submitted again) take over the molecules and the finished shards an interrupted attempt stored."""
    with open(_upload_path(manager, job), "rb") as fh:
        digest = hashlib.file_digest(fh, "sha256")
    digest.update(dumps_json([job["input"], job["name"], dataclasses.asdict(manager.limits)]).encode())
    return digest.hexdigest()[:16]


def reused_in_words(stages: dict, started: float) -> str:
    """What a run took over from an interrupted attempt, from the result manifest's ``stages``, or ``""``.

    A stage recorded before ``started`` (the attempt's start, epoch seconds) was kept whole;
    one computed now says how many of its shards it reused.
    """
    whole = [name for name, s in stages.items() if s.get("completed_at", started) < started]
    parts = [f"{' and '.join(whole)} kept whole"] if whole else []
    for name, s in stages.items():
        reused = s.get("reused", {})
        if name not in whole and reused.get("reused"):
            parts.append(f"{name} reused {reused['reused']} of {reused['shards']} shards")
    return f"from an interrupted attempt: {', '.join(parts)}" if parts else ""


def _reserved(manager: JobManager) -> set[str]:
    """Dataset ids that queued or running ingests will create."""
    return {j["dataset_id"] for j in manager.list(INGEST) if j["state"] in ACTIVE}


def _renew_dataset_id(manager: JobManager, job: dict) -> None:
    """A retried ingest takes a dataset id that is free now (its old one may have been taken meanwhile)."""
    job["dataset_id"] = new_dataset_id(manager.data_dir, job["name"], _reserved(manager) - {job["dataset_id"]})


def _filename(upload: Path, original_name: str | None, fallback: str) -> str:
    return Path(original_name or Path(upload).name).name or fallback  # never a path out of the job folder


def submit_ingest(
    manager: JobManager,
    upload: Path,
    name: str,
    fmt: str = "auto",
    strict: bool = False,
    original_name=None,
    format_options: dict[str, str] | None = None,
) -> dict:
    """Queue an ingest of ``upload`` (moved into the job folder); the job record.

    ``format_options``: the format's reading options (``registry.check_options``), recorded in the job's input.
    """
    check_format(fmt)
    format_options = check_options(fmt, format_options)
    name = display_name(name)
    inputs = {"file": _filename(upload, original_name, "upload"), "format": fmt, "strict": bool(strict)}
    if format_options:  # only when given: earlier jobs' inputs (and resume keys) stay as they were
        inputs["format_options"] = format_options
    with manager.lock:  # the dataset id is reserved against the other queued ingests
        dataset_id = new_dataset_id(manager.data_dir, name, _reserved(manager))
        return manager.submit(job_record(manager.new_id(INGEST), INGEST, dataset_id, name, inputs), upload)


def submit_audit(
    manager: JobManager, upload: Path, dataset_id: str, name: str, original_name=None, decision: dict | None = None
) -> dict:
    """Queue a model audit of ``upload`` (a predictions file, moved into the job folder) against a dataset.

    ``decision``: the tiers' ``margin`` and ``max_shift`` (:class:`~orientscope.science.audit_verdict.Decision`).
    """
    name = display_name(name, "audit")
    inputs = {"file": _filename(upload, original_name, "predictions"), "decision": decision}
    job = job_record(manager.new_id(AUDIT), AUDIT, dataset_id, name, inputs, audit_id=new_audit_id())
    return manager.submit(job, upload)


def _ingest(manager: JobManager, job: dict, progress: Progress) -> tuple[str, dict]:
    job["resume"] = _resume_key(manager, job)  # recorded with the next progress step, for a cancel to clean up
    meta = ingest_file(
        manager.data_dir,
        _upload_path(manager, job),
        job["name"],
        fmt=job["input"]["format"],
        strict=job["input"]["strict"],
        format_options=job["input"].get("format_options"),
        dataset_id=job["dataset_id"],
        limits=manager.limits,
        progress=progress,
        original_name=job["input"]["file"],
        engine_for=manager.engine,
        resume=job["resume"],
    )
    _remove_upload(manager, job)  # the store holds the data now
    skipped = f"; {meta['n_skipped']} malformed record(s) skipped" if meta.get("n_skipped") else ""
    warnings = meta.get("warnings", [])
    if warnings:  # renamed ids or properties, isotopes read as hydrogen: said where the upload is followed
        skipped += f"; {len(warnings)} warning(s): " + "; ".join(warnings)
    store = ResultStore(manager.data_dir, meta["id"], meta["active_params"])
    stages_skipped = store.skipped_stages()
    if stages_skipped:
        skipped += "; " + skipped_in_words(stages_skipped)
    reused = reused_in_words(store.manifest()["stages"], job["started"])
    if reused:
        skipped += "; " + reused
    result = {
        "dataset_id": meta["id"],
        "n_molecules": meta["n_molecules"],
        "n_skipped": meta.get("n_skipped", 0),
        "problems": meta.get("problems", []),
        "warnings": warnings,
        "skipped_stages": stages_skipped,
    }
    return f"dataset {meta['id']!r} ready: {meta['n_molecules']:,} molecules{skipped}", result


def skipped_in_words(stages: dict[str, str]) -> str:
    """``not computed: statistics (why); models, models regression (why)``, one clause per distinct reason."""
    by_reason: dict[str, list[str]] = {}
    for stage, reason in stages.items():
        by_reason.setdefault(reason, []).append(stage.replace(".", " "))
    return "not computed: " + "; ".join(f"{', '.join(names)} ({reason})" for reason, names in by_reason.items())


def _audit(manager: JobManager, job: dict, progress: Progress) -> tuple[str, dict]:
    # Imported here: the audit pulls in SciPy's statistics, which listing jobs should not pay for.
    from orientscope.pipeline.model_audit import run_audit
    from orientscope.science.audit_verdict import Decision

    record = run_audit(
        manager.data_dir,
        job["dataset_id"],
        _upload_path(manager, job),
        job["name"],
        audit_id=job["audit_id"],
        limits=manager.limits,
        progress=progress,
        original_name=job["input"]["file"],
        decision=Decision.from_dict(job["input"].get("decision")),
    )
    _remove_upload(manager, job)
    codes = ", ".join(f"{p['property']}: {p['verdict']['code']}" for p in record["properties"] if not p["split"])
    result = {
        "dataset_id": job["dataset_id"],
        "audit_id": record["id"],
        "n_molecules": record["n_molecules"],
        "n_unknown_ids": record["n_unknown_ids"],
    }
    return f"audit {record['id']!r} of {job['dataset_id']!r} ready ({codes})", result


INGEST_KIND = JobKind(INGEST, "j", _ingest, in_store=True, discard=_remove_upload, renew=_renew_dataset_id)
AUDIT_KIND = JobKind(AUDIT, "j", _audit, in_store=True, discard=_remove_upload)
