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
