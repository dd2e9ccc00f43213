"""Hill formulas: per molecule, never depending on the other molecules of a set."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from orientscope.core.elements import hill_formula, hill_formulas

CH4 = [6, 1, 1, 1, 1]
HCL = [1, 17]
BH3 = [5, 1, 1, 1]


def _flat(molecules):
    z = np.concatenate([np.asarray(m, dtype=np.int64) for m in molecules]) if molecules else np.zeros(0, np.int64)
    offsets = np.concatenate([[0], np.cumsum([len(m) for m in molecules])])
    return z, offsets


def test_carbon_rule_is_per_molecule():
    assert hill_formulas(*_flat([CH4, HCL, BH3])).tolist() == ["CH4", "ClH", "BH3"]
    assert [hill_formula(m) for m in (CH4, HCL, BH3)] == ["CH4", "ClH", "BH3"]


def test_known_formulas():
    assert hill_formula([8, 1, 1]) == "H2O"
    assert hill_formula([6, 8, 8]) == "CO2"
    assert hill_formula([6] * 6 + [1] * 6) == "C6H6"
    assert hill_formula([6, 17, 17, 17, 17]) == "CCl4"
    assert hill_formulas(*_flat([])).tolist() == []


# Molecules drawn from a few elements around the carbon rule (H, B, C, N, O, Cl, Br).
molecules = st.lists(st.sampled_from([1, 5, 6, 7, 8, 17, 35]), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(st.lists(molecules, min_size=1, max_size=6), st.randoms(use_true_random=False))
def test_formula_is_the_same_alone_and_in_any_set(mol_list, rnd):
    alone = [hill_formula(m) for m in mol_list]
    assert hill_formulas(*_flat(mol_list)).tolist() == alone
    order = list(range(len(mol_list)))
    rnd.shuffle(order)
    shuffled = hill_formulas(*_flat([mol_list[i] for i in order])).tolist()
    assert shuffled == [alone[i] for i in order]
    for i, m in enumerate(mol_list):
        assert hill_formulas(*_flat([m])).tolist() == [alone[i]]


def test_a_set_of_many_elements_gets_the_same_formulas():
    # 80 single ions of distinct elements plus molecules with many atoms: the compositions no longer fit in one
    # 63-bit number (80 elements, up to 60 of one), so the set takes the row-wise path; each formula is still its own.
    ions = [[z] for z in range(1, 81)]
    big = [[6] * 60 + [1] * 50 + [26], [8, 1, 1], [6, 8, 8], [6] * 6 + [1] * 6]
    mol_list = ions + big + ions[:3]
    assert hill_formulas(*_flat(mol_list)).tolist() == [hill_formula(m) for m in mol_list]
    assert hill_formulas(*_flat(big)).tolist() == ["C60H50Fe", "H2O", "CO2", "C6H6"]
