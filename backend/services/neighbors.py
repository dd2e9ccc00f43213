"""Nearest molecules in pose (geodesic angle between frames) or in chemistry (Tanimoto).

Only molecules with a full frame have a pose to be near (``science.frames``): a single atom or a spherical
top has none, and a linear molecule or symmetric top only an axis, so their stored frames (the identity for
every ion) would sit at 0° from each other. They are never pose neighbours and have none themselves.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from orientscope.science.clustering import ShardedTanimotoScan, TanimotoIndex, words_from_bytes
from orientscope.science.frames import orientation_of, symmetry_kinds
from orientscope.science.rotations import chord_to_angle
from orientscope.science.so3_stats import nearest_orientations, orientation_points
from orientscope.services.cache import CHEMISTRY_FINGERPRINTS, DatasetView, get_view
from orientscope.services.errors import InvalidInput, NotComputed
from orientscope.store.columns import fingerprint_counts, fingerprint_shards, release_pages
from orientscope.store.shards import shard_table_paths

KINDS = ("pose", "chemistry")
NO_POSE = "no full frame (a single atom, or a symmetric, spherical or linear molecule): no pose to be near"
MAX_K = 100
# Threads per chemistry-neighbour scan of a large set: the machine's cores (the scan releases the GIL).
SCAN_THREADS = max(1, min(len(os.sched_getaffinity(0)), 8))


# Up to this many molecules without a full frame, the pose tree holds every row (the view's quaternions
# themselves, no copy: 320 MB at 10M) and a search asks it for that many more neighbours to skip them.
SKIPPED_IN_TREE_MAX = 4096


def posed_mask(view: DatasetView) -> np.ndarray:
    """(n,) bool: the rows whose frame is a full SO(3) pose (from the few distinct degeneracy labels)."""

    def build() -> np.ndarray:
        labels = np.asarray(view.reasons.labels, dtype=str)
        full = orientation_of(symmetry_kinds(labels))[0] == "full"
        return full[np.asarray(view.reasons.codes)]

    return view.extra("posed_mask", build)


def _pose_tree(view: DatasetView) -> tuple[cKDTree, np.ndarray | None]:
    """The pose tree and the view row of each of its points (None: the tree holds every row, in order)."""

    def build():
        posed = posed_mask(view)
        if len(posed) - int(posed.sum()) <= SKIPPED_IN_TREE_MAX:
            # One point per molecule, its quaternion with w >= 0 (:func:`orientation_points`): stored so, the
            # tree keeps the view's float64 array itself (cKDTree copies only other dtypes), a memory map.
            return cKDTree(orientation_points(view.quaternions), balanced_tree=False), None
        rows = np.flatnonzero(posed)
        return cKDTree(orientation_points(view.quaternions[rows]), balanced_tree=False), rows

    return view.extra("pose_tree", build)


def pose_neighbors(view: DatasetView, i: int, k: int) -> list[tuple[int, float]]:
    """(row, angle in degrees) of the k molecules with a full frame whose frames are closest to row ``i``'s
    (q and -q one rotation; equally near ones in row order); none if row ``i`` has no full frame."""
    posed = posed_mask(view)
    if not posed[i]:
        return []
    tree, rows_of = _pose_tree(view)
    n_skipped = len(posed) - int(posed.sum()) if rows_of is None else 0
    at = i if rows_of is None else int(np.searchsorted(rows_of, i))
    k_asked = min(k + n_skipped, tree.n - 1)
    if k_asked < 1:
        return []
    qi = np.asarray(view.cell("quaternions", i), dtype=np.float64)
    chord, found = nearest_orientations(tree, qi, k_asked, exclude=np.array([at]), workers=1)
    rows = found[0] if rows_of is None else rows_of[found[0]]
    keep = posed[rows]
    return [
        (int(r), float(np.degrees(chord_to_angle(c)))) for r, c in zip(rows[keep][:k], chord[0][keep][:k], strict=True)
    ]


def _fingerprint_bytes(view: DatasetView) -> np.ndarray | None:
    """(n, n_bytes) uint8 packed fingerprints aligned with the view (None if the chemistry stage is absent)."""
    df = view.aligned_table(*CHEMISTRY_FINGERPRINTS)
    if df is None:
        return None
    cols = [c for c in df.columns if c != "id"]
    if len(cols) != 1:
        values = df[cols].fillna(0)
        if all(pd.api.types.is_bool_dtype(values[c]) for c in cols):  # one column per bit
            return np.packbits(values.to_numpy(bool), axis=1)
        # packed 64-bit words (fp00, fp01, ...); bit order does not matter for Tanimoto
        return np.ascontiguousarray(values.to_numpy(np.uint64)).view(np.uint8)
    values = list(df[cols[0]])
    first = next((v for v in values if v is not None), b"")
    if isinstance(first, bytes | bytearray):  # already packed bits
        width = len(first)
        return np.stack([np.frombuffer(v, np.uint8) if v is not None else np.zeros(width, np.uint8) for v in values])
    width = len(first)
    return np.packbits(
        np.stack([np.asarray(v if v is not None else np.zeros(width), dtype=bool) for v in values]), axis=1
    )


def _tanimoto_index(view: DatasetView) -> TanimotoIndex | ShardedTanimotoScan:
    """The view's Tanimoto index (NotComputed if the chemistry stage is absent).

    Only the index is kept: it holds the packed words, so a second copy of the
    fingerprints would only double the memory (~33 MB for QM9).
    """

    def build():
        # Scan the shards' memory-mapped fingerprints, holding only bit counts. A result's shards are the
        # dataset's (a limit run's, its subset's): as many as its frames tables.
        n_shards = len(shard_table_paths(view.store.dir, "frames", "original"))
        shards = fingerprint_shards(view.store.dir, n_shards) if n_shards else None
        if shards is not None:
            counts = fingerprint_counts(view.store.dir, n_shards)  # else counted here: reads every fingerprint
            return ShardedTanimotoScan(shards, counts, after_scan=release_pages, n_threads=SCAN_THREADS)
        fps = _fingerprint_bytes(view)  # a result whose fingerprints are one table
        return None if fps is None else TanimotoIndex(words_from_bytes(fps))

    index = view.extra("tanimoto_index", build)
    if index is None:
        raise NotComputed(f"dataset {view.dataset_id!r} has no fingerprints: the chemistry stage has not been computed")
    return index


def chemistry_neighbors(view: DatasetView, i: int, k: int) -> list[tuple[int, float]]:
    """(row, Tanimoto similarity) of the k molecules most similar to row ``i``, leaving out those sharing
    no fingerprint bit with it (similarity 0: unrelated, not near)."""
    rows, sims = _tanimoto_index(view).most_similar(i, k)
    return [(int(j), float(s)) for j, s in zip(rows, sims, strict=True) if s > 0]


def neighbors(data_dir: Path, dataset_id: str, mol_id: str, by: str = "pose", k: int = 10) -> dict:
    """Nearest molecules to ``mol_id``: by pose (``angle_deg``) or chemistry (``tanimoto``)."""
    if by not in KINDS:
        raise InvalidInput(f"unknown neighbour kind {by!r}; expected one of {KINDS}", ("query", "by"))
    if not 1 <= k <= MAX_K:
        raise InvalidInput(f"k must be between 1 and {MAX_K}, got {k}", ("query", "k"))
    view = get_view(data_dir, dataset_id)
    i = view.row_of(mol_id)
    if by == "pose":
        pairs = pose_neighbors(view, i, k)
        metric = "angle_deg"
    else:
        pairs = chemistry_neighbors(view, i, k)
        metric = "tanimoto"
    items = [
        {
            "id": str(view.cell("ids", j)),
            "smiles": str(view.cell("smiles", j)) or None,
            "degenerate": bool(view.cell("degenerate", j)),
            "angle_deg": value if by == "pose" else None,
            "tanimoto": value if by == "chemistry" else None,
        }
        for j, value in pairs
    ]
    out = {"id": str(view.cell("ids", i)), "by": by, "metric": metric, "k": k, "items": items, "note": None}
    if by == "pose" and not posed_mask(view)[i]:
        out["note"] = NO_POSE
    return out
