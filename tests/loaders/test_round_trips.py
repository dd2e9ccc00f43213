"""Every format the server writes reads back with the same ids, properties and atoms (positions within the
format's precision), no column added: a property test over random ids, property names and values.

The writers are the ones the server uses: ``export``'s six (``pipeline/export.py`` WRITERS) and the
single-molecule downloads of ``GET …/molecules/{mol_id}?format=xyz|sdf|json`` (XYZ with the server's tags,
SDF with bonds, the JSON record's fields). ``tests/api/test_round_trip_api.py`` re-uploads the real
downloads over HTTP.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orientscope.core.dataset import RESERVED_COLUMNS, MoleculeSet, from_molecules
from orientscope.loaders.detect import load_path
from orientscope.loaders.json_records import record_fields
from orientscope.loaders.sdf import sdf_block
from orientscope.loaders.xyz import molecule_comment, xyz_block
from orientscope.pipeline.export import WRITERS

ROUND_TRIP = settings(
    max_examples=25, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
# Each format's precision for positions (Å): fixed decimals in XYZ (10; the download 8) and SDF (4), else exact.
POSITION_ATOL = {"xyz": 1e-9, "extxyz": 1e-9, "sdf": 1e-4, "download-xyz": 1e-8, "download-sdf": 1e-4}
SUFFIX = {"asedb": ".db", "download-xyz": ".xyz", "download-sdf": ".sdf", "download-json": ".json"}
# Ids that type guessing or a naive reader changes, and text that needs quoting or escaping.
SPECIAL_IDS = [
    "000", "T", "F", "1E3", "NAN", "nan", "inf", "098", "98", "-0", "1,5", "True", "a b", "x=y", 'q"uote',
    "back\\slash", "[1, 2]", "{c}", "it's", "ü", "分子 7", "property:z", "Properties", "M", "$$", "#1",
]  # fmt: skip
# Property names that formats use for something else (they are written as "property:<name>").
SPECIAL_NAMES = [
    "name", "SMILES", "pose", "units", "dataset", "z", "pos", "ids", "id_", "Properties", "pbc", "mol_id",
    "source", "property:x", "energy", "free_energy", "E (eV)", "δ", "a-b.c", "CHEMBL_ID", "ID", "_Name",
]  # fmt: skip
ELEMENTS = list(range(1, 119))
COMMON = [1, 5, 6, 7, 8, 9, 14, 15, 16, 17, 35]  # the SDF download perceives bonds: keep to ordinary chemistry

id_text = st.text(st.characters(categories=("L", "N", "P", "S", "Zs")), min_size=1, max_size=12)
name_text = st.text(st.characters(categories=("L", "N"), include_characters="_-. ()"), min_size=1, max_size=10)


def holds_id(fmt: str, mol_id: str) -> bool:
    """Whether ``fmt`` can hold the id at all: an SDF title line loses leading and trailing blanks, and a title
    "$$$$" or "M  END" would end the record or its block."""
    if fmt in ("sdf", "download-sdf"):
        return mol_id == mol_id.strip() and mol_id.strip() != "$$$$" and not mol_id.startswith("M  END")
    return True


def holds_name(name: str) -> bool:
    return name == name.strip() and name not in RESERVED_COLUMNS


@st.composite
def molecule_sets(draw, fmt: str) -> MoleculeSet:
    n = draw(st.integers(1, 5))
    ids = draw(
        st.lists(
            st.one_of(st.sampled_from(SPECIAL_IDS), id_text).filter(lambda i: holds_id(fmt, i)),
            min_size=n,
            max_size=n,
            unique=True,
        )
    )
    names = draw(
        st.lists(st.one_of(st.sampled_from(SPECIAL_NAMES), name_text).filter(holds_name), max_size=4, unique=True)
    )
    values = st.floats(allow_nan=True, allow_infinity=fmt != "download-json", width=64)
    props = {name: draw(st.lists(values, min_size=n, max_size=n)) for name in names}
    elements = COMMON if fmt == "download-sdf" else ELEMENTS
    coordinate = st.floats(-99, 99, allow_nan=False, width=64)
    mols = []
    for _ in range(n):
        k = draw(st.integers(1, 6))
        z = draw(st.lists(st.sampled_from(elements), min_size=k, max_size=k))
        pos = draw(st.lists(st.tuples(coordinate, coordinate, coordinate), min_size=k, max_size=k))
        mols.append((z, np.array(pos, dtype=np.float64).reshape(k, 3)))
    smiles = draw(
        st.lists(st.sampled_from(["", "C", "O=C=O", "c1ccccc1", "[NH4+]", "CC(=O)O"]), min_size=n, max_size=n)
    )
    return from_molecules(mols, ids=ids, smiles=smiles, properties=pd.DataFrame(props, columns=names))


def _download(fmt: str, mols: MoleculeSet, i: int) -> str:
    """Molecule ``i`` as ``GET /api/datasets/{id}/molecules/{mol_id}?format=…`` writes it
    (``services/molecules.py`` export_molecule and molecule_detail)."""
    z, pos = mols.atoms_of(i)
    mol_id = str(mols.ids[i])
    smiles = str(mols.smiles[i]) or None
    props = {str(c): float(mols.properties[c].iat[i]) for c in mols.properties.columns}
    tags = [("dataset", "the-set"), ("pose", "stored"), ("units", "angstrom")]
    if fmt == "download-xyz":
        return xyz_block(z, pos, molecule_comment(mol_id, smiles, props, tags), decimals=8)
    if fmt == "download-sdf":
        return sdf_block(z, pos, mol_id, smiles, props, tags)
    return json.dumps({"id": mol_id, "smiles": smiles, **record_fields(z, pos, props, {})})


def _write(fmt: str, path: Path, mols: MoleculeSet) -> None:
    if fmt.startswith("download-"):  # a user saves several downloads into one file
        path.write_text(
            ("\n" if fmt == "download-json" else "").join(_download(fmt, mols, i) for i in range(mols.n_molecules))
        )
    else:
        WRITERS[fmt][1](path, mols)


def _check_round_trip(fmt: str, mols: MoleculeSet) -> None:
    with tempfile.TemporaryDirectory(prefix="round-trip-") as tmp:
        path = Path(tmp) / f"set{SUFFIX.get(fmt, '.' + fmt)}"
        _write(fmt, path, mols)
        loaded = load_path(path)
    back = loaded.mols
    assert loaded.n_skipped == 0 and loaded.warnings == [], (loaded.problems, loaded.warnings)
    assert list(back.ids) == list(mols.ids)
    assert sorted(back.properties.columns) == sorted(mols.properties.columns)  # no junk column, none lost
    for name in mols.properties.columns:
        np.testing.assert_array_equal(back.properties[name].to_numpy(), mols.properties[name].to_numpy(), err_msg=name)
    np.testing.assert_array_equal(back.atomic_numbers, mols.atomic_numbers)
    np.testing.assert_array_equal(back.offsets, mols.offsets)
    np.testing.assert_allclose(back.positions_angstrom, mols.positions_angstrom, rtol=0, atol=POSITION_ATOL.get(fmt, 0))
    written = mols.smiles != ""
    if written.any():
        assert back.smiles is not None and list(back.smiles[written]) == list(mols.smiles[written])
    if fmt.startswith("download-") and fmt != "download-json":
        assert loaded.tags == {"dataset": ["the-set"], "pose": ["stored"], "units": ["angstrom"]}


FORMATS = [*WRITERS, "download-xyz", "download-sdf", "download-json"]


def test_every_writer_of_the_server_is_covered():
    assert set(WRITERS) == {"xyz", "extxyz", "sdf", "asedb", "npz", "parquet"}


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_special_id_and_property_name_round_trips(fmt):
    """All the hard cases at once (the property test draws a few of them per example)."""
    ids = [i for i in SPECIAL_IDS if holds_id(fmt, i)]
    rng = np.random.default_rng(3)
    special = [np.nan, -0.0, 1e-300, 5e-324, -1.7976931348623157e308, 0.1, 3.0]
    if fmt != "download-json":
        special.append(np.inf)
    values = {name: rng.choice(special, size=len(ids)) for name in SPECIAL_NAMES}
    elements = COMMON if fmt == "download-sdf" else ELEMENTS
    mols = [
        (rng.choice(elements, size=k), rng.uniform(-99, 99, size=(k, 3))) for k in rng.integers(1, 7, size=len(ids))
    ]
    smiles = rng.choice(["", "C", "c1ccccc1"], size=len(ids))
    _check_round_trip(fmt, from_molecules(mols, ids=ids, smiles=smiles, properties=pd.DataFrame(values)))


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_keeps_ids_properties_and_atoms(fmt):
    @ROUND_TRIP
    @given(mols=molecule_sets(fmt))
    def check(mols):
        _check_round_trip(fmt, mols)

    check()
