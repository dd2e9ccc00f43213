"""Molecules of a dataset: filtered pages, one molecule's full record, XYZ/SDF export."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from orientscope.loaders import registry
from orientscope.loaders.formats import MoleculeChemistry
from orientscope.loaders.json_records import record_fields
from orientscope.loaders.xyz import xyz_block
from orientscope.pipeline.shard_smarts import result_index, searchable_shards, sharded_result
from orientscope.science import substructure
from orientscope.science.chemistry import molecule_graph
from orientscope.science.frames import orientation_of, symmetry_kinds
from orientscope.science.perception import perceive_bonds
from orientscope.services import smarts_search
from orientscope.services.bytecache import shared_cache
from orientscope.services.cache import DatasetView, get_view
from orientscope.services.errors import InvalidInput, NotComputed
from orientscope.services.grouping import (
    GROUP_KINDS,
    check_group_kind,
    chemistry_table,
    formulas,
    graph_smiles,
    group_ids,
    group_label,
    group_rows,
    molecule_chemistry,
)

MAX_PAGE = 1000
DEFAULT_PAGE = 50
# The largest offset a JSON number carries exactly (JavaScript's Number.MAX_SAFE_INTEGER): a page echoes its
# offset, and a larger one would not encode.
MAX_OFFSET = 2**53 - 1
POSES = ("stored", "canonical")
EXPORT_FORMATS = registry.downloads()  # the formats with a one-molecule writer (loaders/registry.py)
SORT_KEYS = ("index", "id", "n_atoms", "formula", "classifier_score", "degenerate")
MAX_SMARTS_LENGTH = substructure.MAX_SMARTS_LENGTH
SMARTS_TIMEOUT_S = substructure.DEFAULT_TIMEOUT_S  # a pathological pattern cannot hold a request longer
SMARTS_BLOCK = substructure.BLOCK


def xyz_text(elements, positions_angstrom, comment: str = "", decimals: int = 8) -> str:
    """One molecule as XYZ text (``loaders.xyz.xyz_block``), for callers above the services, such as the 3D viewer.

    ``elements`` are symbols or atomic numbers, ``positions_angstrom`` is (n_atoms, 3) in Å.
    """
    return xyz_block(elements, positions_angstrom, comment, decimals=decimals)


def _clean(value: float | None) -> float | None:
    """JSON-safe float: NaN/inf become None."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


# ---------------------------------------------------------------- list
@dataclass(frozen=True)
class MoleculePage:
    total: int
    offset: int
    limit: int
    items: list[dict]
    complete: bool = True  # False if a SMARTS scan stopped at its time limit
    n_scanned: int | None = None  # molecules the SMARTS scan covered (None without smarts)


@dataclass(frozen=True)
class SmartsMatches:
    """Molecules of a view matching a SMARTS pattern.

    mask : (n,) bool in view row order; rows past ``n_scanned`` are False
    complete : False if the scan stopped at :data:`SMARTS_TIMEOUT_S`
    n_scanned : molecules scanned (in row order)
    """

    mask: np.ndarray
    complete: bool
    n_scanned: int


def _search_graphs(view: DatasetView) -> Iterable:
    """Per row, the molecular graph the chemistry stage uses (SMILES, or bonds perceived from 3D).

    Perceived graphs are RDKit molecules, made one at a time as the index reads them.
    """
    chem = chemistry_table(view)
    if chem is not None and "smiles" in chem.columns and chem["smiles"].notna().all():
        return chem["smiles"].astype(str).tolist()  # the stage's graphs, perceived ones written as SMILES
    return (molecule_graph(str(view.smiles[i] or ""), *view.atoms(i))[0] for i in range(len(view)))


def graphs_from_3d(view: DatasetView) -> bool:
    """True when the set carries no SMILES, so its graphs (and SMARTS matches) use bonds perceived from 3D."""
    return view.extra("graphs_from_3d", lambda: not any(str(s or "") for s in view.smiles))


