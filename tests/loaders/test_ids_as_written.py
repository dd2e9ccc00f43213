"""Ids kept exactly as written in every format, repeated ids renamed by one stated rule, renamed properties
reported, and element errors that name the symbol, the record and the line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from orientscope.core.dataset import from_molecules
from orientscope.core.errors import DatasetError
from orientscope.loaders.asedb import write_asedb
from orientscope.loaders.detect import load_path
from orientscope.loaders.npz import write_npz
from orientscope.loaders.parquet_orientations import write_parquet
from tests.molecules import METHANE, WATER

# Ids that type guessing changes: ASE read "000" as 0, "T" as True, "1E3" and "NAN" as numbers (then the
# record index), and "098"/"98" as one number (then two conformers of one molecule).
TRICKY_IDS = ["000", "T", "1E3", "NAN", "098", "98", "F", "-0", "1,5"]


def _xyz_frame(mol, comment: str, symbols=None) -> str:
    z, pos = mol
    names = symbols or [{1: "H", 6: "C", 8: "O"}[int(a)] for a in z]
    return f"{len(z)}\n{comment}\n" + "".join(f"{s} {x} {y} {w}\n" for s, (x, y, w) in zip(names, pos, strict=True))


def _sdf_record(mol, title: str, fields: dict | None = None, symbols=None) -> str:
    z, pos = mol
    names = symbols or [{1: "H", 6: "C", 8: "O"}[int(a)] for a in z]
    atoms = "".join(
        f"{x:10.4f}{y:10.4f}{w:10.4f} {s:<3} 0  0  0  0  0  0  0  0  0  0  0  0\n"
        for s, (x, y, w) in zip(names, pos, strict=True)
    )
    tags = "".join(f">  <{k}>\n{v}\n\n" for k, v in (fields or {}).items())
    return f"{title}\n  test\n\n{len(z):3d}  0  0  0  0  0  0  0  0  0999 V2000\n{atoms}M  END\n{tags}$$$$\n"


def _json_record(mol, mol_id, symbols=None) -> dict:
    z, pos = mol
    names = symbols or [{1: "H", 6: "C", 8: "O"}[int(a)] for a in z]
    return {"id": mol_id, "elements": names, "positions": np.asarray(pos).tolist()}


def _tricky_set():
    mols = [WATER] * (len(TRICKY_IDS) - 1) + [METHANE]  # "98" a different molecule from "098"
    return mols, from_molecules(mols, ids=TRICKY_IDS)


def _write_text(fmt: str, path, mols) -> None:
    if fmt == "xyz":
        text = "".join(_xyz_frame(m, i) for m, i in zip(mols, TRICKY_IDS, strict=True))
    elif fmt == "extxyz":
        text = "".join(
            _xyz_frame(m, f"Properties=species:S:1:pos:R:3 id={i} energy={k}.5")
            for k, (m, i) in enumerate(zip(mols, TRICKY_IDS, strict=True))
        )
    elif fmt == "sdf":
        text = "".join(_sdf_record(m, i) for m, i in zip(mols, TRICKY_IDS, strict=True))
    else:
        text = "\n".join(json.dumps(_json_record(m, i)) for m, i in zip(mols, TRICKY_IDS, strict=True)) + "\n"
    path.write_text(text)


@pytest.mark.parametrize("fmt", ["xyz", "extxyz", "sdf", "json"])
def test_text_formats_keep_ids_as_written(tmp_path, fmt):
    mols, _ = _tricky_set()
    path = tmp_path / f"ids.{fmt}"
    _write_text(fmt, path, mols)
    loaded = load_path(path)
    assert loaded.format == fmt
    assert list(loaded.mols.ids) == TRICKY_IDS  # "098" and "98" are two molecules, not conformers
    assert loaded.warnings == []
    if fmt == "extxyz":
        np.testing.assert_array_equal(loaded.mols.properties["energy"], np.arange(len(TRICKY_IDS)) + 0.5)


def test_an_ase_written_file_keeps_its_ids(tmp_path):
    """ASE writes ``id=000`` unquoted and reads it back as the integer 0; the id here stays "000"."""
    from ase import Atoms
    from ase.io import write

    frames = []
    for k, mol_id in enumerate(TRICKY_IDS):
        atoms = Atoms(numbers=WATER[0], positions=WATER[1])
        atoms.info.update({"id": mol_id, "gap": 0.5 * k})
        frames.append(atoms)
    write(tmp_path / "ase.extxyz", frames, format="extxyz")
    mols = load_path(tmp_path / "ase.extxyz").mols
    assert list(mols.ids) == TRICKY_IDS
    np.testing.assert_allclose(mols.properties["gap"], 0.5 * np.arange(len(TRICKY_IDS)))


@pytest.mark.parametrize(("fmt", "write"), [("npz", write_npz), ("parquet", write_parquet), ("asedb", write_asedb)])
def test_binary_formats_keep_text_ids(tmp_path, fmt, write):
    _, mols = _tricky_set()
    path = tmp_path / f"ids.{ {'npz': 'npz', 'parquet': 'parquet', 'asedb': 'db'}[fmt] }"
    write(path, mols)
    loaded = load_path(path)
    assert list(loaded.mols.ids) == TRICKY_IDS and loaded.warnings == []


def test_a_repeated_id_over_one_formula_is_conformers_and_over_two_is_stated(tmp_path):
    frames = [(WATER, "A"), (METHANE, "A"), (WATER, "A"), (WATER, "B"), (WATER, "B"), (WATER, "C")]
    (tmp_path / "dup.xyz").write_text("".join(_xyz_frame(m, i) for m, i in frames))
    loaded = load_path(tmp_path / "dup.xyz")
    # B: two waters, conformers. A: water, methane, water: the waters keep "A" as conformers, methane is A_dup1.
    assert list(loaded.mols.ids) == ["A_conf0", "A_dup1", "A_conf1", "B_conf0", "B_conf1", "C"]
    conformers, distinct = loaded.warnings
    assert "1 id(s) repeat over 2 molecules of one formula each" in conformers and "'B' → 'B_conf0'" in conformers
    assert "1 id(s) name 3 molecules of different formulas" in distinct
    assert "'A' (H2O) and 'A_dup1' (CH4)" in distinct
    with pytest.raises(DatasetError, match=r"id 'A' names molecules of different formulas: H2O \(molecule 1"):
        load_path(tmp_path / "dup.xyz", strict=True)


def test_conformers_alone_load_under_strict(tmp_path):
    (tmp_path / "conf.xyz").write_text("".join(_xyz_frame(WATER, "W") for _ in range(3)))
    loaded = load_path(tmp_path / "conf.xyz", strict=True)
    assert list(loaded.mols.ids) == ["W_conf0", "W_conf1", "W_conf2"]


def test_a_new_name_that_the_file_already_uses_gets_a_number(tmp_path):
    frames = [(WATER, "A"), (WATER, "A"), (WATER, "A_conf0")]
    (tmp_path / "clash.xyz").write_text("".join(_xyz_frame(m, i) for m, i in frames))
    assert list(load_path(tmp_path / "clash.xyz").mols.ids) == ["A_conf0#0", "A_conf1", "A_conf0"]


@pytest.mark.parametrize("fmt", ["extxyz", "sdf", "parquet", "asedb", "json"])
def test_a_property_with_a_reserved_name_is_renamed_and_reported(tmp_path, fmt):
    mols = [WATER, METHANE]
    path = tmp_path / f"p.{ {'asedb': 'db'}.get(fmt, fmt) }"
    if fmt == "extxyz":
        path.write_text("".join(_xyz_frame(m, f"id=m{k} n_atoms={k + 7}") for k, m in enumerate(mols)))
    elif fmt == "sdf":
        path.write_text("".join(_sdf_record(m, f"m{k}", {"n_atoms": k + 7}) for k, m in enumerate(mols)))
    elif fmt == "json":
        records = [{**_json_record(m, f"m{k}"), "properties": {"n_atoms": k + 7}} for k, m in enumerate(mols)]
        path.write_text(json.dumps(records))
    elif fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = {"id": ["m0", "m1"], "z": [list(m[0]) for m in mols], "pos": [list(np.ravel(m[1])) for m in mols]}
        pq.write_table(pa.table({**table, "n_atoms": [7, 8]}), path)
    else:
        from ase import Atoms
        from ase.db import connect

        with connect(str(path)) as db:
            for k, m in enumerate(mols):
                db.write(Atoms(numbers=m[0], positions=m[1]), name=f"m{k}", n_atoms=k + 7)
    loaded = load_path(path)
    assert list(loaded.mols.properties.columns) == ["prop_n_atoms"]
    np.testing.assert_array_equal(loaded.mols.properties["prop_n_atoms"], [7, 8])
    (warning,) = loaded.warnings
    assert "1 property renamed" in warning and "'n_atoms' → 'prop_n_atoms'" in warning


# ----------------------------------------------------------------------------------- elements
def _with_symbol(fmt: str, symbol: str, path) -> None:
    """40 waters, the second with ``symbol`` as its first hydrogen."""
    names = ["O", "H", "H"]
    odd = ["O", symbol, "H"]
    if fmt in ("xyz", "extxyz"):
        comment = (lambda k: f"id=w{k}") if fmt == "extxyz" else (lambda k: f"w{k}")
        frames = [_xyz_frame(WATER, comment(k), odd if k == 1 else names) for k in range(40)]
        path.write_text("".join(frames))
    elif fmt == "sdf":
        path.write_text("".join(_sdf_record(WATER, f"w{k}", symbols=odd if k == 1 else names) for k in range(40)))
    else:
        lines = [json.dumps(_json_record(WATER, f"w{k}", odd if k == 1 else names)) for k in range(40)]
        path.write_text("\n".join(lines) + "\n")


# The line of the odd atom (the second record's second atom): xyz frames are 5 lines, SDF records 9;
# JSON Lines name the record's line and the atom.
ODD_LINE = {"xyz": 9, "extxyz": 9, "sdf": 15, "json": None}
RECORD = {
    "xyz": "record 2 (line 6)",
    "extxyz": "record 2 (line 6)",
    "sdf": "record 2 (line 10)",
    "json": "record 2 (line 2)",
}


@pytest.mark.parametrize("fmt", ["xyz", "extxyz", "sdf", "json"])
@pytest.mark.parametrize(
    ("symbol", "expected"),
    [
        ("Zz", "unknown element symbol 'Zz'; accepted: element symbols (H to Og), D and T"),
        ("X", "dummy atom 'X' (atomic number 0: a ghost, centroid or query atom, not an element)"),
    ],
)
def test_an_atom_that_is_not_an_element_names_the_symbol_record_and_line(tmp_path, fmt, symbol, expected):
    path = tmp_path / f"e.{fmt}"
    _with_symbol(fmt, symbol, path)
    loaded = load_path(path)
    assert loaded.n_skipped == 1 and loaded.mols.n_molecules == 39 and "w1" not in loaded.mols.ids
    (problem,) = loaded.problems
    where = f"line {ODD_LINE[fmt]}: " if ODD_LINE[fmt] else "atom 2: "  # JSON: the atom in its record
    assert problem.startswith(f"{path.name}: {RECORD[fmt]}: {where}{expected}")
    with pytest.raises(DatasetError, match="strict mode"):
        load_path(path, strict=True)


@pytest.mark.parametrize("fmt", ["xyz", "extxyz", "sdf", "json"])
def test_deuterium_and_tritium_are_read_as_hydrogen_with_a_warning(tmp_path, fmt):
    path = tmp_path / f"d.{fmt}"
    _with_symbol(fmt, "D", path)
    loaded = load_path(path)
    assert loaded.n_skipped == 0 and loaded.mols.n_molecules == 40
    np.testing.assert_array_equal(loaded.mols.atomic_numbers[3:6], [8, 1, 1])
    (warning,) = loaded.warnings
    assert "atoms written D or T (deuterium, tritium) were read as hydrogen (Z = 1)" in warning
    assert f"(1 record; the first: {RECORD[fmt]}" in warning


@pytest.mark.parametrize("fmt", ["npz", "asedb"])
def test_atomic_number_zero_in_a_numeric_format_is_a_dummy_atom(tmp_path, fmt):
    mols = from_molecules([WATER] * 40, ids=[f"w{k}" for k in range(40)])
    z = mols.atomic_numbers.copy()
    z[4] = 0  # the second molecule's first hydrogen
    if fmt == "npz":
        np.savez(tmp_path / "z.npz", z=z, pos=mols.positions_angstrom, n_atoms=mols.n_atoms, ids=mols.ids)
        path = tmp_path / "z.npz"
    else:
        from ase import Atoms
        from ase.db import connect

        path = tmp_path / "z.db"
        with connect(str(path)) as db:
            for k in range(40):
                db.write(Atoms(numbers=z[3 * k : 3 * k + 3], positions=WATER[1]), name=f"w{k}")
    loaded = load_path(path)
    (problem,) = loaded.problems
    assert "atom 2: dummy atom 'X' (atomic number 0" in problem
    assert ("molecule 'w1' (index 1)" if fmt == "npz" else "row 2") in problem


def test_atomic_numbers_beyond_the_table_say_what_is_accepted(tmp_path):
    (tmp_path / "z.xyz").write_text("1\na\n200 0 0 0\n" + "".join(_xyz_frame(WATER, f"w{k}") for k in range(40)))
    (problem,) = load_path(tmp_path / "z.xyz").problems
    assert "line 3: atomic number 200 is not an element (accepted: 1 to 118)" in problem


# ----------------------------------------------------------------------------------- the server's own tags
def test_the_older_server_xyz_comment_gives_the_id_and_no_junk_properties(tmp_path):
    """``qm9 446 pose=stored units=angstrom``: ASE made properties "qm9" and "446" of it, and renumbered the ids."""
    frames = [_xyz_frame(WATER, f"qm9 {k * 11} pose=stored units=angstrom") for k in range(30)]
    (tmp_path / "old.xyz").write_text("".join(frames))
    loaded = load_path(tmp_path / "old.xyz")
    assert loaded.format == "extxyz"  # the sniffer sees "=": the extended reader takes it as written
    assert list(loaded.mols.ids) == [str(k * 11) for k in range(30)]
    assert list(loaded.mols.properties.columns) == []
    assert loaded.tags == {"pose": ["stored"], "units": ["angstrom"], "dataset": ["qm9"]}
    (tmp_path / "spaced.xyz").write_text(_xyz_frame(WATER, "my-set a b pose=canonical units=angstrom"))
    assert list(load_path(tmp_path / "spaced.xyz").mols.ids) == ["a b"]  # a dataset id (a slug) has no blank


def test_coordinates_tagged_in_other_units_are_refused(tmp_path):
    (tmp_path / "bohr.xyz").write_text(_xyz_frame(WATER, "id=w pose=stored units=bohr"))
    with pytest.raises(DatasetError, match=r"units='bohr': coordinates are read in ångström"):
        load_path(tmp_path / "bohr.xyz")


def test_a_canonical_pose_download_is_said_to_be_aligned_by_construction(tmp_path):
    frames = [_xyz_frame(WATER, f"dataset=qm9 pose=canonical units=angstrom id=w{k}") for k in range(3)]
    (tmp_path / "c.xyz").write_text("".join(frames))
    loaded = load_path(tmp_path / "c.xyz")
    assert any("pose=canonical" in w and "aligned by construction" in w for w in loaded.warnings)


def test_a_plain_property_named_like_a_server_tag_is_a_property_without_the_tags(tmp_path):
    frames = [_xyz_frame(WATER, f"id=w{k} dataset={k}") for k in range(3)]
    (tmp_path / "d.xyz").write_text("".join(frames))
    loaded = load_path(tmp_path / "d.xyz")
    np.testing.assert_array_equal(loaded.mols.properties["dataset"], [0, 1, 2])
    assert loaded.tags == {}


def test_extended_xyz_flags_stay_properties_but_plain_xyz_free_text_does_not(tmp_path):
    (tmp_path / "f.extxyz").write_text(_xyz_frame(WATER, "id=w relaxed energy=-1.5"))
    assert load_path(tmp_path / "f.extxyz").mols.properties.to_dict("list") == {"relaxed": [1.0], "energy": [-1.5]}
    (tmp_path / "f.xyz").write_text(_xyz_frame(WATER, "id=w relaxed energy=-1.5"))
    assert load_path(tmp_path / "f.xyz", "xyz").mols.properties.to_dict("list") == {"energy": [-1.5]}


def test_json_record_errors_name_the_record_and_what_is_accepted(tmp_path):
    (tmp_path / "bad.json").write_text(json.dumps({"id": "a", "positions": []}))
    with pytest.raises(DatasetError, match=r"record 1: no 'elements'; expected a molecule record"):
        load_path(tmp_path / "bad.json")
    (tmp_path / "broken.json").write_text('{"id": "a",\n "elements": [\n')
    with pytest.raises(DatasetError, match=r"broken.json: line 3: not JSON"):
        load_path(tmp_path / "broken.json")


def test_an_ase_json_database_is_still_read_as_one(tmp_path, small_atoms):
    from ase.db import connect

    with connect(str(tmp_path / "a.json")) as db:
        for atoms in small_atoms:
            db.write(atoms, name=atoms.info["name"])
    loaded = load_path(tmp_path / "a.json")
    assert loaded.format == "asedb" and list(loaded.mols.ids) == ["mol0", "mol1", "mol2", "mol3"]


def test_property_units_of_json_records_are_kept(tmp_path):
    record = {**_json_record(WATER, "w"), "properties": [{"name": "gap", "value": 0.25, "unit": "eV"}]}
    loaded = load_path_text(tmp_path, "w.json", json.dumps(record))
    assert loaded.mols.property_units == {"gap": "eV"}
    assert loaded.mols.properties.to_dict("list") == {"gap": [0.25]}


def load_path_text(tmp_path, name: str, text: str):
    (tmp_path / name).write_text(text)
    return load_path(tmp_path / name)


def test_properties_written_as_property_colon_name_read_back_under_their_name(tmp_path):
    frames = [_xyz_frame(WATER, f'id=w{k} "property:name"={k}') for k in range(2)]
    loaded = load_path_text(tmp_path, "p.extxyz", "".join(frames))
    assert loaded.mols.properties.to_dict("list") == {"name": [0.0, 1.0]} and list(loaded.mols.ids) == ["w0", "w1"]
    assert pd.api.types.is_float_dtype(loaded.mols.properties["name"])


def test_a_null_parquet_id_is_the_row_number_not_the_text_none(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = {"id": ["000", None, "98"], "z": [list(WATER[0])] * 3, "pos": [list(np.ravel(WATER[1]))] * 3}
    pq.write_table(pa.table(rows), tmp_path / "n.parquet")
    assert list(load_path(tmp_path / "n.parquet").mols.ids) == ["000", "2", "98"]


def test_json_property_values_true_false_and_text(tmp_path):
    props = {"flag": True, "off": False, "label": "not a number", "e": 1.5}
    loaded = load_path_text(tmp_path, "f.json", json.dumps({**_json_record(WATER, "w"), "properties": props}))
    assert loaded.mols.properties.to_dict("list") == {"flag": [1.0], "off": [0.0], "e": [1.5]}
