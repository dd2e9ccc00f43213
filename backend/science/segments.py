"""Per-molecule reductions over flat atom arrays (no Python loop per molecule)."""

from __future__ import annotations

import numpy as np


def segment_sum(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sum of ``values`` over each segment ``offsets[i]:offsets[i+1]`` (non-empty)."""
    return np.add.reduceat(values, offsets[:-1], axis=0)


def segment_max(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    return np.maximum.reduceat(values, offsets[:-1], axis=0)


def owner_index(offsets: np.ndarray) -> np.ndarray:
    """(n_atoms_total,) segment index of every element."""
    return np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
