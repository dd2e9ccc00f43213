"""A molecule's total charge as the file gives it: read by every loader, kept by the set and the store."""

from __future__ import annotations

import numpy as np
import pytest

from orientscope.core.dataset import concat_molecule_sets, from_molecules
from orientscope.core.errors import DatasetError
from orientscope.loaders.asedb import write_asedb
from orientscope.loaders.base import charge_value
from orientscope.loaders.detect import load_path
from orientscope.loaders.extxyz import write_extxyz
from orientscope.loaders.npz import write_npz
from orientscope.loaders.parquet_orientations import write_parquet
from orientscope.loaders.sdf import write_sdf
from orientscope.store.datasets import load_dataset, write_molecule_tables
from orientscope.store.shards import save_sharded

ACETATE = ([6, 8, 8, 6, 1, 1, 1], [[-0.07, 0, 0], [-0.68, 1.06, 0], [-0.68, -1.06, 0], [1.44, 0, 0], [1.8, 0, 1.03],
                                   [1.8, -0.89, -0.51], [1.8, 0.89, -0.51]])  # fmt: skip
AMMONIUM = ([7, 1, 1, 1, 1], [[0, 0, 0], [0.6, 0.6, 0.6], [-0.6, -0.6, 0.6], [-0.6, 0.6, -0.6], [0.6, -0.6, -0.6]])
WATER = ([8, 1, 1], [[0, 0, 0.117], [0, 0.757, -0.469], [0, -0.757, -0.469]])


def _xyz_frame(z, pos, comment: str) -> str:
    symbols = {1: "H", 6: "C", 7: "N", 8: "O"}
    atoms = "".join(f"{symbols[a]} {x} {y} {w}\n" for a, (x, y, w) in zip(z, pos, strict=True))
    return f"{len(z)}\n{comment}\n{atoms}"


def test_charge_value_takes_whole_numbers_only():
    assert charge_value(-1) == -1.0 and charge_value("2") == 2.0 and charge_value(np.float64(0.9999)) == 1.0
    for unknown in (0.5, "minus one", None, float("nan"), True):
        assert np.isnan(charge_value(unknown)), unknown


def test_extxyz_charge_is_read_and_stays_a_property(tmp_path):
    path = tmp_path / "ions.extxyz"
    path.write_text(
        _xyz_frame(*ACETATE, "id=acetate charge=-1 energy=-2.5")
        + _xyz_frame(*AMMONIUM, "id=ammonium total_charge=1")
        + _xyz_frame(*WATER, "id=water")
    )
    mols = load_path(path).mols
    np.testing.assert_array_equal(mols.charges[:2], [-1, 1])
    assert np.isnan(mols.charges[2])  # no charge in the file: unknown, not 0
    # "charge" is also a property as written; "total_charge" is the charge only.
    assert list(mols.properties.columns) == ["charge", "energy"]
    assert mols.properties["charge"].iloc[0] == -1 and np.isnan(mols.properties["charge"].iloc[1])


def test_extxyz_charge_from_per_atom_initial_charges(tmp_path):
    path = tmp_path / "partial.extxyz"
    z, pos = ACETATE
    charges = [0.7, -0.8, -0.9, -0.3, 0.1, 0.1, 0.1]  # sums to -1.0 up to float rounding
    atoms = "".join(
        f"{'HCNO'[[1, 6, 7, 8].index(a)]} {x} {y} {w} {q}\n" for a, (x, y, w), q in zip(z, pos, charges, strict=True)
    )
    path.write_text(f"7\nProperties=species:S:1:pos:R:3:initial_charges:R:1 id=acetate\n{atoms}")
    assert load_path(path).mols.charges.tolist() == [-1.0]


SDF_ZWITTERION = """glycine
  test

  5  4  0  0  0  0  0  0  0  0999 V2000
    0.0000    0.0000    0.0000 N   0  0  0  0  0  0  0  0  0  0  0  0
    1.4700    0.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0
    2.0000    1.4200    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0
    1.3000    2.4200    0.0000 O   0  0  0  0  0  0  0  0  0  0  0  0
    3.2500    1.5200    0.0000 O   0  0  0  0  0  0  0  0  0  0  0  0
  1  2  1  0
  2  3  1  0
  3  4  2  0
  3  5  1  0
M  CHG  2   1   1   5  -1
M  END
$$$$
acetate
  test

  4  3  0  0  0  0  0  0  0  0999 V2000
   -0.0720    0.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0
   -0.6820    1.0560    0.0000 O   0  0  0  0  0  0  0  0  0  0  0  0
   -0.6820   -1.0560    0.0000 O   0  5  0  0  0  0  0  0  0  0  0  0
    1.4350    0.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0
  1  2  2  0
  1  3  1  0
  1  4  1  0
M  END
$$$$
atoms only
  test

  1  0  0  0  0  0  0  0  0  0999 V2000
    0.0000    0.0000    0.0000 Na  0  0  0  0  0  0  0  0  0  0  0  0
M  END
>  <charge>
1

$$$$
"""


