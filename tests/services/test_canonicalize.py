"""Parsing and validating user molecules for stateless canonicalisation."""

import numpy as np
import pytest

from orientscope.services.canonicalize import canonicalize, parse_molecule
from orientscope.services.errors import InvalidInput


def test_parse_xyz():
    z, positions = parse_molecule(xyz="2\nwater-ish\nO 0 0 0\nH 0.96 0 0\nextra lines are ignored\n")
    assert z.tolist() == [8, 1] and positions.tolist() == [[0, 0, 0], [0.96, 0, 0]]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "line 1"),
        ("x\n", "line 1"),
        ("2\n\nO 0 0 0\n", "line 1.*1 of the 2 atom lines"),
        ("1\n\nO 0 0\n", "line 3"),
        ("1\n\nO 0 a 0\n", "line 3"),
    ],
)
def test_parse_xyz_errors_name_the_line(text, message):
    with pytest.raises(InvalidInput, match=message) as err:
        parse_molecule(xyz=text)
    assert err.value.loc == ("body", "xyz")


def test_atom_limit_follows_the_environment(monkeypatch):
    monkeypatch.setenv("ORIENTSCOPE_MAX_ATOMS_PER_MOLECULE", "3")
    parse_molecule(["C"] * 3, np.zeros((3, 3)).tolist())
    with pytest.raises(InvalidInput, match="at most 3 atoms"):
        parse_molecule(["C"] * 4, np.zeros((4, 3)).tolist())


def test_atomic_numbers_and_symbols_mix():
    z, _ = parse_molecule(["O", 1, "h"], [[0, 0, 0], [1, 0, 0], [0, 1, 0]])
    assert list(z) == [8, 1, 1]


def test_single_atom_is_degenerate():
    out = canonicalize(["He"], [[1.0, 2.0, 3.0]])
    assert out["degenerate"] is True and out["degenerate_reason"] == "single_atom"
    assert out["canonical_positions"] == [[0.0, 0.0, 0.0]]
    assert out["rotation"] == np.eye(3).tolist()
