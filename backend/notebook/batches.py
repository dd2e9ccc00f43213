"""Molecules handed to Python code in batches: the stored poses, and ``orientscope.rotated_copies``.

A batch is a :class:`Batch` of flat arrays. A stored set is read one shard at a time and a batch may span two
shards, so memory holds one shard and one batch's copies, never the set's copies. Copy ``k`` of a molecule is
rotated about its centroid by :func:`orientscope.science.copy_rotations.copy_rotations` of (purpose, seed,
``k``, the molecule's id): the same whichever molecules are taken, in whatever order or batch size.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from orientscope.core.dataset import MoleculeSet
from orientscope.core.settings import DEFAULT_SEED
from orientscope.notebook.datasets import Dataset
from orientscope.notebook.progress import checked_options
from orientscope.pipeline.export import MAX_COPIES, rotate_properties, rotation_record
from orientscope.science.copy_rotations import AUGMENT, check_purpose, copy_rotations
from orientscope.science.counter_rng import id_counters
from orientscope.science.rotations import rotate_molecules

DEFAULT_BATCH_SIZE = 1024


@dataclass(frozen=True)
class Batch:
    """What ``predict`` (and a training loop over :func:`rotated_copies`) receives: molecules in flat arrays.

    Attributes
    ----------
    numbers : (n_atoms,) int atomic numbers
    positions : (n_atoms, 3) float64 positions in ångström
    offsets : (n_molecules + 1,) int, molecule ``j`` of the batch owns atoms ``offsets[j]:offsets[j+1]``
    ids : (n_molecules,) str molecule ids
    index : (n_molecules,) int, the molecules' rows in the dataset (in the whole set, for a subset view)
    copy : None for the stored poses, else the rotated copy's number (0 … K-1)
    properties : DataFrame (n_molecules rows) of the molecules' properties, vector and tensor components
        rotated with the molecule; only from :func:`rotated_copies` (an audit's ``predict`` gets None)
    """

    numbers: np.ndarray
    positions: np.ndarray
    offsets: np.ndarray
    ids: np.ndarray
    index: np.ndarray
    copy: int | None
    properties: pd.DataFrame | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        where = "stored poses" if self.copy is None else f"copy {self.copy}"
        first = f", first id {str(self.ids[0])!r}" if len(self.ids) else ""
        return f"<orientscope.Batch of {len(self)} molecules ({where}{first})>"


def check_batch_size(batch_size) -> int:
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    return int(batch_size)


def stored_batches(
    parts: Iterable[tuple[MoleculeSet, np.ndarray]], batch_size: int, properties: bool = False
) -> Iterator[Batch]:
    """The stored poses of ``parts`` ((molecules, their rows) pairs) in batches of ``batch_size`` molecules,
    in order (the last one shorter); a batch may span two parts."""
    pieces, have = [], 0
    for mols, rows in parts:
        a = 0
        while a < mols.n_molecules:
            b = min(a + batch_size - have, mols.n_molecules)
            lo, hi = mols.offsets[a], mols.offsets[b]
            props = None
            if properties:  # a set without properties still gives each batch a table of its length
                has = len(mols.properties.columns)
                props = mols.properties.iloc[a:b] if has else pd.DataFrame(index=pd.RangeIndex(b - a))
            pieces.append((mols.atomic_numbers[lo:hi], mols.positions_angstrom[lo:hi], mols.n_atoms[a:b],
                           mols.ids[a:b], rows[a:b], props))  # fmt: skip
            have, a = have + b - a, b
            if have == batch_size:
                yield _join(pieces)
                pieces, have = [], 0
    if pieces:
        yield _join(pieces)


def _join(pieces: list[tuple]) -> Batch:
    """One batch of stored poses from consecutive (numbers, positions, atom counts, ids, rows, properties) pieces."""
    *arrays, props = zip(*pieces, strict=True)
    numbers, positions, counts, ids, rows = (np.concatenate(c) if len(pieces) > 1 else c[0] for c in arrays)
    table = None
    if props[0] is not None:
        table = pd.concat(props, ignore_index=True) if len(props) > 1 else props[0].reset_index(drop=True)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    return Batch(numbers, positions, offsets, ids, rows, None, table)


def rotated(batch: Batch, seed: int, copy: int, purpose: str, counters: np.ndarray | None = None) -> Batch:
    """Copy ``copy`` of ``batch``: each molecule (and its vector and tensor properties) rotated about its centroid.

    ``counters``: the batch's ``id_counters`` when the caller already has them (one hash per molecule, not
    one per copy).
    """
    counters = id_counters(batch.ids) if counters is None else counters
    turns = copy_rotations(counters, seed, copy, purpose)
    positions = rotate_molecules(batch.positions, batch.offsets, turns)
    props = batch.properties
    if props is not None and len(props.columns):
        props = rotate_properties(props, turns)
    return replace(batch, positions=positions, copy=copy, properties=props)


class Poses:
    """A re-iterable stream of :class:`Batch`: rotated copies of a set's molecules, or their stored poses.

    Each pass reads the set again, one shard and one batch at a time: for every batch of molecules, its
    copies 0 … K-1 in turn (or, with ``n_copies`` 0, the stored poses). ``len()`` is the number of poses.

    Attributes
    ----------
    dataset : the set (or subset view) the poses come from
    n_copies, seed, purpose, batch_size : as given to :func:`rotated_copies`
    rotations : the rule, its version, the purpose and the seed (what an export of the same copies records)
    """

    def __init__(self, dataset: Dataset, n_copies: int, seed: int, purpose: str, batch_size: int):
        self.dataset = dataset
        self.n_copies, self.seed, self.purpose, self.batch_size = n_copies, seed, purpose, batch_size
        self.rotations = rotation_record(purpose, seed) if n_copies else {"copies": "none: the stored poses"}

    @property
    def n_molecules(self) -> int:
        return self.dataset.n_molecules

    def __len__(self) -> int:
        return self.n_molecules * max(self.n_copies, 1)

    def __iter__(self) -> Iterator[Batch]:
        for batch in stored_batches(self.dataset.row_parts(), self.batch_size, properties=True):
            if not self.n_copies:
                yield batch
                continue
            counters = id_counters(batch.ids)
            for k in range(self.n_copies):
                yield rotated(batch, self.seed, k, self.purpose, counters)

    def to_arrays(self) -> dict:
        """Every pose at once (memory grows with the set and the copies): ``numbers`` (n_atoms,), ``positions``
        (n_atoms, 3), ``offsets`` (n_poses + 1,), ``ids`` (n_poses,), ``copy`` (n_poses,) int (-1 for a stored
        pose) and ``properties`` (a DataFrame, n_poses rows)."""
        batches = list(self)
        counts = np.concatenate([np.diff(b.offsets) for b in batches])
        return {
            "numbers": np.concatenate([b.numbers for b in batches]),
            "positions": np.concatenate([b.positions for b in batches]),
            "offsets": np.concatenate([[0], np.cumsum(counts)]),
            "ids": np.concatenate([b.ids for b in batches]),
            "copy": np.concatenate([np.full(len(b), -1 if b.copy is None else b.copy) for b in batches]),
            "properties": pd.concat([b.properties for b in batches], ignore_index=True),
        }

    def __repr__(self) -> str:
        what = f"{self.n_copies} rotated copies ({self.purpose}, seed {self.seed})" if self.n_copies else "stored poses"
        return f"<orientscope.Poses {what} of {self.n_molecules:,} molecules of {self.dataset.id!r}>"


@checked_options
def rotated_copies(
    dataset: Dataset,
    n_copies: int,
    seed: int = DEFAULT_SEED,
    ids=None,
    purpose: str = AUGMENT,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> Poses:
    """``n_copies`` rotated copies of each molecule of ``dataset`` (or of ``ids`` only), as batches; no file written.

    Iterate the result for :class:`Batch` objects with ``properties`` (vector and tensor components rotated as
    ``orientscope export`` rotates them). Copy ``k`` of a molecule is the pose ``orientscope export --mode random
    --copies K --purpose PURPOSE --seed SEED`` writes for it, whatever subset or order is exported.
    ``purpose`` ``augment`` (training data, the default) never gives a pose that ``orientscope.audit_model``
    (purpose ``audit``) scores. ``n_copies`` 0 gives the stored poses themselves.
    """
    if not isinstance(dataset, Dataset):
        raise TypeError(f"rotated_copies() takes an orientscope Dataset, not {type(dataset).__name__}")
    check_purpose(purpose)
    view = dataset if ids is None else dataset.subset(ids)
    return Poses(view, check_n_copies(n_copies), int(seed), purpose, check_batch_size(batch_size))


def check_n_copies(n_copies) -> int:
    """``n_copies`` as an int from 0 (the stored poses) to MAX_COPIES; ValueError otherwise."""
    if not 0 <= int(n_copies) <= MAX_COPIES:
        raise ValueError(f"n_copies must be between 0 and {MAX_COPIES}, got {n_copies}")
    return int(n_copies)
