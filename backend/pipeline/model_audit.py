"""Model audit of a stored dataset: read a predictions file, match it, compute the figures, store them.

The predictions (see :mod:`orientscope.loaders.predictions`) are matched to the
dataset's molecules by exact id. Per property, and per split when the file
has one, :mod:`orientscope.science.model_audit` computes the figures on the
molecules found; the p-values are Holm-adjusted across every figure set of
the audit. The classifier scores and the orientation-only regression come
from the dataset's active result (null, with a reason, if it has none).

Every random draw is seeded from ``derived_seed(seed, "audit:<property>:<split>")``,
so one recorded seed reproduces the audit. ``ids`` restricts the audit to those
molecules (e.g. held-out ones); the tiers follow the user's
:class:`~orientscope.science.audit_verdict.Decision` (margin, max_shift), which
the record keeps with the rule version that made it.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from orientscope.core.dataset import frame_dependent_properties
from orientscope.core.errors import DatasetError
from orientscope.core.limits import Limits
from orientscope.core.numbers import format_count, format_number
from orientscope.core.progress import Progress, quiet
from orientscope.core.settings import DEFAULT_SEED, display_name
from orientscope.loaders.predictions import Predictions, read_predictions
from orientscope.science import model_audit as sci
from orientscope.science.audit_verdict import AUDIT_RULE_VERSION, Decision, verdict
from orientscope.science.regression import REGRESSION_KEY
from orientscope.science.rotations import derived_seed
from orientscope.store import audits as store
from orientscope.store import datasets as ds
from orientscope.store.results import ResultStore

log = logging.getLogger(__name__)

MODELS_STAGE = "models"
MAX_EXAMPLES = 5
# Shifted ids must explain at least this share of the unknown (or the matched) ids to be reported.
SHIFT_WARNING_SHARE = 0.5
MOLECULE_COLUMNS = (
    "id", "property", "split", "n_copies", "stored", "true", "se_stored", "se_rotated",
    "ae_stored", "ae_rotated", "shift", "shift_max", "copy_spread",
)  # fmt: skip


def is_frame_dependent(meta: dict, prop: str) -> bool:
    """Whether a property changes with the lab frame by definition (e.g. tensor components)."""
    return prop in frame_dependent_properties(meta)


def file_sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _scores_and_regression(data_dir: Path, dataset_id: str, meta: dict, ids: pd.Index):
    """Per-molecule classifier scores (stored, control), the regression rows by property and the result key."""
    params = meta.get("active_params")
    if not params:
        return None, None, {}, None
    result = ResultStore(data_dir, dataset_id, params)
    if not result.completed(MODELS_STAGE):
        return None, None, {}, result.key
    section = result.section(MODELS_STAGE)
    regression = {row["property"]: row for row in section.get("report", {}).get(REGRESSION_KEY, [])}
    out = []
    for table in ("scores", "control_scores"):
        frame = result.table(MODELS_STAGE, table, columns=["id", "classifier_score"]).to_pandas()
        values = np.full(len(ids), np.nan)
        where = ids.get_indexer(frame["id"].astype(str))
        values[where[where >= 0]] = frame["classifier_score"].to_numpy(np.float64)[where >= 0]
        out.append(values)
    return out[0], out[1], regression, result.key


def _integer_ids(ids: np.ndarray) -> np.ndarray | None:
    """The ids as integers, or None if any is not a plain integer."""
    values = pd.to_numeric(pd.Series(ids, dtype=object), errors="coerce")
    if values.isna().any() or not np.all(values == np.round(values)):
        return None
    return values.to_numpy(np.int64)


def shifted_id_warnings(unknown: np.ndarray, dataset_ids: pd.Index) -> list[str]:
    """Warn when ids not in the dataset would match if shifted by one (0- versus 1-based numbering)."""
    as_int = _integer_ids(unknown) if len(unknown) else None
    if as_int is None:
        return []
    warnings = []
    for step in (1, -1):
        hits = np.count_nonzero(dataset_ids.get_indexer((as_int + step).astype(str)) >= 0)
        if hits >= SHIFT_WARNING_SHARE * len(unknown):
            warnings.append(
                f"{hits:,} of the {len(unknown):,} unknown ids match a dataset id when shifted by {step:+d}: "
                "are the ids numbered from 0 instead of 1 (or the other way)?"
            )
    return warnings


def _shifted_truth_warning(
    prop: str, errors: sci.MoleculeErrors, values: np.ndarray, dataset_ids: pd.Index
) -> str | None:
    """Warn when the stored predictions fit the neighbouring molecule's value much better than their own."""
    as_int = _integer_ids(dataset_ids.to_numpy()[errors.molecule])
    mse = float(errors.se_stored.mean())
    if as_int is None or mse == 0:
        return None
    for step in (1, -1):
        where = dataset_ids.get_indexer((as_int + step).astype(str))
        ok = where >= 0
        if ok.sum() < SHIFT_WARNING_SHARE * len(where):
            continue
        shifted = float(np.nanmean((errors.stored[ok] - values[where[ok]]) ** 2))
        if shifted < 0.5 * mse:
            return (
                f"{prop}: the stored predictions match the value of id{step:+d} far better than their own "
                f"(MSE {format_number(shifted, '.3g')} against {format_number(mse, '.3g')}): are the ids shifted by one?"
            )
    return None


