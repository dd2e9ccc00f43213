"""Which group each molecule is in, and the names people read for the groups.

A group has a *code* (what the chemistry stage stores: a number, or for formula
groups without the chemistry stage the formula itself) and a *label* a person
reads: the Hill formula (``C7H10O2``), the Murcko scaffold SMILES (``C1CC1``) or,
for a Tanimoto cluster, the SMILES of its representative (the leader the
cluster was grown from). Molecules outside every group (cluster -1: no leader
within the threshold; scaffold -1: no chemical graph; every grouping: a single
atom, an ion, which has no pose to share) have the code ``None`` and are
reported apart under :data:`UNGROUPED`, never as one more group.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from orientscope.core.elements import hill_formulas
from orientscope.core.errors import NotFoundError
from orientscope.core.groups import GROUP_KINDS, UNGROUPED
from orientscope.services.bytecache import nbytes, shared_cache
from orientscope.services.cache import CHEMISTRY_MOLECULES, DatasetView
from orientscope.services.errors import InvalidInput
from orientscope.store.atomic import read_table
from orientscope.store.shards import shard_table_paths

CHEMISTRY_STAGE = "chemistry"
_LEADER_IN_OLD_LABEL = re.compile(r"\(leader (.+)\)$")  # results written before clusters had a leader_id column


def check_group_kind(by: str, loc: str = "by") -> str:
    if by not in GROUP_KINDS:
        raise InvalidInput(f"unknown grouping {by!r}; expected one of {GROUP_KINDS}", ("query", loc))
    return by


def chemistry_table(view: DatasetView) -> pd.DataFrame | None:
    """The chemistry stage's per-molecule table aligned with the view (None if not computed).

    Loads every column: only for a result whose chemistry table is one file. With per-shard tables
    (10M molecules: gigabytes of SMILES and scaffolds) the columns needed are read shard by shard
    (:func:`_group_table`).
    """
    return view.extra("chemistry_molecules", lambda: view.aligned_table(*CHEMISTRY_MOLECULES))


def _shard_tables(view: DatasetView) -> list[Path]:
    """The view's per-shard chemistry molecules tables, in row order (empty if it has none)."""
    return shard_table_paths(view.store.dir, CHEMISTRY_STAGE, "molecules")


def _group_table(view: DatasetView) -> pd.DataFrame | None:
    """The chemistry stage's group columns aligned with the view (None if not computed).

    Reads only these integer columns of the shards' tables (~80 MB per grouping
    at 10M): they hold the dataset's molecules in shard order, which is the view's row order.
    """
    paths = _shard_tables(view)
    if not paths or not view.has_table(*CHEMISTRY_MOLECULES):
        return chemistry_table(view)
    names = pq.read_schema(paths[0]).names
    columns = [c for c in (_group_column(names, by) for by in GROUP_KINDS) if c is not None]
    table = pd.concat([read_table(p, columns=columns).to_pandas() for p in paths], ignore_index=True)
    if len(table) != len(view):
        raise ValueError(f"the chemistry tables of {view.dataset_id!r} hold {len(table)} rows, not {len(view)}")
    return table


def formulas(view: DatasetView) -> np.ndarray:
    """(n,) Hill formula per molecule."""

    def build():
        chem = chemistry_table(view)
        if chem is not None and "formula" in chem.columns and chem["formula"].notna().all():
            return chem["formula"].astype(str).to_numpy(object)
        return hill_formulas(view.mols.atomic_numbers, view.mols.offsets)[view.rows].astype(object)

    return view.extra("formulas", build)


def _group_column(columns, by: str) -> str | None:
    for name in (f"{by}_group", f"{by}_id", f"group_{by}", by):
        if name in columns:
            return name
    return None


