"""Property-based fuzzing of every file parser (XYZ, extxyz, SDF, ASE db, NPZ) with mutated seed files.

1000 generated cases per parser: valid files written by our own writers, then
truncated, byte-flipped, spliced with junk, with numbers replaced by NaN, inf
and huge counts, and deep bracket nesting. Each case must load into a valid set
inside the limits or fail with a documented error, within a hard time bound and
with its own allocations bounded (measured per case). Known attacks each state
what must happen to them: the set that loads, or the error that refuses it.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orientscope.core.errors import DatasetError, OrientScopeError
from orientscope.core.limits import LimitExceeded
from orientscope.loaders.asedb import write_asedb
from orientscope.loaders.detect import load_path
from orientscope.loaders.extxyz import write_extxyz
from orientscope.loaders.npz import write_npz
from orientscope.loaders.sdf import write_sdf
from orientscope.loaders.xyz import write_xyz
from tests.fuzz.hostile import CASE_MEMORY_MB, FUZZ, LIMITS, check_loaded, measured, mutated

EXTENSIONS = {"xyz": ".xyz", "extxyz": ".extxyz", "sdf": ".sdf", "asedb": ".db", "npz": ".npz"}


def _sdf_v3000() -> bytes:
    from rdkit import Chem
    from rdkit.Chem import AllChem

    mol = Chem.AddHs(Chem.MolFromSmiles("CC(=O)O"))
    AllChem.EmbedMolecule(mol, randomSeed=1)
    mol.SetProp("_Name", "acetic")
    mol.SetProp("gap", "0.25")
    buf = io.StringIO()
    with Chem.SDWriter(buf) as w:
        w.SetForceV3000(True)
        w.write(mol)
    return buf.getvalue().encode()


def _npy(descr: str, shape: str, payload: bytes = b"") -> bytes:
    """A .npy member whose header declares any dtype and shape, whatever the payload holds."""
    header = f"{{'descr': {descr!r}, 'fortran_order': False, 'shape': {shape}, }}".encode().ljust(117) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + payload


def _npz(**members: bytes) -> bytes:
    base = {
        "z": _npy("<i8", "(3,)", np.array([8, 1, 1]).tobytes()),
        "pos": _npy("<f8", "(3, 3)", np.eye(3).tobytes()),
        "n_atoms": _npy("<i8", "(1,)", np.array([3]).tobytes()),
    }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in {**base, **members}.items():
            zf.writestr(f"{name}.npy", data)
    return buf.getvalue()


@pytest.fixture(scope="module")
def seeds() -> dict[str, list[bytes]]:
    from tests.fuzz.hostile import seed_set

    mols = seed_set()
    out: dict[str, list[bytes]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fmt, write in (("xyz", write_xyz), ("extxyz", write_extxyz), ("sdf", write_sdf), ("asedb", write_asedb)):
            path = Path(tmp) / f"seed{EXTENSIONS[fmt]}"
            write(path, mols.subset(np.arange(2)) if fmt == "extxyz" else mols)  # ASE parses ~1 ms per frame
            out[fmt] = [path.read_bytes()]
        path = Path(tmp) / "seed.npz"
        write_npz(path, mols)
        plain = io.BytesIO()
        np.savez(plain, z=mols.atomic_numbers, pos=mols.positions_angstrom, n_atoms=mols.n_atoms, ids=mols.ids)
        out["npz"] = [path.read_bytes(), plain.getvalue()]  # compressed, and stored (headers visible)
    out["xyz"].append(b"3\nwater\nO 0 0 0.1173\nH 0 0.7572 -0.4692\nH 0 -0.7572 -0.4692\n")
    out["sdf"].append(_sdf_v3000())
    return out


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="orientscope-fuzz-") as tmp:
        yield Path(tmp)


@pytest.fixture(scope="module", autouse=True)
def parsers_loaded(seeds, workdir):
    """Every parser has read a valid file once: what it imports on first use is not any case's allocation."""
    for fmt, files in seeds.items():
        _load(fmt, files[0], workdir, auto=False, strict=False)


