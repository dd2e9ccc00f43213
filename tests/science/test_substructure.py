import pytest

from orientscope.science.substructure import SubstructureIndex, search_smarts

SMILES = ["CCO", "CC=O", "c1ccccc1", "", "CC(=O)O", "not-smiles", "C#N"]


def test_smarts_finds_the_right_ids_with_and_without_prefilter():
    assert search_smarts(SMILES, "C=O", prefilter=True).tolist() == [1, 4]
    assert search_smarts(SMILES, "[OX2H]").tolist() == [0, 4]
    assert search_smarts(SMILES, "c1ccccc1", prefilter=False).tolist() == [2]
    index = SubstructureIndex(SMILES)
    result = index.search("[#6]")
    assert result.indices.tolist() == [0, 1, 2, 4, 6] and result.complete


TRICKY = [
    "[NH3+]CC([O-])=O",
    "C[C@H](N)C(=O)O",
    "c1cc[nH]c1",
    "O=[N+]([O-])c1ccccc1",
    "F/C=C/F",
    "[2H]C",
    "C1CC2CCC1C2",
]


@pytest.mark.parametrize("prefilter", [False, True])
def test_matches_agree_with_a_plain_rdkit_scan(qm9_small, prefilter):
    from rdkit import Chem

    smiles = list(qm9_small.smiles) + TRICKY
    mols = [Chem.MolFromSmiles(s) for s in smiles]
    index = SubstructureIndex(smiles, prefilter=prefilter)
    queries = ["C=O", "[#7]~[#6]~[#8]", "C1CC1", "[OH]", "C#N", "[R2]", "[nH]", "[N+]", "[O-]", "[C@H]", "[2H]", "[x3]"]
    for smarts in queries:
        pattern = Chem.MolFromSmarts(smarts)
        expected = [i for i, m in enumerate(mols) if m is not None and m.HasSubstructMatch(pattern)]
        assert index.search(smarts).indices.tolist() == expected, smarts
    n = len(qm9_small.smiles)
    assert {n, n + 3} <= set(index.search("[N+]").indices.tolist()) and n + 2 in index.search("[nH]").indices
    assert n + 1 in index.search("[C@H]").indices and n + 5 in index.search("[2H]").indices


def test_invalid_smarts_and_limits():
    with pytest.raises(ValueError, match="invalid SMARTS 'C\\(\\('"):
        search_smarts(SMILES, "C((")
    with pytest.raises(ValueError, match="non-empty"):
        search_smarts(SMILES, "  ")
    partial = SubstructureIndex(SMILES * 3).search("C", max_matches=2, block=7)
    assert not partial.complete and len(partial.indices) >= 2 and partial.n_scanned == 7
    stopped = SubstructureIndex(SMILES * 3).search("[#6]", timeout_s=-1.0, block=7)
    assert not stopped.complete and stopped.n_scanned == 7 and stopped.indices.tolist() == [0, 1, 2, 4, 6]
    with pytest.raises(ValueError, match="at most 500"):
        search_smarts(SMILES, "C" * 501)


def test_molecules_may_be_given_as_rdkit_molecules_or_none():
    from rdkit import Chem

    index = SubstructureIndex([Chem.MolFromSmiles("CC=O"), None, "C=O"])
    result = index.search("C=O")
    assert result.indices.tolist() == [0, 2] and result.complete and result.n_scanned == 3


def test_an_index_read_back_from_its_search_data_matches_as_the_one_it_was_made_from(qm9_small):
    """What an index holds, kept with a dataset, makes the same index (its screen included) without parsing a
    molecule again."""
    from dataclasses import replace

    from orientscope.science.substructure import search_data

    molecules = list(qm9_small.smiles[:300]) + TRICKY + SMILES
    data = search_data(molecules)
    assert data.valid.tolist()[-len(SMILES) :] == [True, True, True, False, True, False, True]
    assert data.smiles[-4] == "" and data.smiles[-5] == "c1ccccc1"  # RDKit's own spelling; "" where there is none
    built, read_back = SubstructureIndex(molecules), SubstructureIndex.from_search_data(data)
    assert read_back.prefilter and not built.prefilter and len(read_back) == len(molecules)
    for smarts in ("C=O", "c1ccccc1", "C1CCCCC1", "[#7;R]", "[N+]", "[C@H]", "[2H]", "[#6]", "[x3]", "[R2]"):
        assert read_back.search(smarts).indices.tolist() == built.search(smarts).indices.tolist(), smarts
    # without fingerprints, no screen; fingerprints of another RDKit are not mixed with this one's queries
    assert not SubstructureIndex.from_search_data(replace(data, patterns=[])).prefilter
    with pytest.raises(ValueError, match="pattern fingerprints of RDKit 2000.01.1 cannot screen"):
        SubstructureIndex.from_search_data(replace(data, rdkit="2000.01.1"))
