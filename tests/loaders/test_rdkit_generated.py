import numpy as np

from orientscope.loaders.rdkit_generated import generate
from orientscope.science.frames import compute_frames

SMILES = ["CCO", "CC(=O)O", "c1ccccc1", "CCN(CC)CC", "OCC(O)CO", "CC(C)Cc1ccccc1", "C1CCCCC1O", "CC#N"]


def _axis_aligned(mols) -> np.ndarray:
    """Per molecule: True if every principal axis lies within ~18 degrees of a lab axis."""
    frames = compute_frames(mols.positions_angstrom, mols.offsets)
    return np.abs(frames.rotations).max(axis=2).min(axis=1) > 0.95


def test_seeded_and_reproducible(tmp_path):
    (tmp_path / "s.smi").write_text("smiles name\n" + "\n".join(f"{s} m{i}" for i, s in enumerate(SMILES)) + "\n")
    a = generate(tmp_path / "s.smi", seed=5).mols
    b = generate(tmp_path / "s.smi", seed=5).mols
    c = generate(tmp_path / "s.smi", seed=6).mols
    assert list(a.ids) == [f"m{i}" for i in range(len(SMILES))]
    assert a.smiles[0] == "CCO" and a.n_atoms[0] == 9
    np.testing.assert_array_equal(a.positions_angstrom, b.positions_angstrom)
    assert not np.allclose(a.positions_angstrom, c.positions_angstrom)


def test_default_embedding_is_axis_aligned_random_coords_are_not(qm9_small):
    smiles = list(qm9_small.smiles[100:160])
    default = _axis_aligned(generate(smiles, seed=1).mols)
    random = _axis_aligned(generate(smiles, seed=1, random_coords=True).mols)
    # Uniform poses put all three axes near lab axes for ~5% of molecules.
    assert default.mean() > 0.2
    assert random.mean() < 0.12


def test_bad_smiles_counted():
    loaded = generate([*SMILES * 3, "not-a-smiles"], seed=0, strict=False)
    assert loaded.n_skipped == 1 and "SMILES 25" in loaded.problems[0]