def _load(fmt: str, payload: bytes, workdir: Path, auto: bool, strict: bool) -> tuple[object, float]:
    """(the loaded set, or the documented error that refused the file; peak MB allocated by the load)."""
    path = workdir / f"case{EXTENSIONS[fmt]}"
    path.write_bytes(payload)
    return measured(lambda: load_path(path, "auto" if auto else fmt, strict=strict, limits=LIMITS, workdir=workdir))


@pytest.mark.parametrize("fmt", ["xyz", "extxyz", "sdf", "asedb", "npz"])
@FUZZ
@given(data=st.data())
def test_parser_survives_hostile_files(fmt, seeds, workdir, data):
    """Each format gets its own FUZZ budget of generated cases; each loads within the limits or is refused."""
    payload = data.draw(mutated(seeds[fmt]), label="file")
    auto, strict = data.draw(st.booleans(), label="auto"), data.draw(st.booleans(), label="strict")
    outcome, peak_mb = _load(fmt, payload, workdir, auto, strict)
    if not isinstance(outcome, OrientScopeError):
        check_loaded(outcome)
    assert peak_mb < CASE_MEMORY_MB, f"one case allocated {peak_mb:.0f} MB"


LOADS = "loads"


@pytest.mark.parametrize(
    ("fmt", "payload", "expected"),
    [
        ("xyz", b"999999999999\nhuge\nH 0 0 0\n", (LimitExceeded, "999,999,999,999 atoms in one molecule")),
        ("xyz", b"3\nw\nO nan 0 0\nH inf 0 0\nH 0 1e999 0\n", (DatasetError, "NaN or infinite coordinates")),
        # 5000 brackets inside a quoted value are text (the molecule's name), not nesting: the frame loads
        (
            "extxyz",
            b'2\nProperties=species:S:1:pos:R:3 energy=nan name="' + b"[" * 5000 + b'"\nH 0 0 0\nH 0 0 1\n',
            LOADS,
        ),
        (
            "sdf",
            b"big\n  x\n\n999999  0  0  0  0  0  0  0  0  0999 V2000\nM  END\n$$$$\n",
            (LimitExceeded, "999 atoms in one molecule"),
        ),
        (
            "extxyz",
            b"2\nProperties=species:S:2147483648:pos:R:3\nH 0 0 0\nH 0 0 1\n",
            (DatasetError, "not a valid extended-XYZ frame"),
        ),
        (
            "npz",
            _npz(z=_npy("<i8", "(1000000000000,)"), pos=_npy("<f8", "(1000000000000, 3)")),
            (LimitExceeded, "atoms in total"),
        ),
        ("npz", _npz(n_atoms=_npy("<i8", "(999999999999,)")), (LimitExceeded, "more than 500 molecules")),
        # Elements of 400 kB each (one per molecule): with a million molecules, 400 GB from a tiny zip.
        ("npz", _npz(ids=_npy("<U100000", "(1,)", bytes(400_000))), (DatasetError, "400,000-byte elements")),
        ("npz", _npz(ids=_npy("<U10000000000", "(1,)", b"x")), (DatasetError, "not a valid dtype descriptor")),
    ],
    ids=[
        "xyz-count",
        "xyz-nan",
        "extxyz-nesting",
        "sdf-count",
        "extxyz-columns",
        "npz-atoms",
        "npz-molecules",
        "npz-string-bomb",
        "npz-dtype",
    ],  # fmt: skip
)
def test_each_known_attack_has_its_own_outcome_and_allocates_little(workdir, fmt, payload, expected):
    outcome, peak_mb = _load(fmt, payload, workdir, auto=False, strict=False)
    if expected == LOADS:
        assert not isinstance(outcome, OrientScopeError), outcome
        check_loaded(outcome)
        assert list(outcome.mols.ids) == ["[" * 5000]
    else:
        error, words = expected
        assert type(outcome) is error, outcome  # refused, with the error that names this attack
        assert words in str(outcome)
    # a few MB at most: nothing of the size the file claims was made
    assert peak_mb < CASE_MEMORY_MB / 8, f"{peak_mb:.1f} MB allocated"
