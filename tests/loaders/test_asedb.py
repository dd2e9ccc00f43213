import numpy as np
import pytest

from orientscope.core.errors import DatasetError
from orientscope.loaders.asedb import write_asedb
from orientscope.loaders.detect import load_path


@pytest.mark.parametrize(("filename", "kind"), [("a.db", "db"), ("a.aselmdb", "aselmdb")])
def test_round_trip_written_by_ase(tmp_path, small_atoms, filename, kind):
    """OMol25 style: rows with key-value pairs, calculator energy and data entries."""
    from ase.calculators.singlepoint import SinglePointCalculator
    from ase.db import connect

    db = connect(str(tmp_path / filename), type=kind)
    for k, atoms in enumerate(small_atoms):
        atoms.calc = SinglePointCalculator(atoms, energy=-5.0 * k)
        db.write(atoms, name=f"omol{k}", spin=k % 2 + 1, data={"charge": float(-k)})
    if hasattr(db, "close"):
        db.close()
    mols = load_path(tmp_path / filename, "asedb").mols
    assert list(mols.ids) == ["omol0", "omol1", "omol2", "omol3"]
    np.testing.assert_allclose(mols.properties["energy"], [0.0, -5.0, -10.0, -15.0])
    np.testing.assert_allclose(mols.properties["spin"], [1, 2, 1, 2])
    np.testing.assert_allclose(mols.properties["charge"], [0.0, -1.0, -2.0, -3.0])
    np.testing.assert_allclose(mols.positions_angstrom, np.concatenate([a.positions for a in small_atoms]))


@pytest.mark.parametrize("filename", ["q.db", "q.aselmdb"])
def test_our_writer_round_trips(tmp_path, qm9_small, filename):
    mols = qm9_small.subset(np.arange(25))
    write_asedb(tmp_path / filename, mols)
    back = load_path(tmp_path / filename, "asedb").mols
    assert list(back.ids) == list(mols.ids)
    assert list(back.smiles) == list(mols.smiles)
    assert set(back.properties.columns) == set(mols.properties.columns)
    np.testing.assert_allclose(back.properties[mols.properties.columns].to_numpy(), mols.properties.to_numpy())
    np.testing.assert_allclose(back.positions_angstrom, mols.positions_angstrom)


def test_not_a_database(tmp_path):
    (tmp_path / "x.db").write_bytes(b"\x00\x01junk" * 100)
    with pytest.raises(DatasetError, match="not an SQLite file"):
        load_path(tmp_path / "x.db", "asedb")
