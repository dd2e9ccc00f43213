"""What a statistic is: the one declaration its science module makes, and the registry lists.

A statistic's module (``science/so3_partial.py`` for KL, ``science/axial.py`` for Bingham's test …) declares
it with ``Statistic(...)``: the report keys it writes (with their JSON shape and meaning, which the API's
schema is built from), where it is computed, its per-shard and merge functions, the rows it adds to the
report's tables (its words, through ``core/numbers`` and ``science/alignment_words``) and whether it is one of
the verdict's tests. The registry (``science/statistics_registry.py``) lists them; the report, the API schema,
the CLI text and the dashboard's evidence table iterate over it, so a new statistic is its module and one
registration.

Two kinds of per-shard and merge functions:

* a callable: the statistics stage runs it for every shard through one generic task
  (``pipeline/shard_stages.registered_partial``), once per orientation set (the dataset's and its control's),
  with the arrays its ``inputs`` name (:data:`INPUTS`), and merges the partial results with ``merge``;
* a name (``"module:function"``, relative to ``orientscope``): the function of the stage's own machinery that
  computes it (the KL fits need every shard's rows, KS needs the reference the kernel sums pick), which the
  stage runs itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# What a callable per-shard function may ask for (``Statistic.inputs``); each is one orientation set's.
INPUTS = {
    "rotations": "(n_full, 3, 3) float64: the full frames (molecules whose symmetry defines a whole pose)",
    "quaternions": "(n_full, 4) float64: the same frames as unit quaternions (w, x, y, z)",
    "index": "(n_full,) int64: the global molecule index of each full frame (for counter-based draws)",
    "axes": "(n_axis, 3) float64: the defined axis of each axis-only molecule (linear molecules, symmetric tops)",
    "seed": "int: the run's seed",
}
# The stages a statistic can be computed in (pipeline order). Only "statistics" runs callables.
STAGES = ("frames", "statistics", "chemistry", "models")


@dataclass(frozen=True)
class ReportField:
    """One key a statistic writes into the report (and into its control's figures).

    name : the key in ``report --json``, ``GET …/summary`` and the stored section
    type : its JSON shape as a Python type (``dict[str, Any]``, ``list[float]``), for the API's schema
    description : what it holds, for the API's schema
    public : False for bookkeeping that stays in the stored section and out of the report
    """

    name: str
    type: Any
    description: str
    public: bool = True


Rows = Callable[[dict], list[tuple[str, ...]]]
Notes = Callable[[dict], list[str]]


def _no_rows(report: dict) -> list[tuple[str, ...]]:
    return []


@dataclass(frozen=True)
class Statistic:
    """One statistic: its report fields, how it is computed, and how it reads in the report's tables.

    key : its main report key (the first of ``fields``); names it in the registry
    title : what it is, in a few words
    stage : the pipeline stage that computes it (one of :data:`STAGES`)
    inputs : what it reads: names of :data:`INPUTS` for a callable ``per_shard``, else a description
    per_shard : the function of one shard (a callable of the ``inputs``, returning a small partial result),
        or the ``"module:function"`` of the stage's own machinery that computes it
    merge : the partial results of every shard (a list, in shard order) -> ``{field name: value}``; or a name
    fields : the report keys it writes
    table : the key of the report table its rows go into (``statistics_registry.TABLES``)
    rows : the report (its ``control`` inside) -> rows of display text, as long as the table's header
    notes : the report -> lines printed under the table (only when the table has rows)
    in_verdict : it is one of the tests of the verdict's family (``science/verdict.py`` takes it by ``key``)
    has_control : the control copy carries its own value of every field (the compare view shows those)
    tooltip : what the measure means, for a table's title or a figure's hover
    """

    key: str
    title: str
    stage: str
    inputs: tuple[str, ...]
    per_shard: Callable | str
    merge: Callable | str
    fields: tuple[ReportField, ...]
    table: str | None = None
    rows: Rows = _no_rows
    notes: Notes | None = None
    in_verdict: bool = False
    has_control: bool = True
    tooltip: str = ""

    def __post_init__(self) -> None:
        if not self.fields or self.fields[0].name != self.key:
            raise ValueError(f"statistic {self.key!r}: its first report field must be named {self.key!r}")
        if self.stage not in STAGES:
            raise ValueError(f"statistic {self.key!r}: stage {self.stage!r} is not one of {', '.join(STAGES)}")
        if callable(self.per_shard):
            unknown = sorted(set(self.inputs) - set(INPUTS))
            if unknown:
                raise ValueError(
                    f"statistic {self.key!r}: unknown inputs {unknown}; a per-shard function may take "
                    f"{', '.join(INPUTS)}"
                )
            if self.stage != "statistics" or not callable(self.merge):
                raise ValueError(
                    f"statistic {self.key!r}: a callable per-shard function runs in the statistics stage and "
                    "needs a callable merge"
                )

    @property
    def runs_generic(self) -> bool:
        """True if the statistics stage runs it through its generic per-shard task."""
        return callable(self.per_shard)

    def names(self) -> tuple[str, ...]:
        """Every report key it writes, public or not."""
        return tuple(f.name for f in self.fields)
