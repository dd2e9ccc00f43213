import numpy as np
import pytest

from orientscope.core.errors import DatasetError
from orientscope.loaders.detect import detect_format, load_path


def test_detection_by_extension_and_content(tmp_path, small_atoms):
    from ase.io import write

    write(tmp_path / "a.extxyz", small_atoms, format="extxyz")
    write(tmp_path / "b.xyz", small_atoms, format="extxyz")  # extended content, plain suffix
    write(tmp_path / "c.xyz", small_atoms, format="xyz")
    (tmp_path / "d.dat").write_bytes((tmp_path / "a.extxyz").read_bytes())
    with open(tmp_path / "e.bin", "wb") as fh:
        np.savez(fh, z=[1], pos=[[0.0, 0, 0]], n_atoms=[1])
    assert detect_format(tmp_path / "a.extxyz") == "extxyz"
    assert detect_format(tmp_path / "b.xyz") == "extxyz"
    assert detect_format(tmp_path / "c.xyz") == "xyz"
    assert detect_format(tmp_path / "d.dat") == "extxyz"
    assert detect_format(tmp_path / "e.bin") == "npz"
    assert load_path(tmp_path / "d.dat").mols.n_molecules == 4


def test_unknown_format_names_what_is_accepted(tmp_path):
    (tmp_path / "x.txt").write_text("hello world\n")
    with pytest.raises(DatasetError, match="cannot tell the format.*accepted: xyz, extxyz, sdf"):
        load_path(tmp_path / "x.txt")
    with pytest.raises(ValueError, match="unknown format 'pdb'"):
        load_path(tmp_path / "x.txt", "pdb")


def test_without_an_extension_only_an_atom_count_line_means_xyz(tmp_path):
    (tmp_path / "mol").write_text("3\nwater\nO 0 0 0\nH 0.96 0 0\nH -0.24 0.93 0\n")
    assert detect_format(tmp_path / "mol") == "xyz"
    (tmp_path / "blob").write_bytes(b"7\x00\xff" + bytes(range(256)) * 4)
    with pytest.raises(DatasetError, match="cannot tell the format"):
        detect_format(tmp_path / "blob")