def _codes(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(codes as strings, the distinct strings); missing values and the stage's -1 ("in no group") become None.

    One str per distinct code, shared by its molecules: 8 bytes a molecule (a str each
    would cost ~60, 600 MB per grouping at 10M).
    """
    inverse, uniques = pd.factorize(values)  # missing values: -1
    text = pd.Series(uniques, dtype=values.dtype).astype(str).to_numpy(object)
    outside = np.asarray(pd.isna(uniques), bool)
    if pd.api.types.is_numeric_dtype(values):
        outside = outside | (np.asarray(uniques, dtype=np.float64) < 0)
    text[outside] = None
    return np.append(text, None).astype(object)[inverse], text  # -1 picks the appended None


class GroupCodes(dict):
    """{grouping: (n,) object array of codes} that knows its own size.

    Weighing each of 10M shared strings as if it were a copy would put a 10M view's group codes
    at ~1.5 GB, over the view budget (the view would be reloaded on every request); counting
    the distinct strings would take seconds per weighing.
    """

    def __init__(self, codes: dict[str, np.ndarray], size_bytes: int):
        super().__init__(codes)
        self.size_bytes = size_bytes

    def cache_nbytes(self) -> int:
        return self.size_bytes


def group_ids(view: DatasetView) -> dict[str, np.ndarray]:
    """Group code per molecule for each grouping the data has: {by: (n,) object array of str, None if in no group}."""

    def build():
        chem = _group_table(view)
        out, size = {}, 0
        for by in GROUP_KINDS:
            col = None if chem is None else _group_column(chem.columns, by)
            if col is not None:
                out[by], distinct = _codes(chem[col])
                size += out[by].nbytes + nbytes(distinct)
        if "formula" not in out:  # no chemistry stage: formula groups from the atoms, ions in none (as the stage)
            out["formula"] = np.where(np.asarray(view.n_atoms) > 1, formulas(view), None).astype(object)
            size += nbytes(out["formula"])
        return GroupCodes(out, size)

    return view.extra("group_ids", build)


def stage_groups_table(view: DatasetView, by: str) -> pd.DataFrame | None:
    """The chemistry stage's ``groups_<by>`` table (one row per group), if computed."""
    name = f"groups_{by}"
    if not view.has_table(CHEMISTRY_STAGE, name):
        return None
    return view.extra(name, lambda: view.store.table(CHEMISTRY_STAGE, name).to_pandas())


def _columns_of(view: DatasetView, wanted: set[str], columns: list[str]) -> dict[str, dict]:
    """{molecule id: {column: value}} of the chemistry stage's per-molecule table, for the ``wanted`` ids
    (an id the dataset does not hold is left out).

    With per-shard tables each id's row is found in the shard that holds it (the shards hold the dataset's
    molecules in row order); that shard's columns are read once and kept in the byte-bounded cache. Reading
    every shard for each molecule record cost 37 ms a request on QM9's sharded store.
    """
    paths = _shard_tables(view)
    if paths:
        starts = _shard_starts(view, paths)
        out = {}
        for mol_id in wanted:
            try:
                row = view.row_of(mol_id)
            except NotFoundError:
                continue
            k = int(np.searchsorted(starts, row, side="right")) - 1
            table = _shard_columns(paths[k], columns)
            record = {name: table.column(name)[row - int(starts[k])].as_py() for name in table.column_names}
            if str(record.pop("id")) != str(mol_id):
                raise ValueError(f"the chemistry tables of {view.dataset_id!r} are not in the dataset's row order")
            out[str(mol_id)] = record
        return out
    chem = chemistry_table(view)
    if chem is None:
        return {}
    keep = np.isin(view.ids.astype(str), list(wanted))
    rows = chem.loc[keep, [c for c in columns if c in chem.columns]].to_dict("records")
    return dict(zip(view.ids[keep].astype(str).tolist(), rows, strict=True))


def _shard_starts(view: DatasetView, paths: list[Path]) -> np.ndarray:
    """(n_shards + 1,) the first row of each per-shard chemistry table, and the total (from the files' footers)."""
    return view.extra(
        "chemistry_shard_starts", lambda: np.cumsum([0] + [pq.ParquetFile(p).metadata.num_rows for p in paths])
    )


def _shard_columns(path: Path, columns: list[str]) -> pa.Table:
    """The id and those of ``columns`` that one shard's chemistry table has, read once while the cache keeps it
    (keyed by the file's modification time: a recomputed stage writes new files)."""
    key = (str(path), path.stat().st_mtime_ns, tuple(columns))

    def build() -> pa.Table:
        have = [c for c in columns if c in pq.ParquetFile(path).schema_arrow.names]
        return read_table(path, columns=["id", *have])

    return shared_cache().get_or_build("chemistry_shard_columns", key, build, size=lambda t: t.nbytes)


def _smiles_of(view: DatasetView, wanted: set[str]) -> dict[str, str]:
    """{molecule id: SMILES of the graph the chemistry stage used} of the ``wanted`` ids (e.g. cluster leaders)."""
    if _shard_tables(view):
        found = _columns_of(view, wanted, ["smiles"])
        return {m: _text(r.get("smiles")) or "" for m, r in found.items()}
    chem = chemistry_table(view)
    if chem is not None and "smiles" in chem.columns:
        smiles = chem["smiles"].fillna("").astype(str).to_numpy()
    else:
        smiles = np.asarray(view.smiles).astype(str)
    return {m: s for m, s in zip(view.ids.tolist(), smiles.tolist(), strict=True) if m in wanted}


def _text(value) -> str | None:
    """A table's text cell, None where it is empty or missing."""
    return None if value is None or pd.isna(value) or value == "" else str(value)


def graph_smiles(view: DatasetView, mol_id: str) -> str:
    """SMILES of the graph the chemistry stage built for one molecule ("" without the stage or a graph)."""
    if not view.has_table(CHEMISTRY_STAGE, "molecules"):
        return ""
    return _smiles_of(view, {str(mol_id)}).get(str(mol_id), "")


def molecule_chemistry(view: DatasetView, mol_id: str) -> dict | None:
    """What the chemistry stage made of one molecule: ``{graph, smiles, source, no_graph_reason, message}``
    (``smiles`` the graph's, ``no_graph_reason`` a code of ``science.perception.NO_GRAPH_REASONS`` and
    ``message`` RDKit's words where it has no graph); None without the stage."""
    if not view.has_table(CHEMISTRY_STAGE, "molecules"):
        return None
    columns = ["smiles", "chemistry_ok", "chemistry_source", "chemistry_reason", "chemistry_error"]
    row = _columns_of(view, {str(mol_id)}, columns).get(str(mol_id))
    if row is None:
        return None
    graph = bool(row.get("chemistry_ok"))
    return {
        "graph": graph,
        "smiles": _text(row.get("smiles")) if graph else None,
        "source": _text(row.get("chemistry_source")),
        "no_graph_reason": None if graph else _text(row.get("chemistry_reason")),
        "message": None if graph else _text(row.get("chemistry_error")),
    }


def _leader_id(row: dict) -> str | None:
    """Id of the cluster's leader, or None if it is not known."""
    leader = row.get("leader_id")
    if leader is None:
        found = _LEADER_IN_OLD_LABEL.search(str(row.get("label", "")))
        leader = found.group(1) if found else None
    return None if leader is None else str(leader)


def _cluster_label(row: dict, smiles: dict[str, str]) -> str | None:
    """SMILES of the cluster's leader, or None if it is not known."""
    leader = _leader_id(row)
    return None if leader is None else smiles.get(leader) or None


def group_label_map(view: DatasetView, by: str) -> dict[str, str]:
    """{group code: label} for every group of ``by`` (a code without a better name is its own label)."""
    check_group_kind(by)

    def build() -> dict[str, str]:
        codes = group_ids(view).get(by)
        labels = {} if codes is None else {c: c for c in pd.unique(codes[~pd.isna(codes)])}
        table = stage_groups_table(view, by)
        if table is None or "group" not in table.columns:
            return labels
        rows = table.to_dict("records")
        smiles = _smiles_of(view, {_leader_id(row) for row in rows} - {None}) if by == "cluster" else {}
        for row in rows:
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