def smarts_index(view: DatasetView) -> substructure.SubstructureIndex:
    """The view's SMARTS index, built once per view: from the search SMILES kept with the result when its
    chemistry stage ran per shard (``pipeline.shard_smarts``: read in a fraction of a second), else from the
    graphs the chemistry stage uses. The server's warm-up builds it, so that no search waits for it."""

    def build() -> substructure.SubstructureIndex:
        if sharded_result(view.store.dir):
            return result_index(view.store.dir)
        return substructure.SubstructureIndex(_search_graphs(view))

    return view.extra("smarts_index", build)


def warm_search(data_dir: Path, dataset_id: str) -> bool:
    """Build the dataset's SMARTS index now (a server's warm-up), so that no search waits for it; True if built.

    Only where it is cheap to come by: a result whose chemistry stage ran per shard (its kept search SMILES,
    or its chemistry table's graphs). Sets searched by background jobs, and sets whose graphs would have to
    be perceived from 3D first, are left to their first search.
    """
    view = get_view(data_dir, dataset_id)
    if smarts_search.needs_job(view) or not sharded_result(view.store.dir):
        return False
    smarts_index(view)
    return True


def match_smarts(view: DatasetView, smarts: str, start: bool = False) -> SmartsMatches:
    """Molecules of ``view`` containing ``smarts`` (complete results are cached per pattern).

    A sharded set above ``ORIENTSCOPE_SMARTS_JOB_ABOVE`` molecules answers from its
    background search's kept result, else raises :class:`SearchPending` naming the
    job (``start`` queues it if there is none). Raises :class:`InvalidInput` (a
    ``ValueError``) naming the problem if the pattern is invalid or longer than
    :data:`MAX_SMARTS_LENGTH`.
    """
    # Keyed by the view's identity and freshness: a reloaded or recomputed result misses, its old masks age out.
    key = (str(view.data_dir), view.dataset_id, view.result_key, view.signature, smarts)
    hit = shared_cache().get("smarts_mask", key)
    if hit is not None:
        return hit
    try:
        substructure.parse_smarts(smarts)  # before building the index: a typo answers at once
    except ValueError as exc:
        raise InvalidInput(str(exc), ("query", "smarts")) from None
    if smarts_search.needs_job(view):
        kept = smarts_search.stored_or_pending(view, smarts, start=start)
        matches = SmartsMatches(kept.mask, kept.complete, kept.n_scanned)
        shared_cache().put("smarts_mask", key, matches)  # a kept result is final, complete or not
        return matches
    result = smarts_index(view).search(smarts, timeout_s=SMARTS_TIMEOUT_S, block=SMARTS_BLOCK)
    mask = np.zeros(len(view), dtype=bool)
    mask[result.indices] = True
    matches = SmartsMatches(mask, result.complete, result.n_scanned)
    if result.complete:  # a partial scan may finish next time
        shared_cache().put("smarts_mask", key, matches)
    return matches


def search_job(view: DatasetView, smarts: str) -> dict | None:
    """The background job searching ``view`` for ``smarts`` (started if there is none), or None when the
    set is searched while a request waits (InvalidInput for a bad pattern)."""
    pattern = smarts_search.canonical(smarts)
    return smarts_search.submit(view, pattern) if smarts_search.needs_job(view) else None


def submit_search(data_dir: Path, dataset_id: str, smarts: str) -> dict:
    """Start (or find) the search of ``smarts`` over a dataset; its job record, with ``search_id``.

    A sharded set is searched by a background job on the engine, whatever its size.
    Another set is searched now, as its reads do (10 s), and kept as a finished job,
    so every client follows one protocol.
    """
    view = get_view(data_dir, dataset_id)
    pattern = smarts_search.canonical(smarts, ("body", "smarts"))
    if searchable_shards(view.data_dir, view.dataset_id, view.store.dir):
        return smarts_search.submit(view, pattern)
    found = match_smarts(view, pattern)
    return smarts_search.record(view, pattern, found.mask, found.complete, found.n_scanned)


