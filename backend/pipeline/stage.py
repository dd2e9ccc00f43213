"""What a stage produces: its report section, per-molecule tables and settings (see ``pipeline.sharded``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

# The rule each stage's results are made by. The manifest records it per stage, and a re-run
# (``orientscope precompute`` or ``report``) recomputes a stage stored under an older rule (one with no
# record is rule 1). 2 (frames, statistics, models): each molecule contributes only the orientation its
# symmetry defines (none, one axis, the full frame); the SO(3) statistics read full frames only, and
# Bingham's test reads the axis-only molecules' axes. 2 (chemistry): a group's pose (mean, spread,
# concentration, typical member) is made of its members with a full frame only. 3 (statistics): the KL
# interval widens by the set's own excess spread (a mix of aligned and random poses), and Bingham's test
# stores the fourth-order sums its effect size's interval reads: a stored result recomputes, so two users of
# the same data never see two intervals.
STAGE_RULES = {"frames": 2, "statistics": 3, "chemistry": 2, "models": 2}


@dataclass
class StageOutput:
    """What a stage produces.

    report : keys merged into the top level of the report object
    control : keys merged into ``report["control"]``
    tables : per-molecule tables written as Parquet
    settings : model settings and seeds recorded in the manifest
    skipped : a reason if the stage could not run on this dataset
    skipped_parts : {part: reason} for parts of the stage that could not run
        while the rest did (e.g. ``{"regression": "no numeric properties"}``)
    shard_rows : {name: rows} of per-shard tables or arrays the stage's tasks wrote themselves
    """

    report: dict = field(default_factory=dict)
    control: dict = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    skipped: str | None = None
    skipped_parts: dict[str, str] = field(default_factory=dict)
    shard_rows: dict[str, int] = field(default_factory=dict)

    def section(self) -> dict:
        """The JSON section; undefined figures (NaN, e.g. a ratio of zero counts) become null."""
        return _finite_or_null(
            {
                "report": self.report,
                "control": self.control,
                "skipped": self.skipped,
                "skipped_parts": self.skipped_parts,
            }
        )

    def skipped_stages(self, stage: str) -> dict[str, str]:
        """{"<stage>" or "<stage>.<part>": reason} for what did not run, as the manifest records it."""
        if self.skipped:
            return {stage: self.skipped}
        return {f"{stage}.{part}": reason for part, reason in self.skipped_parts.items()}


def _finite_or_null(obj):
    if isinstance(obj, dict):
        return {k: _finite_or_null(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite_or_null(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _finite_or_null(obj.tolist())
    if isinstance(obj, float | np.floating) and not np.isfinite(obj):
        return None
    return obj


def older_rule_stages(store) -> dict[str, dict[str, int]]:
    """``{stage: {"stored": rule, "current": rule}}`` of the stored stages made by an older rule than the
    current one (:data:`STAGE_RULES`): what a re-run recomputes."""
    out = {}
    for stage in store.completed_stages():
        stored, current = store.stage_rule(stage), STAGE_RULES.get(stage, 1)
        if stored < current:
            out[stage] = {"stored": stored, "current": current}
    return out