def _truth(rows: pd.DataFrame, mol: np.ndarray, dataset_values: np.ndarray | None) -> np.ndarray:
    true = rows["true"].to_numpy(np.float64)
    if dataset_values is not None:
        fill = np.isnan(true)
        true = np.where(fill, dataset_values[mol], true)
    return true


def _figure_sets(preds: Predictions) -> list[tuple[str, str | None]]:
    splits = [None, "train", "test"] if preds.has_split else [None]
    return [(prop, split) for prop in sorted(preds.rows["property"].unique()) for split in splits]


def _only_ids(preds: Predictions, ids, dataset_ids: pd.Index, dataset_id: str) -> tuple[Predictions, dict]:
    """The predictions of the molecules ``ids`` only, and what the record says of that choice."""
    wanted = pd.Index(pd.unique(np.asarray(list(ids), dtype=object).astype(str)))
    unknown = wanted[dataset_ids.get_indexer(wanted) < 0]
    if len(unknown):
        raise DatasetError(
            f"{len(unknown):,} of the {len(wanted):,} ids to audit are not molecules of dataset {dataset_id!r}, "
            f"e.g. {list(unknown[:MAX_EXAMPLES])}"
        )
    keep = preds.rows["id"].isin(wanted).to_numpy()
    found = pd.Index(preds.rows["id"][keep].unique())
    if not keep.any():
        raise DatasetError(f"none of the {len(wanted):,} ids to audit has a prediction (e.g. {list(wanted[:3])})")
    chosen = {"n_ids": int(len(wanted)), "n_ids_without_predictions": int(len(wanted) - len(found))}
    if chosen["n_ids_without_predictions"]:
        missing = wanted[~wanted.isin(found)]
        chosen["warning"] = (
            f"{len(missing):,} of the {len(wanted):,} ids to audit have no prediction in the file and are not "
            f"audited (e.g. {list(missing[:MAX_EXAMPLES])}); the figures are of the other {len(found):,}"
        )
    return Predictions(preds.rows[keep], preds.format, preds.has_true, preds.has_split, preds.has_copy), chosen


