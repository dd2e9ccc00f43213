"""``orientscope.audit_model``: does a model lean on the pose? The model audit from a callable.

OrientScope hands ``predict`` the stored poses and K rotated copies in batches (:mod:`orientscope.notebook.batches`)
and audits the predictions with the same code as ``orientscope audit-model`` and ``POST …/model-audits``
(:func:`orientscope.pipeline.model_audit.audit_predictions`). The copies are those of purpose ``audit``
(:mod:`orientscope.science.copy_rotations`): ``orientscope export --copies K --purpose audit`` writes the same
poses, and no training augmentation at default settings (purpose ``augment``) ever gives one of them.
:func:`assert_pose_robust` turns the audit into a gate for a test suite.
"""

from __future__ import annotations

import html
import itertools
import time
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from orientscope.core.numbers import format_count
from orientscope.core.settings import DEFAULT_SEED, display_name
from orientscope.loaders.predictions import Predictions
from orientscope.notebook.batches import Batch, check_batch_size, rotated, stored_batches
from orientscope.notebook.datasets import Dataset
from orientscope.notebook.progress import checked_options, collected_warnings, progress_bar
from orientscope.pipeline.export import check_copies, rotation_record
from orientscope.pipeline.model_audit import audit_predictions, audit_record
from orientscope.science.audit_verdict import AUDIT_RULE_VERSION, DEFAULT_MARGIN, Decision, passes
from orientscope.science.copy_rotations import AUDIT
from orientscope.science.counter_rng import id_counters
from orientscope.science.model_audit import AuditSettings
from orientscope.services.audit_table import COLUMNS, audit_rows, format_audit
from orientscope.services.model_audits import get_audit
from orientscope.store import audits as store

PREDICT_FORMAT = "python"
CHECK_MOLECULES = 2
FEATURIZE_HINT = (
    "predict gets an orientscope Batch (numbers, positions, offsets, ids); a predict that takes scikit-learn's "
    "X, such as model.predict, needs featurize=, a function from a Batch to X (n_molecules, n_features)"
)

__all__ = ["Batch", "ModelAudit", "PredictError", "assert_pose_robust", "audit_model"]


class PredictError(ValueError):
    """``predict`` raised, or returned something other than one finite value per molecule and property."""


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


class _Model:
    """``predict`` (after ``featurize``, when given), timed, its errors named by the batch they came from."""

    def __init__(self, predict: Callable, featurize: Callable | None, properties: list[str]):
        self.predict, self.featurize, self.properties = predict, featurize, properties
        self.seconds = 0.0

    def __call__(self, batch: Batch, label: str) -> np.ndarray:
        t0 = time.perf_counter()
        step = "predict"
        try:
            if self.featurize is not None:
                step = "featurize"
                x = self.featurize(batch)
                step = "predict"
                result = self.predict(x)
            else:
                result = self.predict(batch)
        except Exception as err:
            hint = f"; {FEATURIZE_HINT}" if self.featurize is None else ""
            detail = " ".join(str(err).split())[:300]  # one line: a library's message may quote the whole input
            raise PredictError(f"{step} raised {type(err).__name__} on {label}: {detail}{hint}") from err
        self.seconds += time.perf_counter() - t0
        return _check_output(result, batch, self.properties, label)

    def check(self, part: tuple) -> None:
        """Call it once on the first molecules' stored poses of ``part`` (molecules, rows): a wrong signature
        fails here, before any stage."""
        first = next(stored_batches([part], CHECK_MOLECULES))
        self(first, f"a {len(first)}-molecule check batch (stored poses, first id {str(first.ids[0])!r})")
        self.seconds = 0.0


def _label(batch: Batch, number: int) -> str:
    where = "stored poses" if batch.copy is None else f"copy {batch.copy}"
    return f"batch {number} ({where}, first id {str(batch.ids[0])!r})"


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


def _callable(value, what: str) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"{what} must be callable, got {type(value).__name__}")


def _training_ids(train_ids, dataset: Dataset) -> pd.Index | None:
    """``train_ids`` as an index, checked against the whole set (ValueError naming ids it lacks), or None."""
    if train_ids is None:
        return None
    train = pd.Index(np.asarray([train_ids] if isinstance(train_ids, str) else list(train_ids)).astype(str))
    unknown = train[pd.Index(dataset.whole.ids).get_indexer(train) < 0]
    if len(unknown):
        raise ValueError(f"{len(unknown):,} train_ids are not molecules of {dataset.id!r}, e.g. {list(unknown[:5])}")
    return train


