"""Shared fixtures: a small real-QM9 store, built once per test session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SMALL_QM9 = int(os.environ.get("ORIENTSCOPE_TEST_QM9", "400"))


@pytest.fixture(scope="session")
def qm9_small(tmp_path_factory):
    """The first-stage QM9 subset (evenly spread, deterministic) as a MoleculeSet."""
    from orientscope.loaders.qm9 import load_qm9

    return load_qm9(limit=SMALL_QM9)


@pytest.fixture(scope="session")
def qm9_store(tmp_path_factory) -> Path:
    """A data dir with QM9 stored and every pipeline stage computed on a small subset.

    The subset is materialised as its own dataset "qm9" so that reads need no
    parameters (its active result is the one computed here).
    """
    from orientscope.loaders.qm9 import load_qm9
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.store.datasets import save_dataset

    data_dir = tmp_path_factory.mktemp("store")
    save_dataset(
        data_dir, "qm9", load_qm9(limit=SMALL_QM9), name="QM9", source="qm9pack subset", extra={"builtin": True}
    )
    precompute(data_dir, "qm9", make_params(seed=0))
    return data_dir


OLD_LAYOUT_N = 150


@pytest.fixture(scope="session")
def old_layout_store(tmp_path_factory, qm9_small) -> Path:
    """A data dir with dataset "old" in the single-folder layout (150 QM9 molecules, every stage, seed 0).

    Built by the project's own writers of that layout (``save_dataset`` and the in-memory
    pipeline); tests that change it work on a copy.
    """
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.store.datasets import save_dataset

    data_dir = tmp_path_factory.mktemp("old-layout")
    save_dataset(data_dir, "old", qm9_small.subset(range(OLD_LAYOUT_N)), name="Old", source="qm9pack subset")
    precompute(data_dir, "old", make_params(seed=0))
    return data_dir
