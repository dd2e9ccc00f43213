"""Hostile inputs for the fuzz suite: mutations of valid seed files and the checks every parser must pass.

A parser fed any byte string may only succeed (with a result inside the
limits) or raise one of our documented errors with a message; it must not
raise anything else, and it must finish within a hard time bound.
"""

from __future__ import annotations

import re
import signal
import tracemalloc
from contextlib import contextmanager

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from orientscope.core.dataset import from_molecules
from orientscope.core.errors import OrientScopeError
from orientscope.core.limits import MIB, Limits
from tests.molecules import CO2, METHANE, WATER, asymmetric, benzene

# 1000 generated cases per parser, reproducible in CI (derandomize), no shrinking database on disk.
FUZZ = settings(
    max_examples=1000,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
HANG_S = 10.0  # no single case may take longer (a hang, not a speed target)
# Python and numpy allocations (tracemalloc) of a single case: a file is at most 2 MiB (LIMITS), so a case
# that needs more has been talked into allocating what its file only claims to hold.
CASE_MEMORY_MB = 64

# Small limits so that a "huge count" is refused by a check, never by running out of memory.
LIMITS = Limits(
    max_upload_bytes=2 * MIB,
    max_molecules=500,
    max_atoms_per_molecule=200,
    max_total_atoms=20_000,
    max_archive_members=50,
    max_archive_bytes=8 * MIB,
)

HOSTILE_NUMBERS = [
    "nan", "NaN", "inf", "-inf", "1e308", "-1e309", "1e-320", "-1", "0", "-0",
    "2147483648", "9223372036854775808", "99999999999999999999999", "1.5*^400", "0x10", "1_000",
]  # fmt: skip
HOSTILE_CHUNKS = [
    b"\x00", b"\xff\xfe", b"\xc3\x28", b"\r", b"\n" * 3, b"$$$$\n", b"M  END\n", b"=", b'"', b"'",
    b"(" * 300, b"[" * 300, b"{" * 300, b'Properties="' * 50, b"\t" * 40, "\u202e\u00e9".encode(),
    b"999999999999\n", b"-5\n", b"V3000", b"PK\x03\x04", b"SQLite format 3\x00", b"\x93NUMPY",
]  # fmt: skip
_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


class Hang(Exception):
    """A case ran past HANG_S."""


@contextmanager
def bounded(seconds: float = HANG_S):
    """Fail the case (raise Hang) if the block runs longer than ``seconds`` (SIGALRM; main thread)."""

    def on_alarm(_signum, _frame):
        raise Hang(f"a single fuzz case took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def measured(call) -> tuple[object, float]:
    """Run ``call`` under the hang bound: (its result, or the documented error it raised; the peak MB of Python
    and numpy allocations meanwhile). Any other exception escapes.

    The peak is this call's own (tracemalloc), not the process's: ``ru_maxrss`` only ever grows, so one
    case's allocation would hide every later case's. Allocations inside C libraries (RDKit, SQLite) are not
    traced; the loaders' checks run before any array of a claimed size is made.
    """
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        outcome = _documented(call)
        return outcome, (tracemalloc.get_traced_memory()[1] - before) / MIB
    finally:
        if started:
            tracemalloc.stop()


def seed_set():
    """Five molecules with ids, SMILES and a property: what every writer gets to produce seed files."""
    import pandas as pd

    mols = [WATER, CO2, METHANE, benzene(), asymmetric(seed=3)]
    return from_molecules(
        mols,
        ids=["water", "co2", "methane", "benzene", "blob"],
        smiles=["O", "O=C=O", "C", "c1ccccc1", ""],
        properties=pd.DataFrame({"energy": [-1.5, 0.0, 2.25, 3.0, 4.5]}),
    )


def _mutate_once(data: bytes, draw) -> bytes:
    n = len(data)
    kind = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "repeat", "number", "junk"]))
    pos = draw(st.integers(0, max(n, 1)))
    if kind == "truncate":
        return data[:pos]
    if kind == "flip" and n:
        i = min(pos, n - 1)
        return data[:i] + bytes([data[i] ^ draw(st.integers(1, 255))]) + data[i + 1 :]
    if kind == "insert":
        return data[:pos] + draw(st.sampled_from(HOSTILE_CHUNKS)) + data[pos:]
    if kind == "delete":
        return data[:pos] + data[pos + draw(st.integers(1, 64)) :]
    if kind == "repeat":
        chunk = data[pos : pos + draw(st.integers(1, 200))]
        return data[:pos] + chunk * draw(st.integers(2, 20)) + data[pos:]
    if kind == "number":
        numbers = list(_NUMBER.finditer(data))
        if numbers:
            m = numbers[draw(st.integers(0, len(numbers) - 1))]
            return data[: m.start()] + draw(st.sampled_from(HOSTILE_NUMBERS)).encode() + data[m.end() :]
        return data
    return data[:pos] + draw(st.binary(min_size=1, max_size=64)) + data[pos:]


@st.composite
def mutated(draw, seeds: list[bytes]) -> bytes:
    """A seed file with one to four mutations (or, sometimes, pure junk)."""
    if draw(st.integers(0, 19)) == 0:
        return draw(st.binary(max_size=512))
    data = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        data = _mutate_once(data, draw)
    return data


def check_loaded(loaded) -> None:
    """A successful load is a valid molecule set inside the limits."""
    mols = loaded.mols
    assert 1 <= mols.n_molecules <= LIMITS.max_molecules
    assert len(mols.atomic_numbers) <= LIMITS.max_total_atoms
    assert int(np.diff(mols.offsets).max()) <= LIMITS.max_atoms_per_molecule
    assert np.isfinite(mols.positions_angstrom).all()
    assert len(set(mols.ids)) == mols.n_molecules


def _documented(call) -> object:
    """Run ``call`` under the hang bound: its result, or the documented error (with a message) it raised."""
    with bounded():
        try:
            return call()
        except OrientScopeError as err:
            assert str(err).strip(), f"{type(err).__name__} without a message"
            return err


def expect_documented(call) -> object | None:
    """Run ``call`` under the hang bound; only our errors (with a message) may escape. Its result or None."""
    outcome = _documented(call)
    return None if isinstance(outcome, OrientScopeError) else outcome