def test_sdf_charge_is_the_sum_of_formal_charges(tmp_path):
    path = tmp_path / "charged.sdf"
    path.write_text(SDF_ZWITTERION)
    mols = load_path(path).mols
    # M  CHG (+1 and -1: a zwitterion is neutral overall), the atom line's charge field (5 is -1),
    # and an atoms-only block's charge SD field (which stays a property).
    assert mols.charges.tolist() == [0.0, -1.0, 1.0]
    assert mols.smiles.tolist()[:2] == ["[NH3+]CC(=O)[O-]", "CC(=O)[O-]"]
    assert list(mols.properties.columns) == ["charge"]


def test_asedb_charge_from_data_or_initial_charges(tmp_path):
    from ase import Atoms
    from ase.db import connect

    path = tmp_path / "ions.db"
    db = connect(str(path), use_lock_file=False)
    db.write(Atoms(numbers=ACETATE[0], positions=ACETATE[1]), name="acetate", data={"charge": -1})
    ammonium = Atoms(numbers=AMMONIUM[0], positions=AMMONIUM[1], charges=[-0.6, 0.4, 0.4, 0.4, 0.4])
    db.write(ammonium, name="ammonium")
    db.write(Atoms(numbers=WATER[0], positions=WATER[1]), name="water")
    mols = load_path(path).mols
    assert mols.charges[:2].tolist() == [-1.0, 1.0] and np.isnan(mols.charges[2])


@pytest.mark.parametrize(
    ("suffix", "write"),
    [("extxyz", write_extxyz), ("sdf", write_sdf), ("npz", write_npz), ("db", write_asedb), ("parquet", write_parquet)],
)
def test_every_writer_round_trips_the_charges(tmp_path, suffix, write):
    mols = from_molecules([ACETATE, AMMONIUM, WATER], ids=["a", "b", "c"], charges=[-1, 1, None])
    write(tmp_path / f"out.{suffix}", mols)
    back = load_path(tmp_path / f"out.{suffix}").mols
    np.testing.assert_array_equal(back.charges, [-1.0, 1.0, np.nan])
    assert list(back.properties.columns) == []  # the charge is not turned into a property on the way


def test_the_set_keeps_charges_through_subset_positions_and_concat():
    mols = from_molecules([ACETATE, AMMONIUM, WATER], ids=["a", "b", "c"], charges=[-1, 1, None])
    assert mols.subset([2, 0]).charges[1] == -1 and np.isnan(mols.subset([2, 0]).charges[0])
    assert mols.with_positions(mols.positions_angstrom + 1).charges[1] == 1
    plain = from_molecules([WATER], ids=["d"])
    both = concat_molecule_sets([mols, plain])
    np.testing.assert_array_equal(both.charges, [-1, 1, np.nan, np.nan])
    assert concat_molecule_sets([plain, plain.subset([])]).charges is None


def test_a_fractional_total_charge_is_refused_naming_the_molecule():
    with pytest.raises(DatasetError, match=r"molecule 'b' \(index 1\) has a total charge of 0.5; .*whole number"):
        from_molecules([WATER, WATER], ids=["a", "b"], charges=[0, 0.5])


def test_the_store_keeps_charges_and_an_old_table_reads_as_unknown(tmp_path):
    mols = from_molecules([ACETATE, AMMONIUM], ids=["a", "b"], charges=[-1, 1])
    save_sharded(tmp_path, "ions", mols, "Ions", "test")
    assert load_dataset(tmp_path, "ions").charges.tolist() == [-1.0, 1.0]
    # A store written before charges were read has no total_charge column.
    save_sharded(tmp_path, "old", from_molecules([ACETATE], ids=["a"]), "Old", "test")
    assert load_dataset(tmp_path, "old").charges is None
    write_molecule_tables(tmp_path / "plain", from_molecules([ACETATE], ids=["a"]))
    import pyarrow.parquet as pq

    assert "total_charge" not in pq.read_schema(tmp_path / "plain" / "molecules.parquet").names