def _splits(ids: np.ndarray, train: pd.Index | None) -> np.ndarray | None:
    """Per audited molecule ``train`` or ``test``, or None without training ids."""
    return None if train is None else np.where(pd.Index(ids).isin(train), "train", "test")


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
    ids=None,
    train_ids=None,
    featurize: Callable[[Batch], object] | None = None,
    margin: float = DEFAULT_MARGIN,
    max_shift: float | None = None,
) -> ModelAudit:
    """Run ``predict`` on the stored poses and on ``copies`` rotated copies of ``dataset``, and audit it.

    ``predict(batch)`` gets a :class:`Batch` and returns, for the batch's n molecules, an (n,) array (one
    property), an (n, P) array (the ``properties`` in order) or a dict {property: (n,) array}. With
    ``featurize``, ``predict(featurize(batch))`` is called instead, so ``model.predict`` of scikit-learn works.
    ``predict`` is first called on two molecules: a wrong signature fails there, before anything else runs.

    ``ids``: audit only these molecules (e.g. the held-out ones; the same as ``dataset.subset(ids)``).
    ``train_ids``: the molecules the model was trained on; the audit then has a ``train`` and a ``test`` split,
    and its texts say when training molecules are in the figures. ``seed`` seeds the copies' rotations
    (purpose ``audit``) and the audit's bootstrap and sign-flip test. ``margin`` (a fraction: 0.01 is ±1 %)
    and ``max_shift`` (the property's unit) are the bars of the tiers. A set without results gets its pipeline
    stages first (the classifier scores and the regression the audit reads); ``note`` says how long that took.
    ``progress=False`` silences the progress bars and the stages' warnings (they are kept in ``warnings``).
    """
    if not isinstance(dataset, Dataset):
        raise TypeError(f"audit_model() takes an orientscope Dataset, not {type(dataset).__name__}")
    _callable(predict, "predict")
    _callable(featurize, "featurize")
    properties = _check_properties(properties, dataset.properties)
    check_copies("random", int(copies))
    decision = Decision(margin, max_shift)
    copies, batch_size, seed = int(copies), check_batch_size(batch_size), int(seed)
    view = dataset if ids is None else dataset.subset(ids)
    train = _training_ids(train_ids, view)
    name = display_name(name or getattr(predict, "__name__", "model"), "audit")
    model = _Model(predict, featurize, properties)
    parts = view.row_parts()
    first = next(parts)  # read once: the check calls predict on its first molecules, and the audit starts with it
    with collected_warnings(silence=not progress) as stage_warnings:
        model.check(first)
        stage_seconds = view.ensure_computed(progress)
        note = f"ran the pipeline stages on {dataset.name} first ({stage_seconds:.1f} s)" if stage_seconds else ""
        n = view.n_molecules
        t0 = time.perf_counter()
        # Batch by batch, the stored poses then each copy: one batch's copies in memory at a time, never the set's.
        batch_ids, stored, turned = [], [], [[] for _ in range(copies)]
        with progress_bar(f"audit {name}", progress) as bar:
            done = 0
            for number, batch in enumerate(stored_batches(itertools.chain([first], parts), batch_size)):
                bar(0.8 * done / n, f"batch {number}, molecules {done:,}-{done + len(batch) - 1:,}", "predict")
                batch_ids.append(batch.ids)
                stored.append(model(batch, _label(batch, number)))
                counters = id_counters(batch.ids)
                for k in range(copies):
                    copy = rotated(batch, seed, k, AUDIT, counters)
                    turned[k].append(model(copy, _label(copy, number)))
                done += len(batch)
            all_ids = np.concatenate(batch_ids)
            preds = _predictions(all_ids, properties, np.concatenate(stored), [np.concatenate(r) for r in turned],
                                 _splits(all_ids, train))  # fmt: skip
            settings = AuditSettings()
            root, dataset_id = view.location()
            figures, table = audit_predictions(root, dataset_id, preds.rows_for_audit, seed, settings,
                                               lambda f, m, s="": bar(0.8 + 0.2 * f, m, s),
                                               decision=decision)  # fmt: skip
    figures["warnings"] = list(dict.fromkeys([*stage_warnings, *figures["warnings"]]))  # each once, in order
    source = {
        "filename": f"python:{getattr(predict, '__qualname__', type(predict).__name__)}",
        "copies": copies,
        "batch_size": batch_size,
        **{k: v for k, v in rotation_record(AUDIT, seed).items() if k != "seed"},
        "featurize": None if featurize is None else getattr(featurize, "__qualname__", type(featurize).__name__),
        "subset": None if not view.is_subset else {"n_molecules": view.n_molecules, "of": view.whole.n_molecules},
    }
    record = audit_record(name, source, preds.rows_for_audit, settings, figures)
    seconds = {"total": time.perf_counter() - t0, "predict": model.seconds, "stages": stage_seconds}
    return ModelAudit(view, record, table, preds.table, note, seconds)


