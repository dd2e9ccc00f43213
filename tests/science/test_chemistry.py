import numpy as np

from orientscope.core.dataset import from_molecules
from orientscope.science.chemistry import FP_WORDS, compute_chemistry, pack_bits

WATER = ([8, 1, 1], [[0, 0, 0.1173], [0, 0.7572, -0.4692], [0, -0.7572, -0.4692]])
METHANE = (
    [6, 1, 1, 1, 1],
    [[0, 0, 0], [0.629, 0.629, 0.629], [-0.629, -0.629, 0.629], [-0.629, 0.629, -0.629], [0.629, -0.629, -0.629]],
)
HE_PAIR = ([2, 2], [[0, 0, 0], [0, 0, 0.3]])


def test_formulas_follow_hill_order_per_molecule():
    mols = from_molecules([WATER, METHANE])
    assert compute_chemistry(mols).formula.tolist() == ["H2O", "CH4"]


def test_smiles_used_and_missing_smiles_perceived_from_3d():
    mols = from_molecules([WATER, METHANE, METHANE], smiles=["O", "", "CC"])
    chem = compute_chemistry(mols)
    assert chem.source.tolist() == ["smiles", "3d", "3d"]  # "CC" disagrees with one carbon -> perceived
    assert chem.ok.all() and chem.smiles.tolist() == ["O", "C", "C"]
    assert "heavy atoms" in chem.error[2]
    assert chem.fingerprints.shape == (3, FP_WORDS) and (chem.fingerprints[1] == chem.fingerprints[2]).all()


def test_failed_molecule_is_flagged_not_dropped():
    chem = compute_chemistry(from_molecules([WATER, HE_PAIR], smiles=["O", "not a smiles"]))
    assert len(chem) == 2 and chem.ok.tolist() == [True, False]
    assert chem.source[1] == "failed" and "unparsable SMILES" in chem.error[1]
    assert not chem.fingerprints[1].any() and chem.formula[1] == "He2"


def test_scaffolds_and_packed_bits():
    from rdkit import Chem

    from orientscope.science.chemistry import murcko_scaffolds

    assert murcko_scaffolds(Chem.MolFromSmiles("Cc1ccccc1")) == ("c1ccccc1", "C1CCCCC1")
    assert murcko_scaffolds(Chem.MolFromSmiles("CCO")) == ("", "")
    assert murcko_scaffolds(Chem.MolFromSmiles("CC1CCC(=O)N1")) == ("O=C1CCCN1", "C1CCCC1")
    words = pack_bits(np.array([2, 1]), np.array([0, 65, 2047]))
    assert words[0, 0] == 1 and words[0, 1] == 2 and words[1, 31] == np.uint64(1) << np.uint64(63)


def test_real_qm9_molecules_get_scaffolds_and_agree_between_smiles_and_3d(qm9_small):
    mols = qm9_small.subset(range(0, 400, 20))
    chem = compute_chemistry(mols)
    assert chem.ok.all() and (chem.source == "smiles").all()
    ring = chem.scaffold != ""
    assert ring.any() and (chem.generic_scaffold[ring] != "").all()
    no_smiles = from_molecules([mols.atoms_of(i) for i in range(mols.n_molecules)], ids=mols.ids)
    perceived = compute_chemistry(no_smiles)
    assert (perceived.source == "3d").all() and perceived.ok.all()
    # Bonds perceived from the DFT geometry give the same graph as QM9's SMILES for most molecules.
    same = (perceived.fingerprints == chem.fingerprints).all(axis=1)
    assert same.mean() >= 0.8


def test_chunks_on_a_map_give_what_one_piece_gives(qm9_small):
    import dataclasses

    mols = qm9_small.subset(np.arange(90))
    off = mols.offsets
    mols = from_molecules(  # a missing SMILES and a rejected one: perceived from 3D in their chunks too
        [(mols.atomic_numbers[a:b], mols.positions_angstrom[a:b]) for a, b in zip(off[:-1], off[1:], strict=True)],
        smiles=["", "not a smiles", *list(mols.smiles[2:])],
    )
    whole = compute_chemistry(mols)
    calls = []

    def mapper(fn, items):
        calls.append(len(items))
        return [fn(item) for item in items[::-1]][::-1]  # computed out of order, answered in order

    parts = compute_chemistry(mols, mapper, 7)
    assert calls == [7] and whole.source[:2].tolist() == ["3d", "3d"]
    for field in dataclasses.fields(whole):
        np.testing.assert_array_equal(getattr(parts, field.name), getattr(whole, field.name))
    empty = compute_chemistry(mols.subset(np.arange(0)), mapper, 3)
    assert len(empty) == 0 and empty.fingerprints.shape == (0, FP_WORDS)
