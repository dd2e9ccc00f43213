import numpy as np
import pytest

from orientscope.core.errors import DatasetError
from orientscope.loaders.detect import load_path
from orientscope.loaders.extxyz import write_extxyz


def test_round_trip_with_ase_properties_and_calculator_energy(tmp_path, small_atoms):
    from ase.calculators.singlepoint import SinglePointCalculator
    from ase.io import write

    for k, atoms in enumerate(small_atoms):
        atoms.calc = SinglePointCalculator(atoms, energy=-10.0 * k)
    write(tmp_path / "a.extxyz", small_atoms, format="extxyz")
    loaded = load_path(tmp_path / "a.extxyz", "extxyz")
    mols = loaded.mols
    assert list(mols.ids) == ["mol0", "mol1", "mol2", "mol3"]
    np.testing.assert_allclose(mols.properties["gap"], [0.0, 0.25, 0.5, 0.75])
    np.testing.assert_allclose(mols.properties["mu"], [1.5, 2.5, 3.5, 4.5])
    np.testing.assert_allclose(mols.properties["energy"], [0.0, -10.0, -20.0, -30.0])
    np.testing.assert_allclose(mols.positions_angstrom, np.concatenate([a.positions for a in small_atoms]), atol=1e-7)


def test_our_writer_round_trips_ids_smiles_and_properties(tmp_path, qm9_small):
    mols = qm9_small.subset(np.arange(30))
    write_extxyz(tmp_path / "q.extxyz", mols)
    back = load_path(tmp_path / "q.extxyz", "extxyz").mols
    assert list(back.ids) == list(mols.ids)
    assert list(back.smiles) == list(mols.smiles)
    assert list(back.properties.columns) == list(mols.properties.columns)
    np.testing.assert_allclose(back.properties.to_numpy(), mols.properties.to_numpy(), rtol=1e-9)
    np.testing.assert_allclose(back.positions_angstrom, mols.positions_angstrom, atol=1e-7)


def test_bad_frame_is_located(tmp_path, small_atoms):
    from ase.io import write

    write(tmp_path / "a.extxyz", small_atoms * 10, format="extxyz")
    lines = (tmp_path / "a.extxyz").read_text().splitlines(keepends=True)
    lines[2] = "O nan 0.0 0.0\n"
    (tmp_path / "b.extxyz").write_text("".join(lines))
    loaded = load_path(tmp_path / "b.extxyz", "extxyz")
    assert loaded.n_skipped == 1 and loaded.mols.n_molecules == 39
    assert "record 1 (line 1)" in loaded.problems[0]
    with pytest.raises(DatasetError, match=r"record 1 \(line 1\)"):
        load_path(tmp_path / "b.extxyz", "extxyz", strict=True)
