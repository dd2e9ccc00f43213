"""Nearest molecules in pose (geodesic angle between frames) or in chemistry (Tanimoto)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from orientscope.science.clustering import ShardedTanimotoScan, TanimotoIndex, words_from_bytes
from orientscope.science.rotations import chord_to_angle
from orientscope.science.so3_stats import nearest_orientations, orientation_points
from orientscope.services.cache import CHEMISTRY_FINGERPRINTS, DatasetView, get_view
from orientscope.services.errors import InvalidInput, NotComputed
from orientscope.store.columns import fingerprint_counts, fingerprint_shards, release_pages
from orientscope.store.shards import shard_table_paths

KINDS = ("pose", "chemistry")
MAX_K = 100
# Threads per chemistry-neighbour scan of a large set: the machine's cores (the scan releases the GIL).
SCAN_THREADS = max(1, min(len(os.sched_getaffinity(0)), 8))


def _pose_tree(view: DatasetView) -> cKDTree:
    # One point per molecule, its quaternion with w >= 0 (:func:`orientation_points`): stored so, the
    # tree keeps the view's float64 array itself (cKDTree copies only other dtypes: a float32 copy
    # cost 320 MB at 10M), which for the view is a memory map.
    return view.extra("pose_tree", lambda: cKDTree(orientation_points(view.quaternions), balanced_tree=False))


def pose_neighbors(view: DatasetView, i: int, k: int) -> list[tuple[int, float]]:
    """(row, angle in degrees) of the k molecules whose frames are closest to row ``i``'s (q and -q one
    rotation; equally near ones in row order)."""
    k = min(k, len(view) - 1)
    if k < 1:
        return []
    qi = np.asarray(view.cell("quaternions", i), dtype=np.float64)
    chord, rows = nearest_orientations(_pose_tree(view), qi, k, exclude=np.array([i]), workers=1)
    return [(int(r), float(np.degrees(chord_to_angle(c)))) for r, c in zip(rows[0], chord[0], strict=True)]


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
    return {"id": str(view.cell("ids", i)), "by": by, "metric": metric, "k": k, "items": items}
