"""``orientscope.audit_model``: does a model lean on the pose? The model audit from a callable.

OrientScope hands ``predict`` the stored poses and K rotated copies in batches and audits the
predictions with the same code as ``orientscope audit-model`` and ``POST …/model-audits``
(:func:`orientscope.pipeline.model_audit.audit_predictions`). Copy ``k`` of molecule ``i`` is
rotated by :func:`orientscope.pipeline.export.copy_rotations` of (seed, k, i), the rule
``orientscope export --copies K`` writes, so a batch needs no state and the files of an export
give the model the same inputs.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from orientscope.core.dataset import MoleculeSet
from orientscope.core.settings import DEFAULT_SEED, display_name
from orientscope.loaders.predictions import Predictions
from orientscope.notebook.datasets import Dataset
from orientscope.notebook.progress import checked_options, progress_bar
from orientscope.pipeline.export import ROTATION_RULE, check_copies, copy_rotations
from orientscope.pipeline.model_audit import audit_predictions, audit_record
from orientscope.science.model_audit import AuditSettings
from orientscope.science.rotations import rotate_molecules
from orientscope.store import audits as store

PREDICT_FORMAT = "python"


class PredictError(ValueError):
    """``predict`` raised, or returned something other than one finite value per molecule and property."""


@dataclass(frozen=True)
class Batch:
    """What ``predict`` receives: a batch of molecules in flat arrays.

    Attributes
    ----------
    numbers : (n_atoms,) int atomic numbers
    positions : (n_atoms, 3) float64 positions in ångström
    offsets : (n_molecules + 1,) int, molecule ``j`` of the batch owns atoms ``offsets[j]:offsets[j+1]``
    ids : (n_molecules,) str molecule ids
    index : (n_molecules,) int, the molecules' rows in the dataset
    copy : None for the stored poses, else the rotated copy's number (0 … K-1)
    """

    numbers: np.ndarray
    positions: np.ndarray
    offsets: np.ndarray
    ids: np.ndarray
    index: np.ndarray
    copy: int | None

    def __len__(self) -> int:
        return len(self.ids)


def _check_output(out, batch: Batch, properties: list[str], label: str) -> np.ndarray:
    """(n, P) float64 from what ``predict`` returned for ``batch``; PredictError naming the batch otherwise."""
    n, p = len(batch), len(properties)
    if isinstance(out, dict):
        missing = [name for name in properties if name not in out]
        if missing:
            raise PredictError(f"predict returned no {missing} for {label} (it returned keys {sorted(out)})")
        columns = [np.asarray(out[name], dtype=np.float64).reshape(-1) for name in properties]
        bad = [(name, c.shape) for name, c in zip(properties, columns, strict=True) if c.shape != (n,)]
        if bad:
            raise PredictError(f"predict returned {bad[0][1]} values of {bad[0][0]!r} for {label}; expected ({n},)")
        values = np.stack(columns, axis=1)
    else:
        try:
            values = np.asarray(out, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise PredictError(f"predict returned {type(out).__name__} for {label}, not numbers: {err}") from None
        if values.shape == (n,) and p == 1:
            values = values[:, None]
        if values.shape != (n, p):
            expected = f"({n},) or ({n}, 1)" if p == 1 else f"({n}, {p}) or a dict of ({n},) arrays"
            raise PredictError(f"predict returned shape {values.shape} for {label}; expected {expected}")
    bad = ~np.isfinite(values)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise PredictError(
            f"predict returned {values[row, col]} for molecule {str(batch.ids[row])!r}, property {properties[col]!r} "
            f"in {label}; predictions must be finite"
        )
    return values


def _batches(parts: Iterable[MoleculeSet], batch_size: int) -> Iterator[Batch]:
    """The stored poses in batches of ``batch_size`` molecules, in dataset order (the last one shorter).

    ``parts`` are read one at a time (a stored set's shards), and a batch may span two of them.
    """
    pieces, have, start = [], 0, 0
    for mols in parts:
        a = 0
        while a < mols.n_molecules:
            b = min(a + batch_size - have, mols.n_molecules)
            lo, hi = mols.offsets[a], mols.offsets[b]
            pieces.append(
                (mols.atomic_numbers[lo:hi], mols.positions_angstrom[lo:hi], mols.n_atoms[a:b], mols.ids[a:b])
            )
            have, a = have + b - a, b
            if have == batch_size:
                yield _join(pieces, start)
                pieces, have, start = [], 0, start + batch_size
    if pieces:
        yield _join(pieces, start)


def _join(pieces: list[tuple], start: int) -> Batch:
    """One batch of stored poses from consecutive (numbers, positions, atom counts, ids) pieces."""
    numbers, positions, counts, ids = (np.concatenate(column) if len(pieces) > 1 else column[0]
                                       for column in zip(*pieces, strict=True))  # fmt: skip
    offsets = np.concatenate([[0], np.cumsum(counts)])
    return Batch(numbers, positions, offsets, ids, np.arange(start, start + len(ids)), None)


def _rotated(batch: Batch, seed: int, copy: int) -> Batch:
    """Copy ``copy`` of the batch: each molecule rotated about its centroid by the counter-based rule."""
    positions = rotate_molecules(batch.positions, batch.offsets, copy_rotations(batch.index, seed, copy))
    return replace(batch, positions=positions, copy=copy)


def _predict(predict: Callable, batch: Batch, number: int, properties: list[str], timer: list[float]) -> np.ndarray:
    """(n, P) checked predictions of one batch; PredictError naming the batch and its first id."""
    where = "stored poses" if batch.copy is None else f"copy {batch.copy}"
    label = f"batch {number} ({where}, first id {str(batch.ids[0])!r})"
    t0 = time.perf_counter()
    try:
        result = predict(batch)
    except Exception as err:
        raise PredictError(f"predict raised {type(err).__name__} on {label}: {err}") from err
    timer[0] += time.perf_counter() - t0
    return _check_output(result, batch, properties, label)


def _check_properties(properties, known: Sequence[str]) -> list[str]:
    names = [properties] if isinstance(properties, str) else list(properties)
    if not names:
        raise ValueError("audit_model needs at least one property")
    unknown = [p for p in names if p not in known]
    if unknown:
        raise ValueError(f"unknown property {unknown}; the dataset's properties: {list(known)}")
    if len(set(names)) != len(names):
        raise ValueError(f"properties repeat: {names}")
    return names


@checked_options
def audit_model(
    predict: Callable[[Batch], object],
    dataset: Dataset,
    properties: str | Sequence[str],
    copies: int = 5,
    seed: int = DEFAULT_SEED,
    batch_size: int = 1024,
    name: str | None = None,
    progress: bool = True,
) -> ModelAudit:
    """Run ``predict`` on the stored poses and on ``copies`` rotated copies of ``dataset``, and audit it.

    ``predict(batch)`` gets a :class:`Batch` and returns, for the batch's n molecules, an (n,) array (one
    property), an (n, P) array (the ``properties`` in order) or a dict {property: (n,) array}. ``seed``
    seeds the copies' rotations and the audit's bootstrap and sign-flip test. A set without results gets
    its pipeline stages first (the classifier scores and the regression the audit reads); ``note`` says
    how long that took.
    """
    if not isinstance(dataset, Dataset):
        raise TypeError(f"audit_model() takes an orientscope Dataset, not {type(dataset).__name__}")
    if not callable(predict):
        raise TypeError(f"predict must be callable, got {type(predict).__name__}")
    properties = _check_properties(properties, dataset.properties)
    check_copies("random", int(copies))
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    copies, batch_size, seed = int(copies), int(batch_size), int(seed)
    name = display_name(name or getattr(predict, "__name__", "model"), "audit")
    stage_seconds = dataset.ensure_computed(progress)
    note = f"ran the pipeline stages on {dataset.name} first ({stage_seconds:.1f} s)" if stage_seconds else ""
    n = dataset.n_molecules
    timer = [0.0]
    t0 = time.perf_counter()
    # Batch by batch, the stored poses then each copy: one batch's copies in memory at a time, never the set's.
    ids, stored, rotated = [], [], [[] for _ in range(copies)]
    with progress_bar(f"audit {name}", progress) as bar:
        for number, batch in enumerate(_batches(dataset.parts(), batch_size)):
            bar(
                0.8 * batch.index[0] / n, f"batch {number}, molecules {batch.index[0]:,}-{batch.index[-1]:,}", "predict"
            )
            ids.append(batch.ids)
            stored.append(_predict(predict, batch, number, properties, timer))
            for k in range(copies):
                rotated[k].append(_predict(predict, _rotated(batch, seed, k), number, properties, timer))
        preds = _predictions(np.concatenate(ids), properties, np.concatenate(stored),
                             [np.concatenate(r) for r in rotated])  # fmt: skip
        settings = AuditSettings()
        root, dataset_id = dataset.location()
        figures, table = audit_predictions(root, dataset_id, preds.rows_for_audit, seed, settings,
                                           lambda f, m, s="": bar(0.8 + 0.2 * f, m, s))  # fmt: skip
    source = {
        "filename": f"python:{getattr(predict, '__qualname__', type(predict).__name__)}",
        "copies": copies,
        "batch_size": batch_size,
        "rotation_rule": ROTATION_RULE,
    }
    record = audit_record(name, source, preds.rows_for_audit, settings, figures)
    seconds = {"total": time.perf_counter() - t0, "predict": timer[0], "stages": stage_seconds}
    return ModelAudit(dataset, record, table, preds.table, note, seconds)


@dataclass(frozen=True)
class _Predictions:
    table: pd.DataFrame  # id, property, copy, stored, rotated: the CSV ``audit-model`` reads
    rows_for_audit: Predictions


def _predictions(ids: np.ndarray, properties: list[str], stored: np.ndarray, rotated: list[np.ndarray]) -> _Predictions:
    """The predictions in the long form of a predictions file: one row per (copy, property, molecule)."""
    n, k = len(ids), len(rotated)
    parts = []
    for j, prop in enumerate(properties):
        parts.append(pd.DataFrame({
            "id": np.tile(ids, k), "property": prop, "copy": np.repeat(np.arange(k), n),
            "stored": np.tile(stored[:, j], k), "rotated": np.concatenate([r[:, j] for r in rotated]),
        }))  # fmt: skip
    table = pd.concat(parts, ignore_index=True)
    rows = table[["id", "property", "stored", "rotated"]].assign(true=np.nan, split=None)
    audit_rows = Predictions(rows=rows, format=PREDICT_FORMAT, has_true=False, has_split=False, has_copy=True)
    return _Predictions(table, audit_rows)


class ModelAudit:
    """A model audit, the same record as ``GET /api/datasets/{id}/model-audits/{audit_id}``.

    Attributes
    ----------
    id : the audit id; ``dataset`` : the audited :class:`~orientscope.notebook.datasets.Dataset`
    verdicts : {property: verdict code} (``invariant``, ``leans``, ...)
    properties : DataFrame, one row per property: reliance, its CI, p-values, verdict code and text
    predictions : DataFrame id, property, copy, stored, rotated: what ``predict`` returned, in the form of the
        predictions file ``orientscope audit-model`` reads
    note : what ran before the audit (stages of an unsaved set) and how long it took
    seconds : {"total", "predict", "stages"}: wall time of the audit, of ``predict`` alone and of the stages
    """

    def __init__(self, dataset: Dataset, record: dict, table: pd.DataFrame, predictions: pd.DataFrame,
                 note: str, seconds: dict) -> None:  # fmt: skip
        self.dataset = dataset
        self.id = store.new_audit_id()
        self._record = {**record, "id": self.id, "dataset": dataset.id, "created": time.time()}
        self._table = table
        self.predictions = predictions
        self.note = note
        self.seconds = seconds
        self.saved = False

    def to_dict(self) -> dict:
        """The audit as the REST API serves it (``state`` done)."""
        if self.saved:
            return {**store.read_audit(*self.dataset.location(), self.id), "state": "done"}
        return {**self._record, "dataset": self.dataset.id, "state": "done"}

    @property
    def verdicts(self) -> dict[str, str]:
        return {p["property"]: p["verdict"]["code"] for p in self._record["properties"] if not p["split"]}

    @property
    def properties(self) -> pd.DataFrame:
        rows = []
        for p in self._record["properties"]:
            ci = p["ci95"].get("reliance") or [None, None]
            rows.append({
                "property": p["property"], "split": p["split"], "n": p["n"], "reliance": p["reliance"],
                "reliance_ci_low": ci[0], "reliance_ci_high": ci[1], "pvalue": p["pvalue"],
                "pvalue_holm": p["pvalue_holm"], "verdict": p["verdict"]["code"], "text": p["verdict"]["text"],
            })  # fmt: skip
        return pd.DataFrame(rows)

    def save(self) -> ModelAudit:
        """Store the audit with its dataset, so the dashboard's Model audit section shows it; ``self``.

        The dataset must be saved first (``dataset.save(name)``).
        """
        if not self.dataset.saved:
            raise ValueError(f"dataset {self.dataset.id!r} is not saved: call .save(name) on it first")
        if not self.saved:
            record = {k: v for k, v in self._record.items() if k not in ("id", "dataset", "created")}
            store.write_audit(self.dataset.data_dir, self.dataset.id, self.id, record, self._table)
            self.saved = True
        return self

    def _repr_html_(self) -> str:
        esc = html.escape

        def cell(x, fmt):
            return "–" if x is None or not np.isfinite(x) else format(x, fmt)

        rows = "".join(
            f"<tr data-verdict='{esc(r.verdict)}'><td>{esc(r.property)}</td><td>{cell(r.reliance, '+.3f')} "
            f"[{cell(r.reliance_ci_low, '+.3f')}, {cell(r.reliance_ci_high, '+.3f')}]</td>"
            f"<td>{cell(r.pvalue_holm, '.2g')}</td><td><code>{esc(r.verdict)}</code></td><td>{esc(r.text)}</td></tr>"
            for r in self.properties.itertuples()
            if r.split is None
        )
        notes = "".join(f"<p>{esc(w)}</p>" for w in [self.note, *self._record["warnings"]] if w)
        return (
            f"<div class='orientscope-audit'><h3>Model audit {esc(self._record['name'])} of "
            f"{esc(self.dataset.name)}: {self._record['n_molecules']:,} molecules, "
            f"{self._record['input']['copies']} rotated copies, seed {self._record['seed']}</h3>"
            "<table><tr><th>property</th><th>reliance [95 % CI]</th><th>p (Holm)</th><th>verdict</th><th></th></tr>"
            f"{rows}</table>{notes}</div>"
        )

    def __repr__(self) -> str:
        return f"<orientscope.ModelAudit {self.id} of {self.dataset.id!r}: {self.verdicts}>"
