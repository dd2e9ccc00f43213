"""Model audits of a dataset, for the API and the dashboard: check an upload, read, list, delete, download.

An audit is either stored (``state`` ``done``, the full record) or still a
job (``queued``, ``running`` or ``failed``, with the job's message); both are
found by the audit id. Submitting goes through the job manager
(:meth:`orientscope.pipeline.jobs.JobManager.submit_audit`).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyarrow.csv as pcsv

from orientscope.core.errors import DatasetError, NotFoundError
from orientscope.loaders.predictions import check_header, shown_as
from orientscope.pipeline.jobs import DONE, list_jobs
from orientscope.science.audit_verdict import AUDIT_RULE_VERSION, Decision, reread_verdict
from orientscope.science.model_audit import shift_figures
from orientscope.services.errors import InvalidInput
from orientscope.store import audits as store
from orientscope.store import datasets as ds

AUDIT_JOB = "audit"
DOWNLOAD_FORMATS = ("csv", "parquet")
# What a listing shows of each audit; the full record is one GET away.
SUMMARY_KEYS = ("id", "name", "dataset", "created", "n_molecules", "n_unknown_ids", "input")


def check_upload(data_dir: Path, dataset_id: str, path: Path, filename: str | None = None) -> list[str]:
    """Check a predictions upload's header and property names before accepting it (InvalidInput otherwise).

    ``filename`` is the name the user gave the file; errors name it rather than the spooled copy.
    """
    meta = ds.read_meta(data_dir, dataset_id)
    try:
        return check_header(path, meta.get("properties", []))
    except DatasetError as err:
        raise InvalidInput(str(shown_as(err, path, filename)), ("body", "file")) from None


def check_decision(margin: str | None, max_shift: str | None) -> dict:
    """The tiers' margin and max_shift from an upload's text fields (InvalidInput naming the field otherwise)."""
    values = {}
    for field, text, default in (("margin", margin, 0.01), ("max_shift", max_shift, None)):
        if text is None or not text.strip():
            values[field] = default
            continue
        try:
            values[field] = float(text)
        except ValueError:
            raise InvalidInput(f"{field} must be a number, got {text!r}", ("body", field)) from None
    try:
        return Decision(values["margin"], values["max_shift"]).as_dict()
    except ValueError as err:
        field = "margin" if str(err).startswith("margin") else "max_shift"
        raise InvalidInput(str(err), ("body", field)) from None


def _audit_jobs(data_dir: Path, dataset_id: str) -> list[dict]:
    return [j for j in list_jobs(data_dir) if j.get("kind") == AUDIT_JOB and j.get("dataset_id") == dataset_id]


def _from_job(job: dict) -> dict:
    return {
        "id": job["audit_id"],
        "name": job.get("name"),
        "dataset": job["dataset_id"],
        "created": job.get("created"),
        "state": job["state"],
        "job_id": job["id"],
        "message": job.get("message", ""),
        "progress": job.get("progress", 0.0),
    }


def _add_shift_figures(data_dir: Path, dataset_id: str, audit_id: str, record: dict) -> None:
    """Give the entries of an audit stored before the rotation shift's figures those figures, computed from its
    ``molecules.parquet`` (its per-molecule RMS shift; the largest over copies was not kept). Stored figures
    are left as they are."""
    missing = [p for p in record["properties"] if "shift_median" not in p]
    if not missing:
        return
    columns = ["id", "property", "split", "shift"]
    table = store.read_audit_molecules(data_dir, dataset_id, audit_id, columns=columns).to_pandas()
    for entry in missing:
        rows = table[table["property"] == entry["property"]]
        if entry.get("split"):
            rows = rows[rows["split"] == entry["split"]]
        if rows.empty:
            continue
        shift = rows["shift"].to_numpy(np.float64)
        entry.update(shift_figures(shift, None, float(entry.get("stored_rms") or 0.0)))
        if entry.get("split") is None and (record.get("input") or {}).get("has_split"):
            entry["n_train"] = int((rows["split"] == "train").sum())
        entry["shift_figures_from"] = "molecules.parquet (re-read; the per-molecule largest shift was not stored)"


def _read(data_dir: Path, dataset_id: str, audit_id: str) -> dict:
    """A stored audit with every verdict re-read by the current rule from its stored figures.

    ``made_by_rule`` is the audit rule version its stored verdicts were made by (1 or 2 before the rule
    recorded it at the top level); ``audit_rule_version`` the rule its verdicts are served by now.
    """
    record = store.read_audit(data_dir, dataset_id, audit_id)
    made_by = record.get("audit_rule_version") or min(
        (p["verdict"].get("rule_version") or 1 for p in record["properties"]), default=AUDIT_RULE_VERSION
    )
    if made_by != AUDIT_RULE_VERSION:
        _add_shift_figures(data_dir, dataset_id, audit_id, record)
    decision = Decision.from_dict(record.get("decision"))
    for p in record["properties"]:
        p["verdict"] = reread_verdict(p, p["verdict"].get("code") == "frame_dependent", decision)
    record["made_by_rule"] = made_by
    record["audit_rule_version"] = AUDIT_RULE_VERSION
    return record


def get_audit(data_dir: Path, dataset_id: str, audit_id: str) -> dict:
    """The stored audit plus ``state: done``, or its job's state; NotFoundError if neither exists."""
    ds.read_meta(data_dir, dataset_id)
    if store.has_audit(data_dir, dataset_id, audit_id):
        return {**_read(data_dir, dataset_id, audit_id), "state": DONE}
    for job in _audit_jobs(data_dir, dataset_id):
        if job.get("audit_id") == audit_id and job["state"] != DONE:  # a done job's audit was deleted
            return _from_job(job)
    raise NotFoundError(f"unknown audit {audit_id!r} of dataset {dataset_id!r}")


