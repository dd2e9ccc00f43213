"""Groups of molecules (scaffold, formula, cluster) with their statistics."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from orientscope.services.cache import DatasetView, get_view
from orientscope.services.errors import NotComputed
from orientscope.services.grouping import (
    GROUP_KINDS,
    UNGROUPED,
    check_group_kind,
    group_ids,
    group_label_map,
    stage_groups_table,
    ungrouped_count,
)

MAX_GROUPS = 1000


def _json_value(v):
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, list | tuple | np.ndarray):
        return [_json_value(x) for x in v]
    return v


def _basic_stats(view: DatasetView, ids: np.ndarray) -> pd.DataFrame:
    """size, n_degenerate and mean classifier score per group id (largest groups first)."""
    df = pd.DataFrame({"group": ids, "degenerate": view.degenerate, "score": view.scores}).dropna(subset=["group"])
    stats = df.groupby("group", sort=False).agg(
        size=("degenerate", "size"), n_degenerate=("degenerate", "sum"), mean_classifier_score=("score", "mean")
    )
    return stats.reset_index().sort_values(["size", "group"], ascending=[False, True], kind="stable")


def list_groups(data_dir: Path, dataset_id: str, by: str = "formula", limit: int = MAX_GROUPS) -> dict:
    """Groups of ``by`` (one of :data:`GROUP_KINDS`) with size, degenerate count, mean score and stage statistics.

    Formula groups are always available; scaffold and cluster groups need the chemistry stage.
    Each group carries its ``group`` code and its ``label`` (formula, scaffold SMILES or the
    cluster representative's SMILES). Molecules in no group are counted under ``ungrouped``,
    never listed as a group.
    """
    check_group_kind(by)
    view = get_view(data_dir, dataset_id)
    ids = group_ids(view).get(by)
    if ids is None:
        raise NotComputed(f"dataset {dataset_id!r} has no {by} groups: the chemistry stage has not been computed")

    def build() -> list[dict]:
        stats = _basic_stats(view, ids)
        extra = stage_groups_table(view, by)
        labels = group_label_map(view, by)
        key = next((c for c in ("group", f"{by}_id", "id", by) if extra is not None and c in extra.columns), None)
        extras: dict[str, dict] = {}
        if key is not None:
            cols = [c for c in extra.columns if c not in (key, "label") and c not in stats.columns]
            for rec in extra[[key, *cols]].to_dict("records"):
                group = str(rec.pop(key))
                extras[group] = {c: _json_value(v) for c, v in rec.items()}
        return [
            {
                "group": str(row.group),
                "label": labels.get(str(row.group), str(row.group)),
                "size": int(row.size),
                "n_degenerate": int(row.n_degenerate),
                "mean_classifier_score": _json_value(float(row.mean_classifier_score)),
                "statistics": extras.get(str(row.group), {}),
            }
            for row in stats.itertuples(index=False)
        ]

    groups = view.extra(f"groups_list_{by}", build)
    ungrouped = {"label": UNGROUPED[by], "size": ungrouped_count(view, by)}
    return {"by": by, "total": len(groups), "groups": groups[:limit], "ungrouped": ungrouped}


__all__ = ["GROUP_KINDS", "list_groups"]