class _Predictions:
    def __init__(self, table: pd.DataFrame, rows_for_audit: Predictions):
        self.table = table  # id, property, copy, stored, rotated [, split]: the CSV ``audit-model`` reads
        self.rows_for_audit = rows_for_audit


def _predictions(ids: np.ndarray, properties: list[str], stored: np.ndarray, rotated_: list[np.ndarray],
                 splits: np.ndarray | None) -> _Predictions:  # fmt: skip
    """The predictions in the long form of a predictions file: one row per (copy, property, molecule)."""
    n, k = len(ids), len(rotated_)
    parts = []
    for j, prop in enumerate(properties):
        part = pd.DataFrame({
            "id": np.tile(ids, k), "property": prop, "copy": np.repeat(np.arange(k), n),
            "stored": np.tile(stored[:, j], k), "rotated": np.concatenate([r[:, j] for r in rotated_]),
        })  # fmt: skip
        if splits is not None:
            part["split"] = np.tile(splits, k)
        parts.append(part)
    table = pd.concat(parts, ignore_index=True)
    rows = table[["id", "property", "stored", "rotated"]].assign(
        true=np.nan, split=table["split"] if splits is not None else None
    )
    audit_rows_ = Predictions(rows=rows, format=PREDICT_FORMAT, has_true=False, has_split=splits is not None,
                              has_copy=True)  # fmt: skip
    return _Predictions(table, audit_rows_)


def _percent(fraction: float | None) -> float | None:
    """A reliance in percent, the unit its texts and tables write it in."""
    return None if fraction is None else 100.0 * fraction


