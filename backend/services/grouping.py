"""Which group each molecule is in, and the names people read for the groups.

A group has a *code* (what the chemistry stage stores: a number, or for formula
groups without the chemistry stage the formula itself) and a *label* a person
reads: the Hill formula (``C7H10O2``), the Murcko scaffold SMILES (``C1CC1``) or,
for a Tanimoto cluster, the SMILES of its representative (the leader the
cluster was grown from). Molecules outside every group (cluster -1: no leader
within the threshold; scaffold -1: no chemical graph) have the code ``None``
and are reported apart under :data:`UNGROUPED`, never as one more group.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from backend.core.elements import hill_formulas
from backend.core.groups import GROUP_KINDS, UNGROUPED
from backend.services.cache import CHEMISTRY_MOLECULES, DatasetView
from backend.services.errors import InvalidInput

CHEMISTRY_STAGE = "chemistry"
_LEADER_IN_OLD_LABEL = re.compile(r"\(leader (.+)\)$")  # results written before clusters had a leader_id column


def check_group_kind(by: str, loc: str = "by") -> str:
    if by not in GROUP_KINDS:
        raise InvalidInput(f"unknown grouping {by!r}; expected one of {GROUP_KINDS}", ("query", loc))
    return by


def chemistry_table(view: DatasetView) -> pd.DataFrame | None:
    """The chemistry stage's per-molecule table aligned with the view (None if not computed)."""
    return view.extra("chemistry_molecules", lambda: view.aligned_table(*CHEMISTRY_MOLECULES))


def formulas(view: DatasetView) -> np.ndarray:
    """(n,) Hill formula per molecule."""

    def build():
        chem = chemistry_table(view)
        if chem is not None and "formula" in chem.columns and chem["formula"].notna().all():
            return chem["formula"].astype(str).to_numpy(object)
        return hill_formulas(view.mols.atomic_numbers, view.mols.offsets)[view.rows].astype(object)

    return view.extra("formulas", build)


def _group_column(chem, by: str) -> str | None:
    for name in (f"{by}_group", f"{by}_id", f"group_{by}", by):
        if chem is not None and name in chem.columns:
            return name
    return None


def _codes(values: pd.Series) -> np.ndarray:
    """Codes as strings; missing values and the stage's -1 ("in no group") become None."""
    text = values.astype(str).to_numpy(object)
    outside = values.isna().to_numpy()
    if pd.api.types.is_numeric_dtype(values):
        outside = outside | (values.fillna(-1).to_numpy() < 0)
    return np.where(outside, None, text).astype(object)


def group_ids(view: DatasetView) -> dict[str, np.ndarray]:
    """Group code per molecule for each grouping the data has: {by: (n,) object array of str, None if in no group}."""

    def build():
        chem = chemistry_table(view)
        out = {}
        for by in GROUP_KINDS:
            col = _group_column(chem, by)
            if col is not None:
                out[by] = _codes(chem[col])
        out.setdefault("formula", formulas(view))
        return out

    return view.extra("group_ids", build)


def stage_groups_table(view: DatasetView, by: str) -> pd.DataFrame | None:
    """The chemistry stage's ``groups_<by>`` table (one row per group), if computed."""
    name = f"groups_{by}"
    if not view.has_table(CHEMISTRY_STAGE, name):
        return None
    return view.extra(name, lambda: view.store.table(CHEMISTRY_STAGE, name).to_pandas())


def _smiles_of(view: DatasetView) -> dict[str, str]:
    """{molecule id: SMILES of the graph the chemistry stage used}."""
    chem = chemistry_table(view)
    if chem is not None and "smiles" in chem.columns:
        smiles = chem["smiles"].fillna("").astype(str).to_numpy()
    else:
        smiles = np.asarray(view.smiles).astype(str)
    return dict(zip(view.ids.tolist(), smiles.tolist(), strict=True))


def _cluster_label(row: dict, smiles: dict[str, str]) -> str | None:
    """SMILES of the cluster's leader, or None if it is not known."""
    leader = row.get("leader_id")
    if leader is None:
        found = _LEADER_IN_OLD_LABEL.search(str(row.get("label", "")))
        leader = found.group(1) if found else None
    if leader is None:
        return None
    return smiles.get(str(leader)) or None


def group_label_map(view: DatasetView, by: str) -> dict[str, str]:
    """{group code: label} for every group of ``by`` (a code without a better name is its own label)."""
    check_group_kind(by)

    def build() -> dict[str, str]:
        codes = group_ids(view).get(by)
        labels = {} if codes is None else {c: c for c in pd.unique(codes[~pd.isna(codes)])}
        table = stage_groups_table(view, by)
        if table is None or "group" not in table.columns:
            return labels
        smiles = _smiles_of(view) if by == "cluster" else {}
        for row in table.to_dict("records"):
            code = str(row["group"])
            label = _cluster_label(row, smiles) if by == "cluster" else row.get("label")
            if label is not None and str(label) != "":
                labels[code] = str(label)
        return labels

    return view.extra(f"group_labels:{by}", build)


def group_label(view: DatasetView, by: str, code: str | None) -> str:
    """The label of one group code; :data:`UNGROUPED` ``[by]`` for ``None`` (in no group)."""
    if code is None:
        return UNGROUPED[by]
    return group_label_map(view, by).get(str(code), str(code))


def ungrouped_count(view: DatasetView, by: str) -> int:
    """Molecules in no group of ``by`` (0 if the grouping is not computed)."""
    codes = group_ids(view).get(by)
    return 0 if codes is None else int(pd.isna(codes).sum())


def group_rows(view: DatasetView, by: str, name: str) -> np.ndarray:
    """(n,) bool: molecules of the group named by its code or its label (or :data:`UNGROUPED` ``[by]``).

    Raises InvalidInput naming both accepted forms when nothing has that name.
    """
    codes = group_ids(view)[by]
    if name == UNGROUPED[by]:
        return pd.isna(codes)
    labels = group_label_map(view, by)
    if name in labels:
        return codes == name
    wanted = {code for code, label in labels.items() if label == name}
    if not wanted:
        example = next(iter(labels.items()), None)
        hint = f", e.g. {example[0]!r} or {example[1]!r}" if example and example[0] != example[1] else ""
        raise InvalidInput(
            f"no {by} group {name!r} in dataset {view.dataset_id!r}: give a group code or its label{hint}, "
            f"or {UNGROUPED[by]!r}",
            ("query", "group"),
        )
    return np.isin(codes, list(wanted))
