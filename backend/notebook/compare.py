"""``orientscope.compare_audits`` and ``orientscope.sweep``: did the fix work? Audits side by side.

``sweep`` trains the user's model on K rotated copies for each K (purpose ``augment``: poses the audit, of
purpose ``audit``, never scores), audits each on the held-out molecules and compares them.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from orientscope.core.numbers import format_count, format_interval, format_number, format_percent
from orientscope.core.settings import DEFAULT_SEED
from orientscope.figures.audits import comparison_figure
from orientscope.notebook.audit import ModelAudit, audit_model
from orientscope.notebook.batches import DEFAULT_BATCH_SIZE, check_n_copies, rotated_copies
from orientscope.notebook.datasets import Dataset
from orientscope.notebook.progress import checked_options, progress_bar
from orientscope.science.audit_verdict import DEFAULT_MARGIN, percent_digits
from orientscope.science.copy_rotations import AUGMENT
from orientscope.services.audit_compare import comparison_table

DEFAULT_SWEEP = (0, 1, 4, 16)


class AuditComparison:
    """Audits side by side.

    Attributes
    ----------
    table : DataFrame, one row per (audit, property): the reliance and its CI in percent, rotation shift median
        and 95th percentile with its CI and the MAEs (property unit), tier, margin (a fraction)
    audits : the :class:`ModelAudit` objects (or records) compared, in order
    """

    def __init__(self, audits: list, table: pd.DataFrame):
        self.audits = audits
        self.table = table

    def figure(self):
        """A plotly figure: each audit's reliance CI against the ±margin band, beside its rotation shift."""
        return comparison_figure(self.table)

    def _repr_html_(self) -> str:
        esc = html.escape
        head = ("audit", "property", "n", "reliance [95 % CI]", "shift median", "shift 95th pct [95 % CI]",
                "MAE stored / rotated", "tier")  # fmt: skip
        body = "".join(
            f"<tr data-tier='{esc(r.tier)}'><td>{esc(str(r.audit))}</td><td>{esc(r.property)}</td><td>{format_count(int(r.n))}</td>"
            f"<td>{esc(_reliance_cell(r))}</td>"
            f"<td>{esc(format_number(r.shift_median, '.3g'))} {esc(r.unit)}</td>"
            f"<td>{esc(format_number(r.shift_p95, '.3g'))} "
            f"{esc(format_interval(r.shift_p95_ci_low, r.shift_p95_ci_high, 'number', fmt='.3g'))} {esc(r.unit)}</td>"
            f"<td>{esc(format_number(r.mae_stored, '.3g'))} / {esc(format_number(r.mae_rotated, '.3g'))}</td>"
            f"<td><code>{esc(r.tier)}</code></td></tr>"
            for r in self.table.itertuples()
        )  # fmt: skip
        header = "".join(f"<th>{esc(h)}</th>" for h in head)
        return f"<div class='orientscope-compare'><table><tr>{header}</tr>{body}</table></div>"

    def __repr__(self) -> str:
        return f"<orientscope.AuditComparison of {len(self.audits)} audits>\n{self.table.to_string(index=False)}"


def _reliance_cell(row) -> str:
    """``+0.20 % [-0.50 %, +1.02 %]``: in the decimals of the tier's text, so a bound reads on the side of the
    margin the tier says (the table's NaN reads "–")."""
    low, high = row.reliance_ci_low_percent / 100, row.reliance_ci_high_percent / 100
    margin = DEFAULT_MARGIN if pd.isna(row.margin) else row.margin
    digits = percent_digits(None if pd.isna(low) or pd.isna(high) else [low, high], margin)
    return (
        f"{format_percent(row.reliance_percent / 100, digits)} {format_interval(low, high, 'percent', digits=digits)}"
    )


def _record(audit) -> tuple[dict, str]:
    if isinstance(audit, ModelAudit):
        return audit.to_dict(), audit.name
    if isinstance(audit, dict) and "properties" in audit:
        if audit.get("state", "done") != "done" or audit["properties"] is None:  # a REST record of a queued/failed job
            raise ValueError(
                f"audit {audit.get('id')!r} is {audit.get('state')!r}, not done, so it has no figures to compare"
                + (f": {audit['message']}" if audit.get("message") else "")
            )
        return audit, str(audit.get("name") or audit.get("id"))
    raise TypeError(f"compare_audits takes ModelAudit objects or audit records (dicts), not {type(audit).__name__}")


