import numpy as np
import pytest

from orientscope.core.errors import DatasetError
from orientscope.core.limits import LimitExceeded, Limits
from orientscope.loaders.detect import load_path
from orientscope.loaders.npz import write_npz


def _arrays(n: int = 30, seed: int = 0):
    rng = np.random.default_rng(seed)
    counts = rng.integers(2, 6, size=n)
    z = rng.integers(1, 10, size=counts.sum())
    pos = rng.normal(size=(counts.sum(), 3))
    return z, pos, counts


@pytest.mark.parametrize("compressed", [False, True])
def test_round_trip(tmp_path, compressed):
    z, pos, counts = _arrays()
    save = np.savez_compressed if compressed else np.savez
    save(tmp_path / "a.npz", z=z, pos=pos, n_atoms=counts, energy=np.arange(30.0), smiles=np.array(["C"] * 30))
    mols = load_path(tmp_path / "a.npz", "npz").mols
    np.testing.assert_array_equal(mols.atomic_numbers, z)
    np.testing.assert_array_equal(mols.positions_angstrom, pos)
    np.testing.assert_array_equal(mols.n_atoms, counts)
    np.testing.assert_array_equal(mols.properties["energy"], np.arange(30.0))
    assert list(mols.ids[:2]) == ["1", "2"] and mols.smiles[0] == "C"
    write_npz(tmp_path / "b.npz", mols)
    back = load_path(tmp_path / "b.npz", "npz").mols
    assert list(back.ids) == list(mols.ids)
    np.testing.assert_array_equal(back.positions_angstrom, mols.positions_angstrom)


def test_nan_molecule_skipped_unless_strict(tmp_path):
    z, pos, counts = _arrays()
    pos[counts[:3].sum()] = np.nan  # first atom of molecule index 3
    np.savez(tmp_path / "a.npz", z=z, pos=pos, n_atoms=counts)
    loaded = load_path(tmp_path / "a.npz", "npz")
    assert loaded.mols.n_molecules == 29 and loaded.n_skipped == 1 and "4" not in loaded.mols.ids
    assert "molecule '4' (index 3): NaN" in loaded.problems[0]
    with pytest.raises(DatasetError, match="molecule '4'.*strict"):
        load_path(tmp_path / "a.npz", "npz", strict=True)


def test_wrong_counts_and_missing_arrays(tmp_path):
    z, pos, counts = _arrays()
    np.savez(tmp_path / "a.npz", z=z, pos=pos, n_atoms=counts + 1)
    with pytest.raises(DatasetError, match=r"n_atoms sums to 142 but z has 112 entries \(wrong atom counts\)"):
        load_path(tmp_path / "a.npz", "npz")
    np.savez(tmp_path / "b.npz", z=z, positions=pos, n_atoms=counts)
    with pytest.raises(DatasetError, match=r"missing arrays \['pos'\]"):
        load_path(tmp_path / "b.npz", "npz")


def test_limits_are_checked_from_the_headers(tmp_path):
    z, pos, counts = _arrays()
    np.savez(tmp_path / "a.npz", z=z, pos=pos, n_atoms=counts)
    with pytest.raises(LimitExceeded, match="more than 10 molecules"):
        load_path(tmp_path / "a.npz", "npz", limits=Limits(max_molecules=10))
    with pytest.raises(LimitExceeded, match="atoms in one molecule"):
        load_path(tmp_path / "a.npz", "npz", limits=Limits(max_atoms_per_molecule=3))


def test_truncated_and_junk(tmp_path):
    z, pos, counts = _arrays(2000)
    np.savez(tmp_path / "a.npz", z=z, pos=pos, n_atoms=counts)
    data = (tmp_path / "a.npz").read_bytes()
    (tmp_path / "t.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError):
        load_path(tmp_path / "t.npz", "npz")
    (tmp_path / "j.npz").write_bytes(np.random.default_rng(0).bytes(5000))
    with pytest.raises(DatasetError, match="not an NPZ"):
        load_path(tmp_path / "j.npz", "npz")
