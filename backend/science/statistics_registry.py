"""The statistics OrientScope reports, one registration each, and the report tables they fill.

A statistic is declared in its own science module (``science/statistic.py`` says what a declaration holds) and
listed here. The report (``services/report.py``: which keys are public, which figures the verdict reads), the
API's schema of the summary (``api/schemas.py``), the CLI text and the dashboard's evidence table
(``services/report_format.py``, ``app/verdict.py``) and the statistics stage (``pipeline/sharded.py``, for a
statistic with callable per-shard and merge functions) iterate over :func:`statistics`. Their order is the
order of the rows in each table.

:func:`register` adds one more (a plugin, or a test's toy statistic) and :func:`unregister` takes it out again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from orientscope.core.settings import check_choice
from orientscope.science import axial, classifiers, regression, similarity, so3_stats
from orientscope.science.statistic import ReportField, Statistic

BUILT_IN: tuple[Statistic, ...] = (
    *so3_stats.STATISTICS,
    axial.STATISTIC,
    classifiers.STATISTIC,
    *regression.STATISTICS,
    similarity.STATISTIC,
)
_registered: list[Statistic] = list(BUILT_IN)

KL_SCALE_NOTE = (
    "KL: 0 = uniform orientations (as the control should be); the estimate grows with N, so its interval is for "
    "the expected estimate at this N, and sets of different sizes compare through KL at n where both have it, "
    "else only at an equal N (report --limit)"
)
DATASET_VS_CONTROL = ("measure", "dataset", "control")


def _statistics_notes(report: dict, rows: list) -> list[str]:
    # The KL scale's note only beside a KL (a set with Bingham's test alone has no KL row to explain).
    kl_shown = rows and (report.get(so3_stats.KL_KEY) or {}).get("value") is not None
    return ([KL_SCALE_NOTE] if kl_shown else []) + [n for n in (report.get("orientation_note"),) if n]


def _no_notes(report: dict, rows: list) -> list[str]:
    return []


@dataclass(frozen=True)
class Table:
    """One table of the report: the statistics whose ``table`` is its ``key`` give its rows, in registry order.

    skipped_by : the stages (or ``stage.part``) whose reason for not running the table shows, the first found
    notes : (report, rows) -> lines under the table, before those of its statistics
    """

    key: str
    title: str
    header: tuple[str, ...]
    skipped_by: tuple[str, ...]
    notes: Callable[[dict, list], list[str]] = _no_notes


TABLES: tuple[Table, ...] = (
    Table("statistics", "Orientation statistics", DATASET_VS_CONTROL, ("statistics",), _statistics_notes),
    Table(
        classifiers.CLASSIFIERS_KEY,
        "Rotation classifiers (stored pose vs a random rotation; 0.5 = cannot tell)",
        DATASET_VS_CONTROL,
        ("models",),
    ),
    Table(
        regression.REGRESSION_KEY,
        "Orientation-only regression (predict the property from R alone)",
        ("property", "MSE vs mean baseline", "gain", "control gain"),
        ("models", "models.regression"),
    ),
    Table(
        similarity.SIMILARITY_KEY,
        "Similarity–pose coupling (do chemical neighbours share a pose?)",
        DATASET_VS_CONTROL,
        ("chemistry", "chemistry.similarity"),
    ),
)


def statistics() -> tuple[Statistic, ...]:
    """Every registered statistic, built-in ones first, in the order their rows are shown."""
    return tuple(_registered)


def keys() -> tuple[str, ...]:
    return tuple(s.key for s in _registered)


def get(key: str) -> Statistic:
    """The statistic registered under ``key``; ValueError listing them otherwise."""
    return {s.key: s for s in _registered}[check_choice(key, keys(), "statistic")]


def register(statistic: Statistic) -> Statistic:
    """Add ``statistic`` after the others; ValueError if one of its report keys is taken or its table unknown."""
    taken = {name: s.key for s in _registered for name in s.names()}
    clash = sorted(name for name in statistic.names() if name in taken)
    if clash:
        raise ValueError(f"statistic {statistic.key!r}: report keys {clash} are already written by {taken[clash[0]]!r}")
    if statistic.table is not None:
        check_choice(statistic.table, tuple(t.key for t in TABLES), f"table of statistic {statistic.key!r}")
    if statistic.in_verdict:
        raise ValueError(
            f"statistic {statistic.key!r}: the verdict's family is fixed by its calibrated rule (science/verdict.py); "
            "a registered statistic is reported beside it"
        )
    _registered.append(statistic)
    return statistic


def unregister(key: str) -> None:
    """Take out a statistic :func:`register` added (the built-in ones stay)."""
    statistic = get(key)
    if statistic in BUILT_IN:
        raise ValueError(f"statistic {key!r} is built in; only a registered one can be taken out")
    _registered.remove(statistic)


def report_fields(public: bool = True) -> tuple[ReportField, ...]:
    """Every report field of every statistic (only the public ones by default), in registry order."""
    return tuple(f for s in _registered for f in s.fields if f.public or not public)


def hidden_fields() -> frozenset[str]:
    """The keys kept in the stored sections and out of the report (bookkeeping such as the reference's index)."""
    return frozenset(f.name for s in _registered for f in s.fields if not f.public)


def for_table(key: str) -> tuple[Statistic, ...]:
    """The statistics whose rows go into table ``key``, in registry order."""
    return tuple(s for s in _registered if s.table == key)


def generic(stage: str) -> tuple[Statistic, ...]:
    """The statistics stage ``stage`` runs through its generic per-shard task (callable per-shard functions)."""
    return tuple(s for s in _registered if s.stage == stage and s.runs_generic)


def verdict_figures(figures: dict) -> dict:
    """``{key: figures[key]}`` of every statistic in the verdict's family: ``science.verdict.alignment_verdict``'s
    keyword arguments."""
    return {s.key: figures.get(s.key) for s in _registered if s.in_verdict}


def tooltip(key: str) -> str | None:
    """What the statistic (or the table named after it) ``key`` measures, for a hover; None if it says nothing."""
    return next((s.tooltip for s in _registered if s.key == key and s.tooltip), None)
