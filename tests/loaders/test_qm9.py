import numpy as np
import pytest

from orientscope.loaders.qm9 import PROPERTY_UNITS, parse_float_lists, parse_symbol_lists


def test_parsers_are_exact():
    assert parse_float_lists(["[[1.5,-2,3e-1]]", "[[4,5,6],[7,8,9.25]]"]).tolist() == [
        1.5,
        -2,
        0.3,
        4,
        5,
        6,
        7,
        8,
        9.25,
    ]
    assert parse_symbol_lists(["['C','H']", "['O','F','H']"]).tolist() == [6, 1, 8, 9, 1]
    with pytest.raises(ValueError, match="unknown element"):
        parse_symbol_lists(["['C','Qx']"])


def test_small_slice_keeps_original_coordinates(qm9_small):
    m = qm9_small
    assert m.n_molecules == 400
    # QM9 index 1 is methane, with its original coordinates to full precision.
    assert m.ids[0] == "1" and m.smiles[0] == "C"
    z, pos = m.atoms_of(0)
    assert list(z) == [6, 1, 1, 1, 1]
    np.testing.assert_allclose(pos[0], [-0.0126981359, 1.0858041578, 0.0080009958], atol=0)
    ids = m.ids.astype(int)
    assert (np.diff(ids) > 0).all()
    assert set(PROPERTY_UNITS) <= set(m.properties.columns)
    assert m.property_units["zpve"] == "Ha" and m.property_units["cv"] == "cal/(mol K)"
    # ZPVE of methane from the QM9 paper's table: 0.044749 Ha.
    assert m.properties["zpve"].iloc[0] == pytest.approx(0.044749)
    assert m.properties.notna().all().all()


def test_qm9_declares_its_frame_dependent_properties(qm9_small):
    assert qm9_small.frame_dependent == {f"alpha_{c}" for c in ("xx", "xy", "xz", "yy", "yz", "zz")}