def _sort_order(view: DatasetView, sort: str, rows: np.ndarray) -> np.ndarray:
    key = sort.lstrip("-+")
    descending = sort.startswith("-")
    allowed = SORT_KEYS + tuple(view.property_names)
    if key not in allowed:
        raise InvalidInput(
            f"unknown sort key {sort!r}; expected one of {allowed}, optionally prefixed by '-'", ("query", "sort")
        )
    if key == "index":
        values = rows
    elif key == "id":
        values = view.ids[rows]
        numeric = np.char.isdigit(values.astype(str))
        if numeric.all():
            values = values.astype(np.int64)
    elif key == "n_atoms":
        values = view.n_atoms[rows]
    elif key == "formula":
        values = formulas(view)[rows].astype(str)
    elif key == "classifier_score":
        values = np.nan_to_num(view.scores[rows], nan=-np.inf)
    elif key == "degenerate":
        values = view.degenerate[rows]
    else:
        values = np.nan_to_num(view.property_values[rows, view.property_names.index(key)], nan=-np.inf)
    ranks = np.unique(values, return_inverse=True)[1].reshape(-1)
    # Stable in both directions: ties keep the stored order.
    order = rows[np.argsort(-ranks if descending else ranks, kind="stable")]
    return order.astype(np.int32) if len(order) < 2**31 else order


def molecule_item(view: DatasetView, i: int) -> dict:
    """The short record of result row ``i`` used in lists."""
    codes = {by: view.value_at(ids, i) for by, ids in group_ids(view).items()}
    return {
        "id": str(view.cell("ids", i)),
        "smiles": str(view.cell("smiles", i)) or None,
        "formula": str(view.value_at(formulas(view), i)),
        "n_atoms": int(view.cell("n_atoms", i)),
        "classifier_score": _clean(view.cell("scores", i)),
        "degenerate": bool(view.cell("degenerate", i)),
        "groups": {by: (None if code is None else str(code)) for by, code in codes.items()},
        "group_labels": {by: group_label(view, by, code) for by, code in codes.items()},
    }


def list_molecules(
    data_dir: Path,
    dataset_id: str,
    offset: int = 0,
    limit: int = DEFAULT_PAGE,
    group_by: str | None = None,
    group: str | None = None,
    smarts: str | None = None,
    sort: str = "index",
) -> MoleculePage:
    """One page of molecules, after filtering by group and SMARTS and sorting.

    ``limit`` is capped at :data:`MAX_PAGE`; ``group`` needs ``group_by`` and is a group
    code or its label (``C7H10O2``, a scaffold or cluster-representative SMILES), or the
    grouping's name for molecules in no group (``unclustered``).
    """
    if offset < 0:
        raise InvalidInput(f"offset must be >= 0, got {offset}", ("query", "offset"))
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(f"limit must be between 1 and {MAX_PAGE}, got {limit}", ("query", "limit"))
    view = get_view(data_dir, dataset_id)
    keep = None  # (n,) bool of the rows the filters keep; None: every row
    if group is not None and group_by is None:
        raise InvalidInput(f"group needs group_by (one of {GROUP_KINDS})", ("query", "group_by"))
    if group_by is not None:
        check_group_kind(group_by, "group_by")
        ids = group_ids(view).get(group_by)
        if ids is None:
            raise NotComputed(
                f"dataset {dataset_id!r} has no {group_by} groups: the chemistry stage has not been computed"
            )
        if group is not None:
            keep = np.asarray(group_rows(view, group_by, str(group)), dtype=bool)
    complete, n_scanned = True, None
    if smarts:
        matches = match_smarts(view, smarts)
        keep = matches.mask if keep is None else keep & matches.mask
        complete, n_scanned = matches.complete, matches.n_scanned
    rows = None if keep is None else np.flatnonzero(keep)
    n = len(view)
    if rows is None and sort.lstrip("-+") == "index":  # the stored order or its reverse: no order array to keep
        page = np.arange(offset, max(offset, min(offset + limit, n)))
        total, page = n, (n - 1 - page if sort.startswith("-") else page)
    else:
        if rows is None or len(rows) == n:
            # The whole set: its order is kept (4-8 bytes a molecule, seconds to sort at 10M), and no
            # per-request row numbers are made (80 MB at 10M: they made sorted pages take seconds under load).
            rows = view.extra(f"sort_order:{sort}", lambda: _sort_order(view, sort, np.arange(n)))
        else:
            rows = _sort_order(view, sort, rows)
        total, page = len(rows), rows[offset : offset + limit]
    items = [molecule_item(view, int(i)) for i in page]
    return MoleculePage(total, offset, limit, items, complete, n_scanned)


