"""2D depictions of one molecule as SVG, drawn with RDKit: from its SMILES, or, without one, as the
projection of its canonical 3D pose onto the plane of its first two principal axes.

The map's hover preview shows them (``frontend_assets/hover_preview.js``); they are small, so the
drawing is plain (no title, transparent background) and the caption is left to the page.
"""

from __future__ import annotations

import numpy as np

WIDTH_PX = 180
HEIGHT_PX = 140


def _svg(mol, width: int, height: int, prepare: bool) -> str:
    from rdkit.Chem.Draw import rdMolDraw2D

    drawer = rdMolDraw2D.MolDraw2DSVG(int(width), int(height))
    options = drawer.drawOptions()
    options.clearBackground = False  # the overlay's own background shows through
    options.padding = 0.08
    options.prepareMolsBeforeDrawing = prepare
    drawer.DrawMolecule(mol)
    drawer.FinishDrawing()
    return drawer.GetDrawingText()


def smiles_to_svg(smiles: str, width: int = WIDTH_PX, height: int = HEIGHT_PX) -> str:
    """The SVG text of ``smiles`` laid out in 2D by RDKit.

    Raises ``ValueError`` naming the SMILES if RDKit cannot parse it.
    """
    from rdkit import Chem
    from rdkit.Chem import rdDepictor

    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        raise ValueError(f"RDKit cannot parse the SMILES {smiles!r}")
    rdDepictor.Compute2DCoords(mol)
    return _svg(mol, width, height, prepare=True)


def projection_svg(
    atomic_numbers: np.ndarray, canonical_positions_angstrom: np.ndarray, width: int = WIDTH_PX, height: int = HEIGHT_PX
) -> str:
    """The SVG text of a pose seen down its third principal axis: atoms at (x, y) of the canonical pose.

    atomic_numbers : (n_atoms,) int
    canonical_positions_angstrom : (n_atoms, 3) float, the canonical pose (principal axes 1, 2, 3 = x, y, z)

    Bonds are perceived from the 3D distances (connectivity only); atoms are drawn without bonds where
    that fails. Every atom is kept, hydrogens included, so that the drawing is the pose's shape.
    """
    from rdkit import Chem
    from rdkit.Chem import rdDetermineBonds

    z = np.asarray(atomic_numbers, np.int64).ravel()
    pos = np.asarray(canonical_positions_angstrom, np.float64).reshape(-1, 3)
    if len(z) != len(pos) or not len(z):
        raise ValueError(f"need one position per atom, got {len(z)} atoms and {len(pos)} positions")
    rw = Chem.RWMol()
    for zi in z:
        atom = Chem.Atom(int(zi))
        atom.SetNoImplicit(True)  # the pose's atoms are all there is: no implicit hydrogens drawn
        rw.AddAtom(atom)
    mol = rw.GetMol()
    conf = Chem.Conformer(len(z))
    for i, p in enumerate(pos):
        conf.SetAtomPosition(i, p.tolist())
    mol.AddConformer(conf, assignId=True)
    try:
        rdDetermineBonds.DetermineConnectivity(mol)
    except (ValueError, RuntimeError):
        pass  # atoms alone still show the pose
    flat = mol.GetConformer()
    for i, p in enumerate(pos):
        flat.SetAtomPosition(i, (float(p[0]), float(p[1]), 0.0))
    flat.Set3D(False)
    return _svg(mol, width, height, prepare=False)
