"""Shared fixtures: a small real-QM9 store, built once per test session."""

from __future__ import annotations

import gc
import os
import sys
import threading
from pathlib import Path

import pytest

SMALL_QM9 = int(os.environ.get("ORIENTSCOPE_TEST_QM9", "400"))
# A served app's background thread (backend/server.py).
BACKGROUND_THREADS = ("orientscope-warm",)
BACKGROUND_JOIN_S = 600  # a bound for a busy machine: warming the small test store takes seconds


def pytest_addoption(parser):
    parser.addoption(
        "--reverse", action="store_true", help="run the tests in reverse order (no test may need another's leftovers)"
    )


@pytest.hookimpl(trylast=True)  # after pytest has grouped the tests by their shared fixtures
def pytest_collection_modifyitems(config, items):
    if config.getoption("--reverse"):
        items.reverse()


@pytest.fixture(autouse=True)
def process_state():
    """What a test changes in the pytest process is put back after it, so that tests pass alone and in any order.

    A served app's start-up warm-up (``create_app(warm=True)``) runs in a thread that ends with
    ``gc.freeze()``: the thread is waited for and the freeze undone. The switch interval a serving process
    sets (``tune_for_serving``) is put back; its malloc arena cap cannot be undone in a running process
    (glibc fixes the arena limit once it is used), so tests run the factory that sets it in a subprocess.
    """
    interval, frozen, before = sys.getswitchinterval(), gc.get_freeze_count(), set(threading.enumerate())
    yield
    for thread in set(threading.enumerate()) - before:
        if thread.name in BACKGROUND_THREADS:
            thread.join(timeout=BACKGROUND_JOIN_S)
            assert not thread.is_alive(), f"{thread.name} still running {BACKGROUND_JOIN_S} s after the test"
    if gc.get_freeze_count() > frozen:
        gc.unfreeze()
    sys.setswitchinterval(interval)


@pytest.fixture(scope="session")
def qm9_small(tmp_path_factory):
    """The first-stage QM9 subset (evenly spread, deterministic) as a MoleculeSet."""
    from orientscope.loaders.qm9 import load_qm9

    return load_qm9(limit=SMALL_QM9)


@pytest.fixture(scope="session")
def qm9_store(tmp_path_factory) -> Path:
    """A data dir with QM9 stored and every pipeline stage computed on a small subset.

    The subset is materialised as its own sharded dataset "qm9" so that reads need no
    parameters (its active result is the one computed here).
    """
    from orientscope.loaders.qm9 import load_qm9
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.store.shards import save_sharded

    data_dir = tmp_path_factory.mktemp("store")
    save_sharded(
        data_dir, "qm9", load_qm9(limit=SMALL_QM9), name="QM9", source="qm9pack subset", extra={"builtin": True}
    )
    precompute(data_dir, "qm9", make_params(seed=0))
    return data_dir


# A store written by OrientScope 0.x before the sharded layout (commit 1de8eca): dataset "old", the first
# 150 molecules of the 400-molecule QM9 subset, every stage computed with seed 0. Only `migrate` reads it.
OLD_LAYOUT_ARCHIVE = Path(__file__).parent / "data" / "old_layout_store.tar.gz"
OLD_LAYOUT_N = 150


@pytest.fixture(scope="session")
def old_layout_store(tmp_path_factory) -> Path:
    """A data dir holding dataset "old" in the single-folder layout; tests that change it work on a copy."""
    import tarfile

    data_dir = tmp_path_factory.mktemp("old-layout")
    with tarfile.open(OLD_LAYOUT_ARCHIVE) as archive:
        archive.extractall(data_dir, filter="data")
    return data_dir


@pytest.fixture(scope="session")
def sentence_grid(tmp_path_factory) -> dict:
    """The report fixtures every generated sentence is checked on (``tests/sentences.py``), by name."""
    from tests.sentences import build_grid

    return build_grid(tmp_path_factory.mktemp("sentence-grid"))


@pytest.fixture(scope="session")
def rings_store(tmp_path_factory) -> tuple[Path, str]:
    """(data dir, dataset id) of six-membered rings embedded from SMILES (tests.molecules.RINGS_SMILES): the
    scaffold groups C1CCCCC1 (6 molecules) and c1ccccc1 (4), every stage computed."""
    from orientscope.pipeline.ingest import generate_dataset
    from tests.molecules import RINGS_SMILES

    data_dir = tmp_path_factory.mktemp("rings") / "data"
    path = data_dir.parent / "rings.smi"
    path.write_text(RINGS_SMILES)
    return data_dir, generate_dataset(data_dir, path, "rings")["id"]
