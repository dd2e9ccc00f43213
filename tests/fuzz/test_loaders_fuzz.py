"""Property-based fuzzing of every file parser (XYZ, extxyz, SDF, ASE db, NPZ) with mutated seed files.

1000 generated cases per parser: valid files written by our own writers, then
truncated, byte-flipped, spliced with junk, with numbers replaced by NaN, inf
and huge counts, and deep bracket nesting. Each case must load into a valid set
inside the limits or fail with a documented error, within a hard time bound,
and the peak memory of the whole run stays bounded.
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

from orientscope.loaders.asedb import write_asedb
from orientscope.loaders.detect import load_path
from orientscope.loaders.extxyz import write_extxyz
from orientscope.loaders.npz import write_npz
from orientscope.loaders.sdf import write_sdf
from orientscope.loaders.xyz import write_xyz
from tests.fuzz.hostile import FUZZ, LIMITS, MEMORY_GROWTH_MB, check_loaded, expect_documented, mutated, peak_rss_mb

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


def _fuzz_one(fmt: str, payload: bytes, workdir: Path, auto: bool, strict: bool) -> None:
    path = workdir / f"case{EXTENSIONS[fmt]}"
    path.write_bytes(payload)
    loaded = expect_documented(
        lambda: load_path(path, "auto" if auto else fmt, strict=strict, limits=LIMITS, workdir=workdir)
    )
    if loaded is not None:
        check_loaded(loaded)


def _run(fmt: str, seeds, workdir, data, explicit: bytes | None = None) -> None:
    payload = explicit if explicit is not None else data.draw(mutated(seeds[fmt]), label="file")
    auto = data.draw(st.booleans(), label="auto") if explicit is None else False
    strict = data.draw(st.booleans(), label="strict") if explicit is None else False
    _fuzz_one(fmt, payload, workdir, auto, strict)


@pytest.fixture(scope="module", autouse=True)
def memory_is_bounded():
    before = peak_rss_mb()
    yield
    grown = peak_rss_mb() - before
    assert grown < MEMORY_GROWTH_MB, f"peak RSS grew by {grown:.0f} MB while fuzzing the loaders"


@pytest.mark.parametrize("fmt", ["xyz", "extxyz", "sdf", "asedb", "npz"])
@FUZZ
@given(data=st.data())
def test_parser_survives_hostile_files(fmt, seeds, workdir, data):
    """Each format gets its own FUZZ budget of generated cases."""
    _run(fmt, seeds, workdir, data)


@pytest.mark.parametrize(
    ("fmt", "payload"),
    [
        ("xyz", b"999999999999\nhuge\nH 0 0 0\n"),
        ("xyz", b"3\nw\nO nan 0 0\nH inf 0 0\nH 0 1e999 0\n"),
        ("extxyz", b'2\nProperties=species:S:1:pos:R:3 energy=nan name="' + b"[" * 5000 + b'"\nH 0 0 0\nH 0 0 1\n'),
        ("sdf", b"big\n  x\n\n999999  0  0  0  0  0  0  0  0  0999 V2000\nM  END\n$$$$\n"),
        ("extxyz", b"2\nProperties=species:S:2147483648:pos:R:3\nH 0 0 0\nH 0 0 1\n"),
        ("npz", _npz(z=_npy("<i8", "(1000000000000,)"), pos=_npy("<f8", "(1000000000000, 3)"))),
        ("npz", _npz(n_atoms=_npy("<i8", "(999999999999,)"))),
        # Elements of 400 kB each (one per molecule): with a million molecules, 400 GB from a tiny zip.
        ("npz", _npz(ids=_npy("<U100000", "(1,)", bytes(400_000)))),
        ("npz", _npz(ids=_npy("<U10000000000", "(1,)", b"x"))),
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
def test_known_attacks_are_refused_without_allocating(workdir, fmt, payload):
    _fuzz_one(fmt, payload, workdir, auto=False, strict=False)