# ---------------------------------------------------------------- detail
def orientation_record(reason: str) -> dict:
    """``{class, defined_axis, symmetry}`` of one molecule from its frame's degeneracy codes (``science.frames``)."""
    symmetry = symmetry_kinds(np.array([reason]))
    classes, axes = orientation_of(symmetry)
    return {"class": str(classes[0]), "defined_axis": int(axes[0]) or None, "symmetry": str(symmetry[0]) or None}


def molecule_detail(data_dir: Path, dataset_id: str, mol_id: str) -> dict:
    """Everything stored about one molecule: atoms in both poses, its frame, score, groups and properties."""
    view = get_view(data_dir, dataset_id)
    i = view.row_of(mol_id)
    z, pos = view.atoms(i)
    lonlat = view.cell("lonlat", i).tolist()
    values = view.cell("property_values", i).tolist()
    record = molecule_item(view, i)
    # elements, positions and properties as the JSON loader reads them back: the record uploads as it was
    record.update(record_fields(z, pos, dict(zip(view.property_names, values, strict=True)), view.property_units))
    record.update(
        {
            "canonical_positions": view.canonical_positions(i, pos).tolist(),
            "rotation": view.cell("rotations", i).tolist(),
            "quaternion": view.cell("quaternions", i).tolist(),
            "eigenvalues": view.cell("eigenvalues", i).tolist(),
            "degenerate_reason": str(view.cell("reasons", i)) or None,
            "orientation": orientation_record(str(view.cell("reasons", i))),
            "axes_lonlat": [{"axis": a + 1, "lon_deg": lon, "lat_deg": lat} for a, (lon, lat) in enumerate(lonlat)],
            "chemistry": molecule_chemistry(view, str(view.cell("ids", i))),
            "result_key": view.result_key,
        }
    )
    return record


# ---------------------------------------------------------------- export
def _check_export(fmt: str, pose: str) -> None:
    if fmt not in EXPORT_FORMATS:
        raise InvalidInput(f"unknown format {fmt!r}; expected one of {EXPORT_FORMATS}", ("query", "format"))
    if pose not in POSES:
        raise InvalidInput(f"unknown pose {pose!r}; expected one of {POSES}", ("query", "pose"))


def export_molecule(
    data_dir: Path, dataset_id: str, mol_id: str, fmt: str = EXPORT_FORMATS[0], pose: str = "stored"
) -> tuple[str, str]:
    """(file text, file name) of one molecule in a download format (:data:`EXPORT_FORMATS`: XYZ, SDF) in the
    stored or canonical pose.

    Each carries the id, SMILES and properties (XYZ as ``key=value`` pairs on the comment line, SDF as the
    title and SD fields) and the tags ``dataset``, ``pose`` and ``units``, so the file uploads back as it was.
    """
    _check_export(fmt, pose)
    writer = registry.get(fmt)
    view = get_view(data_dir, dataset_id)
    i = view.row_of(mol_id)
    z, pos = view.atoms(i)
    if pose == "canonical":
        pos = view.canonical_positions(i, pos)
    mol_id = str(view.cell("ids", i))
    # Any id in the file, but only characters every browser takes in a file name (the header is latin-1).
    filename = re.sub(r"[^A-Za-z0-9._\-]+", "_", f"{dataset_id}_{mol_id}_{pose}") + writer.suffix
    smiles = str(view.cell("smiles", i)) or None
    props = dict(zip(view.property_names, view.cell("property_values", i).tolist(), strict=True))
    # The server's own tags, read back as metadata (loaders/comment_line.py): the file re-uploads as it was.
    tags = [("dataset", dataset_id), ("pose", pose), ("units", "angstrom")]
    charge = _charge(view, i)
    chemistry = MoleculeChemistry(
        charge, lambda: graph_smiles(view, mol_id), lambda a, p: perceive_bonds(a, p, charge).mol
    )
    return writer.write_molecule(z, pos, mol_id, smiles, props, tags, chemistry), filename


def _charge(view: DatasetView, i: int) -> float:
    """Total charge of row ``i`` as the file gave it (NaN if unknown, or for a view that holds no molecules)."""
    return float(view.cell("charges", i))