def audit_predictions(
    data_dir: Path,
    dataset_id: str,
    preds: Predictions,
    seed: int = DEFAULT_SEED,
    settings: sci.AuditSettings | None = None,
    progress: Progress | None = None,
    ids=None,
    decision: Decision | None = None,
) -> tuple[dict, pd.DataFrame]:
    """The audit's figures (a JSON-ready dict) and its per-molecule table, for validated predictions.

    ``ids``: audit only these molecules (their other predictions are left out); ``decision``: the
    margin and max_shift the tiers use (default ±1 %, no max_shift).
    """
    settings = settings or sci.AuditSettings()
    decision = decision or Decision()
    notify = progress or quiet
    meta = ds.read_meta(data_dir, dataset_id)
    used = sorted(set(preds.rows["property"].unique()) & set(meta.get("properties", [])))
    mol_table = ds.read_molecule_columns(data_dir, dataset_id, ["id", *used])
    dataset_ids = pd.Index(mol_table["id"].astype(str))
    chosen = None
    if ids is not None:
        preds, chosen = _only_ids(preds, ids, dataset_ids, dataset_id)
    codes, uniques = pd.factorize(preds.rows["id"])
    where = dataset_ids.get_indexer(uniques)
    unknown = np.asarray(uniques)[where < 0]
    mol_all = where[codes]
    matched = mol_all >= 0
    rows = preds.rows[matched]
    mol_rows = mol_all[matched]
    warnings = shifted_id_warnings(unknown, dataset_ids)
    if chosen is not None and "warning" in chosen:
        warnings.insert(0, chosen.pop("warning"))
    if len(rows) == 0:
        raise DatasetError(
            f"none of the {len(uniques):,} ids in the predictions is a molecule of dataset {dataset_id!r} "
            f"(e.g. {list(map(str, unknown[:MAX_EXAMPLES]))}; the dataset's ids look like "
            f"{list(dataset_ids[:3])})" + "".join(f"; {w}" for w in warnings)
        )
    scores, control, regression, result_key = _scores_and_regression(data_dir, dataset_id, meta, dataset_ids)
    units = meta.get("property_units", {})
    entries, tables = [], []
    sets = _figure_sets(preds)
    for k, (prop, split) in enumerate(sets):
        notify(0.2 + 0.75 * k / len(sets), f"{prop}" + (f" ({split})" if split else ""), "audit")
        sel = (rows["property"] == prop).to_numpy()
        if split is not None:
            sel = sel & (rows["split"] == split).to_numpy()
        if not sel.any():
            continue
        sub, mol = rows[sel], mol_rows[sel]
        values = mol_table[prop].to_numpy(np.float64) if prop in mol_table else None
        true = _truth(sub, mol, values)
        ok = np.isfinite(true)
        if not ok.any():
            raise DatasetError(f"property {prop!r}: no molecule in the predictions has a true value")
        errors = sci.molecule_errors(mol[ok], sub["stored"].to_numpy()[ok], sub["rotated"].to_numpy()[ok], true[ok])
        figures = sci.audit_figures(
            errors,
            settings,
            derived_seed(seed, f"audit:{prop}:{split or 'all'}"),
            scores=None if scores is None else scores[errors.molecule],
            control_scores=None if control is None else control[errors.molecule],
        )
        first_split = sub["split"].to_numpy()[ok][np.unique(mol[ok], return_index=True)[1]]
        if split is None and preds.has_split:
            figures["n_train"] = int(np.count_nonzero(first_split == "train"))
        notes = []
        variance = float(np.nanvar(values)) if values is not None else float(np.var(errors.true))
        if (note := sci.units_warning(figures["mse_stored"], variance, units.get(prop, ""), split)) is not None:
            notes.append(f"{prop}: {note}")
        if split is None and not ok.all():  # the header counts these molecules; the figures leave them out
            lacking = np.unique(mol[~ok])
            notes.append(
                f"{prop}: {format_count(len(lacking))} molecule(s) have no true value (the dataset's is missing and "
                f"the file gives none) and are left out of its figures, e.g. {list(dataset_ids[lacking[:MAX_EXAMPLES]])}"
            )
        if split is None and values is not None:
            if (note := _shifted_truth_warning(prop, errors, values, dataset_ids)) is not None:
                notes.append(note)
        entries.append({
            "property": prop,
            "split": split,
            "unit": units.get(prop, ""),
            "n_rows": int(sel.sum()),
            "n_missing_true": int((~ok).sum()),
            **figures,
            "regression_improvement": (regression.get(prop) or {}).get("improvement"),
            "warnings": notes,
        })  # fmt: skip
        if split is None:
            tables.append(pd.DataFrame({
                "id": dataset_ids.to_numpy()[errors.molecule], "property": prop, "split": first_split,
                "n_copies": errors.n_copies, "stored": errors.stored, "true": errors.true,
                "se_stored": errors.se_stored, "se_rotated": errors.se_rotated, "ae_stored": errors.ae_stored,
                "ae_rotated": errors.ae_rotated, "shift": errors.shift, "shift_max": errors.shift_max,
                "copy_spread": errors.copy_spread,
            }))  # fmt: skip
    adjusted = sci.holm([e["pvalue"] for e in entries])
    for entry, p_holm in zip(entries, adjusted, strict=True):
        entry["pvalue_holm"] = p_holm
        entry["verdict"] = verdict(
            entry, p_holm, is_frame_dependent(meta, entry["property"]), regression.get(entry["property"]),
            decision, entry["split"],
        )  # fmt: skip
        warnings.extend(entry["warnings"])
    record = {
        "n_rows": preds.n_rows,
        "n_matched_rows": int(matched.sum()),
        "n_molecules": int(len(np.unique(mol_rows))),
        "n_unknown_ids": int(len(unknown)),
        "unknown_id_examples": [str(u) for u in unknown[:MAX_EXAMPLES]],
        "result_key": result_key,
        "seed": int(seed),
        "settings": settings.as_dict(),
        "seed_rule": "derived_seed(seed, 'audit:<property>:<split or all>')",
        "audit_rule_version": AUDIT_RULE_VERSION,
        "decision": decision.as_dict(),
        **({"ids": chosen} if chosen is not None else {}),
        "warnings": warnings,
        "properties": entries,
    }
    table = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=list(MOLECULE_COLUMNS))
    return record, table


