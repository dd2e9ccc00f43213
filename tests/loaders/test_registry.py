"""The format registry: what detection, export and the option checks read from it, on small constructed files.

``test_detect.py`` pins the detection cases it has always pinned; these pin the ambiguous ones the registry
settles (a suffix two formats list, an opening against a marker) and the reading options.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from orientscope.core.errors import DatasetError
from orientscope.loaders import registry
from orientscope.loaders.detect import detect_format, is_molecule_file, load_path
from orientscope.loaders.formats import MARKER, NO, OPENING
from orientscope.pipeline.export import DEFAULT_FORMAT, WRITERS, export_molecules

WATER = "3\nwater\nO 0.0 0.0 0.117\nH 0.0 0.757 -0.467\nH 0.0 -0.757 -0.467\n"
WATER_KV = "3\nid=w1 energy=-76.4\nO 0.0 0.0 0.117\nH 0.0 0.757 -0.467\nH 0.0 -0.757 -0.467\n"
RECORD = {"id": "w", "elements": ["O", "H", "H"], "positions": [[0, 0, 0.117], [0, 0.757, -0.467], [0, -0.757, -0.467]]}


def _ase_json_db(path):
    from ase import Atoms
    from ase.db import connect

    with connect(str(path), type="json") as db:
        db.write(Atoms("H2O", positions=[[0, 0, 0.117], [0, 0.757, -0.467], [0, -0.757, -0.467]]), name="w")


def test_names_extensions_and_choices_come_from_the_declarations():
    assert registry.choices() == (registry.AUTO, *registry.names())
    assert len(set(registry.names())) == len(registry.FORMATS)
    for fmt in registry.FORMATS:
        assert fmt.extensions and all(e.startswith(".") and e == e.lower() for e in fmt.extensions)
        assert fmt.suffix == fmt.extensions[0] and "/" in fmt.media_type
    assert tuple(WRITERS) == registry.writable() and all(WRITERS[n][0] == registry.get(n).suffix for n in WRITERS)
    assert DEFAULT_FORMAT in registry.writable() and registry.RECORDS.name in registry.names()
    with pytest.raises(ValueError, match="unknown format 'pdb'; expected one of"):
        registry.get("pdb")


def test_a_suffix_two_formats_list_goes_by_content_else_to_the_format_listing_it_first(tmp_path):
    (tmp_path / "plain.xyz").write_text(WATER)
    (tmp_path / "pairs.xyz").write_text(WATER_KV)
    (tmp_path / "no-count.xyz").write_text("water\nid=w1\nO 0 0 0\n")
    (tmp_path / "records.json").write_text(json.dumps(RECORD))
    _ase_json_db(tmp_path / "ase.json")
    (tmp_path / "neither.json").write_text('{"hello": 1}')
    assert [f.name for f in registry.owners(tmp_path / "a.xyz")] == ["xyz", "extxyz"]
    assert [f.name for f in registry.owners(tmp_path / "a.JSON")] == ["json", "asedb"]
    assert detect_format(tmp_path / "plain.xyz") == "xyz"
    assert detect_format(tmp_path / "pairs.xyz") == "extxyz"
    assert detect_format(tmp_path / "no-count.xyz") == "xyz"  # no content evidence: the first lister
    assert detect_format(tmp_path / "records.json") == "json"
    assert detect_format(tmp_path / "ase.json") == "asedb"
    assert detect_format(tmp_path / "neither.json") == "json"
    assert load_path(tmp_path / "ase.json").mols.n_molecules == 1
    with pytest.raises(DatasetError, match="neither.json"):
        load_path(tmp_path / "neither.json")


def test_without_a_known_extension_an_opening_outranks_a_marker(tmp_path):
    sdf_titled_42 = "42\n  RDKit          3D\n\n  1  0  0  0  0  0  0  0  0  0999 V2000\n" + "M  END\n$$$$\n"
    (tmp_path / "titled.dat").write_text(sdf_titled_42)  # the count-like title is an opening: XYZ, as always
    (tmp_path / "mol.dat").write_text("water\n" + sdf_titled_42.split("\n", 1)[1])  # only the marker: SDF
    (tmp_path / "record.dat").write_text(json.dumps({**RECORD, "note": "M  END"}))
    _ase_json_db(tmp_path / "ase.json")
    (tmp_path / "ase.dat").write_bytes((tmp_path / "ase.json").read_bytes())
    assert detect_format(tmp_path / "titled.dat") == "xyz"
    assert detect_format(tmp_path / "mol.dat") == "sdf"
    assert detect_format(tmp_path / "record.dat") == "json"
    with pytest.raises(DatasetError, match="cannot tell the format"):  # ASE's JSON rows say so only as a .json
        detect_format(tmp_path / "ase.dat")
    head = (tmp_path / "mol.dat").read_bytes()
    assert [f.sniff(head, tmp_path / "mol.dat") for f in registry.FORMATS].count(MARKER) == 1
    assert all(f.sniff(WATER.encode(), tmp_path / "w") in (NO, OPENING) for f in registry.FORMATS)


def test_openings_exclude_one_another(tmp_path):
    """No two formats claim the same opening, so the order of the registry never decides a file by content."""
    mols = load_path(_written(tmp_path, "water.xyz", WATER)).mols
    heads = {}
    for name, (suffix, write) in WRITERS.items():
        write(tmp_path / f"w{suffix}", mols)
        heads[name] = (tmp_path / f"w{suffix}").read_bytes()[:4096]
    heads["json"] = json.dumps(RECORD).encode()
    for name, head in heads.items():
        opened = [f.name for f in registry.FORMATS if f.sniff(head, tmp_path / "noext") == OPENING]
        assert opened in ([name], []), (name, opened)
        assert detect_format(_written_bytes(tmp_path, f"{name}-noext", head)) == name


def _written(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    return tmp_path / name


def _written_bytes(tmp_path, name, data):
    (tmp_path / name).write_bytes(data)
    return tmp_path / name


def test_a_zip_of_files_is_an_archive_and_an_npz_never_is(tmp_path):
    with zipfile.ZipFile(tmp_path / "many.zip", "w") as zf:
        zf.writestr("a.xyz", WATER)
        zf.writestr("b.xyz", WATER.replace("water", "water2"))
    assert detect_format(tmp_path / "many.zip") == "archive"
    assert load_path(tmp_path / "many.zip").mols.n_molecules == 2
    np.savez(tmp_path / "w.npz", z=[8, 1, 1], pos=np.eye(3), n_atoms=[3])
    assert load_path(tmp_path / "w.npz", "npz").mols.n_molecules == 1


def test_a_folder_keeps_only_files_its_formats_would_read(tmp_path):
    (tmp_path / "metadata.json").write_text('{"name": "not molecules"}')
    (tmp_path / "records.json").write_text(json.dumps(RECORD))
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "w.exyz").write_text(WATER_KV)
    picked = sorted(p.name for p in tmp_path.iterdir() if is_molecule_file(p))
    assert picked == ["records.json", "w.exyz"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [("out.xyz", "xyz"), ("out.exyz", "extxyz"), ("out.SD", "sdf"), ("out.json", "asedb"), ("out.txt", None)],
)
def test_exports_take_the_format_their_file_name_names(name, expected):
    fmt = registry.writer_for(name)
    assert (fmt.name if fmt else None) == expected


def test_an_ase_json_export_reads_back_as_the_same_molecules(tmp_path):
    mols = load_path(_written(tmp_path, "water.xyz", WATER)).mols
    info = export_molecules(mols, tmp_path / "out.json", "canonical", "asedb")
    back = load_path(tmp_path / "out.json")
    assert info["format"] == "asedb" and back.format == "asedb"
    assert list(back.mols.ids) == list(mols.ids)
    assert not list(tmp_path.glob(".out.json.*")), "the temporary file is renamed into place"


def test_options_a_format_does_not_take_are_refused_naming_what_it_takes(tmp_path):
    path = _written(tmp_path, "w.xyz", WATER)
    with pytest.raises(ValueError, match="unknown format option 'colour' for format 'xyz'; accepted: none"):
        load_path(path, "xyz", options={"colour": "blue"})
    with pytest.raises(ValueError, match="unknown format option 'colour' for any format"):
        load_path(path, options={"colour": "blue"})
    assert registry.parse_options(["a=1", " b = two "]) == {"a": "1", "b": "two"}
    assert registry.parse_options("a=1,,b=2") == {"a": "1", "b": "2"}
    for bad in ("a", "=1", "a="):
        with pytest.raises(ValueError, match="expected name=value"):
            registry.parse_options([bad])


def test_the_cli_refuses_an_unknown_format_option_before_reading(tmp_path):
    path = _written(tmp_path, "w.xyz", WATER)
    exe = [sys.executable, "-m", "orientscope.cli"]
    proc = subprocess.run(
        [
            *exe,
            "ingest",
            str(path),
            "--name",
            "w",
            "--data-dir",
            str(tmp_path / "data"),
            "--format-option",
            "colour=blue",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and "unknown format option 'colour'" in proc.stderr, proc.stderr
    assert not (tmp_path / "data" / "datasets").exists()