def list_audits(data_dir: Path, dataset_id: str) -> list[dict]:
    """Every audit of a dataset, stored ones and those still queued, running or failed, oldest first."""
    ds.read_meta(data_dir, dataset_id)
    stored = []
    for audit_id in store.list_audit_ids(data_dir, dataset_id):
        try:
            record = _read(data_dir, dataset_id, audit_id)
        except (OSError, ValueError, NotFoundError):  # deleted while listing
            continue
        summary = {k: record.get(k) for k in SUMMARY_KEYS}
        summary["verdicts"] = {p["property"]: p["verdict"]["code"] for p in record["properties"] if not p["split"]}
        stored.append({**summary, "state": DONE})
    done = {a["id"] for a in stored}
    pending = [_from_job(j) for j in _audit_jobs(data_dir, dataset_id) if j.get("audit_id") not in done]
    return sorted(stored + [p for p in pending if p["state"] != DONE], key=lambda a: a.get("created") or 0)


def delete_audit(data_dir: Path, dataset_id: str, audit_id: str) -> None:
    ds.read_meta(data_dir, dataset_id)
    store.delete_audit(data_dir, dataset_id, audit_id)


def molecules_download(data_dir: Path, dataset_id: str, audit_id: str, fmt: str) -> tuple[bytes, str, str]:
    """The per-molecule table as (bytes, media type, file name) in ``csv`` or ``parquet``."""
    if fmt not in DOWNLOAD_FORMATS:
        raise InvalidInput(f"format must be one of {list(DOWNLOAD_FORMATS)}, got {fmt!r}", ("query", "format"))
    ds.read_meta(data_dir, dataset_id)
    path = store.molecules_path(data_dir, dataset_id, audit_id)
    name = f"{dataset_id}-{audit_id}-molecules.{fmt}"
    if fmt == "parquet":
        return path.read_bytes(), "application/vnd.apache.parquet", name
    buf = io.BytesIO()
    pcsv.write_csv(store.read_audit_molecules(data_dir, dataset_id, audit_id), buf)
    return buf.getvalue(), "text/csv", name


def prediction_shift(data_dir: Path, dataset_id: str, audit_id: str, prop: str, ids: np.ndarray) -> np.ndarray:
    """(n,) each molecule's prediction shift (RMS over copies of rotated − stored) for ``ids``; NaN outside the audit."""
    table = store.read_audit_molecules(data_dir, dataset_id, audit_id, columns=["id", "property", "shift"]).to_pandas()
    table = table[table["property"] == prop]
    if table.empty:
        raise InvalidInput(f"audit {audit_id!r} has no property {prop!r}", ("query", "property"))
    values = table.set_index("id")["shift"]
    return values.reindex(np.asarray(ids).astype(str)).to_numpy(np.float64)