class ModelAudit:
    """A model audit, the same record as ``GET /api/datasets/{id}/model-audits/{audit_id}``.

    Attributes
    ----------
    id : the audit id; ``dataset`` : the audited :class:`~orientscope.notebook.datasets.Dataset` (a subset
        view when the audit was of some ids)
    verdicts : {property: tier} (``invariant``, ``robust``, ``leans``, ``better_rotated``, ``inconclusive``,
        ``frame_dependent``), over all audited molecules
    properties : DataFrame, one row per property (and split): the reliance and its CI in percent (the texts'
        unit), p-values, the rotation shift (median and 95th percentile with their CIs, largest; property
        unit), the MAEs, tier and its text
    warnings : what the audit and the stages before it warned about
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
            return get_audit(*self.dataset.location(), self.id)
        return {**self._record, "dataset": self.dataset.id, "made_by_rule": AUDIT_RULE_VERSION, "state": "done"}

    @property
    def name(self) -> str:
        return self._record["name"]

    @property
    def verdicts(self) -> dict[str, str]:
        return {p["property"]: p["verdict"]["code"] for p in self._record["properties"] if not p["split"]}

    @property
    def warnings(self) -> list[str]:
        return list(self._record["warnings"])

    @property
    def properties(self) -> pd.DataFrame:
        rows = []
        for p in self._record["properties"]:
            ci = [_percent(x) for x in p["ci95"].get("reliance") or [None, None]]
            median_ci = p.get("shift_median_ci95") or [None, None]
            p95_ci = p.get("shift_p95_ci95") or [None, None]
            rows.append({
                "property": p["property"], "split": p["split"], "n": p["n"], "unit": p.get("unit", ""),
                "reliance_percent": _percent(p["reliance"]), "reliance_ci_low_percent": ci[0],
                "reliance_ci_high_percent": ci[1],
                "pvalue": p["pvalue"], "pvalue_holm": p["pvalue_holm"],
                "shift_median": p.get("shift_median"), "shift_median_ci_low": median_ci[0],
                "shift_median_ci_high": median_ci[1], "shift_p95": p.get("shift_p95"),
                "shift_p95_ci_low": p95_ci[0], "shift_p95_ci_high": p95_ci[1], "shift_max": p.get("shift_max"),
                "mae_stored": p["mae_stored"], "mae_rotated": p["mae_rotated"],
                "verdict": p["verdict"]["code"], "text": p["verdict"]["text"],
            })  # fmt: skip
        return pd.DataFrame(rows)

    def table(self) -> str:
        """The audit as ``orientscope audit-model`` prints it."""
        return format_audit(self._record)

    def save(self) -> ModelAudit:
        """Store the audit with its dataset, so the dashboard's Model audit section shows it; ``self``.

        The dataset must be saved first (``dataset.save(name)``); an audit of a subset view is stored with its
        whole set.
        """
        if not self.dataset.saved:
            raise ValueError(f"dataset {self.dataset.id!r} is not saved: call .save(name) on it first")
        if not self.saved:
            record = {k: v for k, v in self._record.items() if k not in ("id", "dataset", "created")}
            store.write_audit(*self.dataset.location(), self.id, record, self._table)
            self.saved = True
        return self

    def _repr_html_(self) -> str:
        esc = html.escape
        shown = ("property", "reliance", "reliance_ci", "pvalue_holm", "shift_median", "shift_p95", "shift_p95_ci")
        headers = dict(COLUMNS)
        texts = {p["property"]: p["verdict"]["text"] for p in self._record["properties"] if p["split"] is None}
        rows = "".join(
            f"<tr data-verdict='{esc(r['tier'])}'>" + "".join(f"<td>{esc(r[k])}</td>" for k in shown)
            + f"<td><code>{esc(r['tier'])}</code></td><td>{esc(texts[r['property']])}</td></tr>"
            for r in audit_rows(self._record)
            if r["split"] == "all"
        )  # fmt: skip
        notes = "".join(f"<p>{esc(w)}</p>" for w in [self.note, *self._record["warnings"]] if w)
        head = "".join(f"<th>{esc(headers[k])}</th>" for k in shown) + "<th>tier</th><th></th>"
        return (
            f"<div class='orientscope-audit'><h3>Model audit {esc(self._record['name'])} of "
            f"{esc(self.dataset.name)}: {format_count(self._record['n_molecules'])} molecules, "
            f"{self._record['input']['copies']} rotated copies, seed {self._record['seed']}</h3>"
            f"<table><tr>{head}</tr>{rows}</table>{notes}</div>"
        )

    def __repr__(self) -> str:
        return f"<orientscope.ModelAudit {self.id} of {self.dataset.id!r}: {self.verdicts}>"


@checked_options
def assert_pose_robust(
    predict: Callable,
    dataset: Dataset,
    properties: str | Sequence[str],
    ids=None,
    max_reliance: float = DEFAULT_MARGIN,
    max_shift: float | None = None,
    copies: int = 5,
    seed: int = DEFAULT_SEED,
    featurize: Callable | None = None,
    train_ids=None,
    fail_on: str = "not-robust",
) -> ModelAudit:
    """Audit ``predict`` (see :func:`audit_model`) and raise AssertionError, with the audit table, unless every
    property passes ``fail_on`` over all audited molecules; the audit otherwise.

    ``max_reliance`` is the margin (0.01: the reliance CI must lie within ±1 %), ``max_shift`` the largest 95th
    percentile of the rotation shift accepted (property unit). ``fail_on``: ``not-robust`` (the default:
    ``invariant`` or ``robust`` pass), ``leans`` (only ``leans`` fails) or ``not-invariant``. One line in a test::

        orientscope.assert_pose_robust(model.predict, ds, "gap", ids=test_ids, featurize=features)
    """
    passes("invariant", fail_on)  # ValueError naming the choices, before any work (as audit-model --fail-on)
    try:
        Decision(max_reliance, max_shift)
    except ValueError as err:  # the bar the caller gave is max_reliance, which the audit calls its margin
        raise ValueError(f"max_reliance (the audit's margin): {err}") from None
    audit = audit_model(predict, dataset, properties, copies=copies, seed=seed, progress=False, ids=ids,
                        train_ids=train_ids, featurize=featurize, margin=max_reliance, max_shift=max_shift)  # fmt: skip
    failed = {p: code for p, code in audit.verdicts.items() if not passes(code, fail_on)}
    if failed:
        raise AssertionError(f"pose audit failed (--fail-on {fail_on}): {failed}\n{audit.table()}")
    return audit
