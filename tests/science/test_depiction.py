"""2D depictions (backend/science/depiction.py): a SMILES's RDKit layout, and without one the canonical
pose seen down its third principal axis."""

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from orientscope.science.depiction import projection_svg, smiles_to_svg

# RDKit draws an atom with a label (not carbon) as an <path class='atom-i'> glyph, a bond as
# <path class='bond-k atom-i atom-j'>.
BOND = re.compile(r"class='bond-(\d+) atom-(\d+) atom-(\d+)'")


def _bonds(svg: str) -> set[tuple[int, int]]:
    return {tuple(sorted((int(a), int(b)))) for _, a, b in BOND.findall(svg)}


def test_a_smiles_is_drawn_as_an_svg_with_its_bonds():
    svg = smiles_to_svg("CCO")
    root = ET.fromstring(svg)  # well-formed XML
    assert root.tag.endswith("svg") and root.get("width") == "180px"
    assert _bonds(svg) == {(0, 1), (1, 2)}  # C-C, C-O
    assert ">O<" in svg or "atom-2" in svg


def test_an_unreadable_smiles_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="C1CC"):
        smiles_to_svg("C1CC")


def test_without_smiles_the_projection_draws_every_atom_of_the_pose_and_its_bonds():
    # water in a canonical pose: O at the origin, the hydrogens in the plane of axes 1 and 2
    z = np.array([8, 1, 1])
    pos = np.array([[0.0, 0.0, 0.0], [0.757, 0.586, 0.0], [-0.757, 0.586, 0.0]])
    svg = projection_svg(z, pos)
    ET.fromstring(svg)
    assert _bonds(svg) == {(0, 1), (0, 2)}  # O-H twice, perceived from the distances
    assert all(f"atom-{i}" in svg for i in range(3))  # the hydrogens are drawn, not implicit


def test_the_projection_drops_the_third_axis():
    # the same pose moved along axis 3: the same picture
    z = np.array([6, 8])
    a = projection_svg(z, np.array([[0.0, 0.0, 0.0], [1.2, 0.0, 0.0]]))
    b = projection_svg(z, np.array([[0.0, 0.0, 0.5], [1.2, 0.0, 0.5]]))
    assert _bonds(a) == _bonds(b) == {(0, 1)}
    coords = re.compile(r"M ([\d.]+),([\d.]+)")
    assert coords.findall(a) == coords.findall(b)


def test_the_projection_needs_one_position_per_atom():
    with pytest.raises(ValueError, match="2 atoms and 3 positions"):
        projection_svg(np.array([1, 1]), np.zeros((3, 3)))