@checked_options
def compare_audits(audits: Sequence, labels: Sequence[str] | None = None, split: str | None = None) -> AuditComparison:
    """Audits side by side: a table (``.table``) and a plotly figure (``.figure()``).

    ``audits``: :class:`ModelAudit` objects or audit records (``GET …/model-audits/{id}``); ``labels`` name the
    rows (default: the audits' names); ``split``: ``train`` or ``test`` for those splits' figures (default: all
    audited molecules).
    """
    audits = [audits] if isinstance(audits, ModelAudit | dict) else list(audits)
    if not audits:
        raise ValueError("compare_audits needs at least one audit")
    records, names = zip(*(_record(a) for a in audits), strict=True)
    labels = list(labels) if labels is not None else list(names)
    if len(labels) != len(audits):
        raise ValueError(f"{len(labels)} labels for {len(audits)} audits")
    if split not in (None, "train", "test"):
        raise ValueError(f"split must be None, 'train' or 'test', got {split!r}")
    table = comparison_table(list(records), labels, split)
    if table.empty:  # only a split can leave nothing: every audit has its all-molecules figures
        raise ValueError(f"no audit has a {split!r} split (a split column, or train_ids=); leave split=None for "
                         "all audited molecules")  # fmt: skip
    return AuditComparison(audits, table)


@checked_options
def sweep(
    train: Callable,
    dataset: Dataset,
    properties: str | Sequence[str],
    n_copies: Sequence[int] = DEFAULT_SWEEP,
    ids=None,
    train_ids=None,
    seed: int = DEFAULT_SEED,
    copies: int = 5,
    featurize: Callable | None = None,
    margin: float = DEFAULT_MARGIN,
    max_shift: float | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: bool = True,
) -> AuditComparison:
    """For each K in ``n_copies``: ``predict = train(poses)`` on K rotated copies of the training molecules
    (K = 0: their stored poses), then the audit of ``predict`` on the held-out ``ids``; the comparison.

    ``train(poses)`` gets a re-iterable :class:`~orientscope.notebook.batches.Poses` of :class:`Batch` objects
    with ``properties`` and returns a ``predict`` for :func:`audit_model` (with ``featurize``, one that takes
    X). ``ids``: the held-out molecules (required); ``train_ids``: the training molecules (default: every
    molecule not in ``ids``). Training copies are of purpose ``augment`` and the audit's of ``audit``, both at
    ``seed``: the audit never scores a pose the model was trained on. The table has a column ``n_copies``.
    """
    if not callable(train):
        raise TypeError(f"train must be callable (train(poses) -> predict), got {type(train).__name__}")
    if ids is None:
        raise ValueError("sweep needs the held-out ids (ids=): the audit of a model on its own training poses "
                         "measures unseen inputs, not reliance")  # fmt: skip
    held_out = dataset.subset(ids)
    if train_ids is None:
        train_ids = np.setdiff1d(dataset.ids, held_out.ids)
        if not len(train_ids):
            raise ValueError("every molecule is held out: give train_ids, or fewer ids")
    # Every K is checked before the first training run: the user's training is the expensive part.
    ks = [check_n_copies(k) for k in ([n_copies] if np.isscalar(n_copies) else n_copies)]
    if not ks:
        raise ValueError("n_copies is empty: give the numbers of rotated copies to train on, e.g. [0, 1, 4, 16]")
    audits = []
    with progress_bar(f"sweep {dataset.name}", progress) as bar:
        for j, k in enumerate(ks):
            bar(j / len(ks), f"train on {k} rotated copies" if k else "train on the stored poses", "train")
            poses = rotated_copies(dataset, k, seed=seed, ids=train_ids, purpose=AUGMENT, batch_size=batch_size)
            predict = train(poses)
            if not callable(predict):
                raise TypeError(f"train(poses) must return a predict function; with {k} copies it returned "
                                f"{type(predict).__name__}")  # fmt: skip
            bar((j + 0.5) / len(ks), f"audit the model trained on {k} copies", "audit")
            name = f"{k} rotated copies" if k else "stored poses"
            audits.append(audit_model(predict, held_out, properties, copies=copies, seed=seed, name=name,
                                      progress=False, featurize=featurize, margin=margin, max_shift=max_shift,
                                      batch_size=batch_size))  # fmt: skip
    result = compare_audits(audits)
    result.table.insert(1, "n_copies", np.repeat(ks, [len(a.verdicts) for a in audits]))
    return result