def audit_record(name: str, source: dict, preds: Predictions, settings: sci.AuditSettings, figures: dict) -> dict:
    """The stored record of an audit: its name, where the predictions came from (``source``) and the figures."""
    return {
        "name": name,
        "input": {
            **source,
            "format": preds.format,
            "has_true": preds.has_true,
            "has_split": preds.has_split,
            "has_copy": preds.has_copy,
        },
        "n_bootstrap": settings.n_bootstrap,
        **figures,
    }


def run_audit(
    data_dir: Path,
    dataset_id: str,
    path: Path,
    name: str,
    audit_id: str | None = None,
    seed: int = DEFAULT_SEED,
    settings: sci.AuditSettings | None = None,
    limits: Limits | None = None,
    progress: Progress | None = None,
    original_name: str | None = None,
    ids=None,
    decision: Decision | None = None,
) -> dict:
    """Audit the predictions in ``path`` against ``dataset_id`` and store the result; the stored record.

    ``ids`` restricts the audit to those molecules; ``decision`` holds the tiers' margin and max_shift.
    """
    data_dir, path = Path(data_dir), Path(path)
    notify = progress or quiet
    name = display_name(name, "audit")
    meta = ds.read_meta(data_dir, dataset_id)
    if not path.is_file():
        raise FileNotFoundError(f"no predictions file {path}")
    notify(0.0, f"reading {original_name or path.name}", "load")
    preds = read_predictions(path, meta.get("properties", []), limits)
    notify(0.15, f"{preds.n_rows:,} prediction rows", "load")
    settings = settings or sci.AuditSettings()
    figures, table = audit_predictions(data_dir, dataset_id, preds, seed, settings, notify, ids, decision)
    source = {"filename": original_name or path.name, "sha256": file_sha256(path)}
    record = audit_record(name, source, preds, settings, figures)
    audit_id = audit_id or store.new_audit_id()
    notify(0.97, "storing the audit", "save")
    store.write_audit(data_dir, dataset_id, audit_id, record, table)
    notify(1.0, f"audit {audit_id!r} ready", "done")
    return store.read_audit(data_dir, dataset_id, audit_id)
