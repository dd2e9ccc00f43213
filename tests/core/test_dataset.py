import numpy as np
import pandas as pd
import pytest

from orientscope.core.dataset import MoleculeSet, frame_dependent_properties, from_molecules, select_rows
from orientscope.core.errors import DatasetError
from tests.molecules import CO2, WATER


def _set(**kw):
    base = dict(
        atomic_numbers=[8, 1, 1, 6, 8, 8],
        positions_angstrom=np.vstack([WATER[1], CO2[1]]),
        offsets=[0, 3, 6],
        ids=["w", "c"],
    )
    base.update(kw)
    return MoleculeSet(**base)


def test_valid_set_exposes_columns():
    s = _set(properties=pd.DataFrame({"e": [1.0, 2.0]}))
    assert s.n_molecules == 2
    assert list(s.n_atoms) == [3, 3]
    assert list(s.molecule_index) == [0, 0, 0, 1, 1, 1]
    z, pos = s.atoms_of(1)
    assert list(z) == [6, 8, 8] and pos.dtype == np.float64
    assert s.index_of("c") == 1
    with pytest.raises(KeyError, match="'x'"):
        s.index_of("x")


def test_nan_coordinates_name_the_molecule():
    pos = np.vstack([WATER[1], CO2[1]])
    pos[4, 1] = np.nan
    with pytest.raises(DatasetError, match="molecule 'c' \\(index 1\\) has NaN"):
        _set(positions_angstrom=pos)


def test_inf_coordinates_rejected():
    pos = np.vstack([WATER[1], CO2[1]])
    pos[0, 0] = np.inf
    with pytest.raises(DatasetError, match="'w'"):
        _set(positions_angstrom=pos)


def test_empty_molecule_rejected():
    with pytest.raises(DatasetError, match="'c'.*no atoms"):
        _set(offsets=[0, 6, 6])


def test_mismatched_lengths_rejected():
    with pytest.raises(DatasetError, match="5 atomic numbers but 6 positions"):
        _set(atomic_numbers=[8, 1, 1, 6, 8])
    with pytest.raises(DatasetError, match="ids"):
        _set(ids=["only-one"])
    with pytest.raises(DatasetError, match="property table"):
        _set(properties=pd.DataFrame({"e": [1.0]}))
    with pytest.raises(DatasetError, match="duplicate molecule id 'a'"):
        _set(ids=["a", "a"])


def test_bad_atomic_number_rejected_naming_the_molecule_and_what_is_accepted():
    with pytest.raises(DatasetError, match=r"\(index 0\): dummy atom 'X' \(atomic number 0: a ghost, centroid"):
        _set(atomic_numbers=[8, 1, 0, 6, 8, 8])
    with pytest.raises(DatasetError, match=r"\(index 1\): atomic number 200 is not an element \(accepted: 1 to 118\)"):
        _set(atomic_numbers=[8, 1, 1, 6, 8, 200])


def test_subset_keeps_atoms_and_properties_aligned():
    s = _set(properties=pd.DataFrame({"e": [1.0, 2.0]}), smiles=["O", "O=C=O"])
    sub = s.subset([1])
    assert list(sub.ids) == ["c"] and list(sub.smiles) == ["O=C=O"]
    assert list(sub.atomic_numbers) == [6, 8, 8]
    np.testing.assert_array_equal(sub.positions_angstrom, CO2[1])
    assert sub.properties["e"].tolist() == [2.0]


def test_from_molecules_checks_each_molecule():
    with pytest.raises(DatasetError, match="'m2'.*2 elements but 3 positions"):
        from_molecules([WATER, ([6, 8], CO2[1])], ids=["m1", "m2"])


def test_select_rows_is_deterministic_and_spread():
    rows = select_rows(1000, 10)
    assert rows[0] == 0 and rows[-1] == 999 and len(rows) == 10
    assert np.array_equal(rows, select_rows(1000, 10))
    assert len(select_rows(5, None)) == 5


def test_frame_dependent_properties_are_declared_checked_and_kept():
    props = pd.DataFrame({"mu_x": [1.0, 2.0], "energy": [0.0, 1.0]})
    mols = _set(properties=props, frame_dependent=["mu_x"])
    assert mols.frame_dependent == frozenset({"mu_x"})
    assert mols.subset([1]).frame_dependent == {"mu_x"}
    assert mols.with_positions(mols.positions_angstrom + 1).frame_dependent == {"mu_x"}
    with pytest.raises(DatasetError, match=r"\['mu_y'\] are not properties"):
        _set(properties=props, frame_dependent=["mu_y"])
    assert frame_dependent_properties({"frame_dependent": ["a", "b"]}) == {"a", "b"}
    assert frame_dependent_properties({}) == frozenset()
