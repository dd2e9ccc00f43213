"""Bonds from 3D coordinates, one molecule at a time and under a budget: the one guarded path.

Every caller that needs bonds for bare atoms (the chemistry stage, SMARTS search, the SDF writer) calls
:func:`perceive_bonds`. It never raises for the molecule's chemistry: a molecule whose graph cannot be
built comes back without one, with a reason code (:data:`NO_GRAPH_REASONS`) and RDKit's own words.

1. **Connectivity** from covalent radii (RDKit's connect-the-dots). An atom left with more neighbours
   than any valence of its element allows (a P–P contact of 2.58 Å across a pyrophosphate in ATP's
   ideal coordinates) loses its longest contacts, relative to the two covalent radii, until it fits.
2. **Bond orders** at the molecule's total charge (from the file; 0 where it gives none) by RDKit's
   port of xyz2mol. Its search walks the combinations of atom valences and, on some large charged
   ligands (propionyl-CoA, 93 atoms), runs for minutes. It is capped at
   :func:`bond_order_iterations` steps, sized to the atom count so that the cap costs at most about
   ``BOND_ORDER_BUDGET_S`` of CPU at any size: a molecule whose search needs more gets no graph,
   reason ``budget``. One step costs 10–56 µs at 67–184 atoms on the PDB's ligand dictionary and
   ~0.1·n + 5e-4·n² µs on tiled copies of 94 to 1,504 atoms; the cap takes 0.15·n + 9e-4·n² µs,
   at or above every one measured. Of 8,653 sampled dictionary components, 8,637 finish their
   search in under 0.45 s of CPU; 6 need 0.74–2.0 s and 10 more than 20 s: the cap gives up on
   those 16. This cap alone bounds every molecule, so no worker process is needed to kill a
   runaway call.
3. **Metals**, for which RDKit has no valence rules: the metal–ligand contacts are set aside, the
   ligands get bond orders on their own, the metals take the rest of the total charge, and the
   contacts come back as dative bonds (ligand → metal). The ligands' charge is the first for which
   bond orders exist among at most ``METAL_CHARGE_TRIES`` (each with its share of the budget),
   tried from the metals at +2 each (the commonest state in ligand chemistry: Zn, Mg, Fe, Cu, Mn,
   Ca) outwards, keeping the ligands' electrons even. Where none works or RDKit will not sanitise
   the result, reason ``metal``.

RDKit's bond-order search catches Ctrl-C (SIGINT) itself, stops and returns as if it had finished,
and the signal never reaches Python. A search that returns without having perceived stereo (which
the finished search always does) was interrupted so: :func:`perceive_bonds` raises KeyboardInterrupt
for it, so that Ctrl-C stops an ingest instead of skipping one molecule's bond orders.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# Elements that are not metals (H, the noble gases, B, C, N, O, the halogens, Si, P, S, Ge, As, Se, Sb, Te, At).
NON_METALS = frozenset({1, 2, 5, 6, 7, 8, 9, 10, 14, 15, 16, 17, 18, 32, 33, 34, 35, 36, 51, 52, 53, 54, 85, 86})
BOND_ORDER_BUDGET_S = 1.0
ITERATION_COST_US = (0.15, 9e-4)  # one search step costs at most a·n + b·n² µs for n atoms (see above)
METAL_CHARGE_TRIES = 4
TYPICAL_METAL_CHARGE = 2
# Most neighbours an atom of each element may have: the largest valence RDKit's bond-order search allows it.
MAX_NEIGHBOURS = {1: 1, 5: 4, 6: 4, 7: 4, 8: 3, 9: 1, 14: 4, 15: 5, 16: 6, 17: 1, 32: 4, 35: 1, 53: 1}

NO_GRAPH_REASONS = {
    "metal": "has a metal, and no ligand charge let RDKit place it with dative bonds",
    "charge": "no bond orders fit the total charge the file gives",
    "charge_unknown": "no bond orders fit charge 0 (the file gives no charge, so 0 was assumed)",
    "budget": f"the bond-order search did not finish within its budget (about {BOND_ORDER_BUDGET_S} s of CPU)",
    "valence": "an atom has more bonded neighbours than its element allows (atoms too close?)",
    "element": "an element RDKit has no valences for",
    "rdkit": "another RDKit step failed (sanitising, SMILES, scaffold or fingerprint)",
}


@dataclass(frozen=True)
class Bonds:
    """What :func:`perceive_bonds` found for one molecule.

    mol : RDKit molecule with every atom (hydrogens included, in the input order), bonds and formal
        charges; None if no graph could be built
    reason : "" or a key of :data:`NO_GRAPH_REASONS`
    message : RDKit's words for the failure ("" if none)
    """

    mol: object | None
    reason: str = ""
    message: str = ""


def bond_order_iterations(n_atoms: int, budget_s: float = BOND_ORDER_BUDGET_S) -> int:
    """Steps of the bond-order search that cost about ``budget_s`` of CPU for a molecule of ``n_atoms``."""
    linear, quadratic = ITERATION_COST_US
    step_us = linear * n_atoms + quadratic * n_atoms**2
    return max(1, int(budget_s * 1e6 / max(step_us, 1e-9)))


def atoms_mol(atomic_numbers, positions_angstrom):
    """An RDKit molecule of bare atoms (no bonds, no implicit hydrogens) with one 3D conformer."""
    from rdkit import Chem
    from rdkit.Geometry import Point3D

    rw = Chem.RWMol()
    for z in np.asarray(atomic_numbers).reshape(-1):
        atom = Chem.Atom(int(z))
        atom.SetNoImplicit(True)  # the file's atoms are all there is
        rw.AddAtom(atom)
    conf = Chem.Conformer(rw.GetNumAtoms())
    for k, (x, y, w) in enumerate(np.asarray(positions_angstrom, np.float64).reshape(-1, 3)):
        conf.SetAtomPosition(k, Point3D(float(x), float(y), float(w)))
    mol = rw.GetMol()
    mol.AddConformer(conf, assignId=True)
    return mol


def failure_reason(message: str, has_metal: bool, charge_known: bool) -> str:
    """The :data:`NO_GRAPH_REASONS` code of a perception failure, from RDKit's message."""
    if has_metal:
        return "metal"
    if "Max Iterations" in message:
        return "budget"
    if "does not match input" in message:
        return "charge" if charge_known else "charge_unknown"
    if "no valences defined" in message:
        return "element"
    if "valence" in message.lower():
        return "valence"
    return "rdkit"


def perceive_bonds(atomic_numbers, positions_angstrom, charge: float = math.nan,
                   budget_s: float = BOND_ORDER_BUDGET_S) -> Bonds:  # fmt: skip
    """Bonds and formal charges of one molecule from its atoms and coordinates (see the module's notes).

    atomic_numbers : (n,) int; positions_angstrom : (n, 3) float
    charge : total charge in e, NaN if unknown (0 is assumed, and a failure says so)
    """
    from rdkit.Chem import rdDetermineBonds

    z = np.asarray(atomic_numbers).reshape(-1)
    known = not math.isnan(charge)
    total = int(charge) if known else 0
    metals = [i for i, a in enumerate(z.tolist()) if a not in NON_METALS]
    try:
        mol = atoms_mol(z, positions_angstrom)
        if len(z) == 1:
            return Bonds(_single_atom(mol, total))
        rdDetermineBonds.DetermineConnectivity(mol)
        mol = _prune_contacts(mol)
        iterations = bond_order_iterations(len(z), budget_s)
        if metals:
            return Bonds(_with_metals(mol, total, metals, iterations))
        _bond_orders(mol, total, iterations)
        return Bonds(mol)
    except Exception as exc:  # RDKit raises several unrelated types; KeyboardInterrupt passes
        message = str(exc).strip() or type(exc).__name__
        return Bonds(None, failure_reason(message, bool(metals), known), message)


def _bond_orders(mol, charge: int, iterations: int) -> None:
    """RDKit's bond-order search on ``mol`` (connectivity set), in place; KeyboardInterrupt if it caught Ctrl-C."""
    from rdkit.Chem import rdDetermineBonds

    rdDetermineBonds.DetermineBondOrders(mol, charge=charge, embedChiral=True, maxIterations=iterations)
    if not mol.HasProp("_StereochemDone"):  # set by the stereo step every finished search ends with
        raise KeyboardInterrupt("bond-order search interrupted (RDKit caught the Ctrl-C)")


def _prune_contacts(mol):
    """``mol`` without the longest contacts (distance over the sum of covalent radii) of atoms that have more
    neighbours than :data:`MAX_NEIGHBOURS` allows; ``mol`` itself where none has."""
    from rdkit import Chem

    def over(m) -> list[int]:
        return [a.GetIdx() for a in m.GetAtoms() if a.GetDegree() > MAX_NEIGHBOURS.get(a.GetAtomicNum(), 99)]

    crowded = over(mol)
    if not crowded:
        return mol
    table = Chem.GetPeriodicTable()
    pos = mol.GetConformer().GetPositions()
    rw = Chem.RWMol(mol)
    while crowded:
        atom = rw.GetAtomWithIdx(crowded[0])

        def stretch(bond) -> float:
            a, b = bond.GetBeginAtom(), bond.GetEndAtom()
            radii = table.GetRcovalent(a.GetAtomicNum()) + table.GetRcovalent(b.GetAtomicNum())
            return float(np.linalg.norm(pos[a.GetIdx()] - pos[b.GetIdx()])) / radii

        longest = max(atom.GetBonds(), key=stretch)
        rw.RemoveBond(longest.GetBeginAtomIdx(), longest.GetEndAtomIdx())
        crowded = over(rw)
    return rw.GetMol()


def _single_atom(mol, charge: int):
    from rdkit import Chem

    mol.GetAtomWithIdx(0).SetFormalCharge(charge)
    Chem.SanitizeMol(mol)
    return mol


def _ligand_charges(total: int, ligand_electrons: int, n_metals: int) -> list[int]:
    """Ligand charges to try: ``total`` (neutral metals) first, then ``total - k`` for the metals' charge k
    nearest ``TYPICAL_METAL_CHARGE`` each (ties to the lower), where the ligands keep an even number of
    electrons; at most ``METAL_CHARGE_TRIES``."""
    typical = TYPICAL_METAL_CHARGE * n_metals
    ks = sorted(range(4 * n_metals + 2), key=lambda k: (k != 0, abs(k - typical), k))
    return [total - k for k in ks if (ligand_electrons - (total - k)) % 2 == 0][:METAL_CHARGE_TRIES]


def _octet_charge(atomic_number: int) -> int:
    """Charge of a lone non-metal atom that completes its octet (S: -2, Cl: -1; H: -1, hydride)."""
    from rdkit import Chem

    if atomic_number == 1:
        return -1
    return min(Chem.GetPeriodicTable().GetNOuterElecs(atomic_number) - 8, 0)


def _with_metals(mol, total: int, metals: list[int], iterations: int):
    """Ligand bond orders without the metals, then the metal contacts as dative bonds (see the module's notes)."""
    from rdkit import Chem

    rw = Chem.RWMol(mol)
    metal = set(metals)
    links = []  # (ligand atom, metal)
    for bond in list(rw.GetBonds()):
        a, b = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
        if a in metal or b in metal:
            if (a in metal) != (b in metal):
                links.append((b, a) if a in metal else (a, b))
            rw.RemoveBond(a, b)
    # Lone ligand atoms (the sulfides of an iron-sulfur cluster) complete their octets; the rest is searched.
    lone = {a.GetIdx() for a in rw.GetAtoms() if a.GetIdx() not in metal and a.GetDegree() == 0}
    for i in lone:
        rw.GetAtomWithIdx(i).SetFormalCharge(_octet_charge(rw.GetAtomWithIdx(i).GetAtomicNum()))
    ligand_charge = sum(rw.GetAtomWithIdx(i).GetFormalCharge() for i in lone)
    bonded = [i for i in range(rw.GetNumAtoms()) if i not in metal and i not in lone]
    if bonded:
        found = _ligand_bond_orders(rw, bonded, total - ligand_charge, len(metals), iterations)
        Chem.Kekulize(found, clearAromaticFlags=True)  # plain bond orders: the whole molecule is sanitised below
        for bond in found.GetBonds():  # back onto the molecule, in the file's atom order
            a, b = bonded[bond.GetBeginAtomIdx()], bonded[bond.GetEndAtomIdx()]
            rw.GetBondBetweenAtoms(a, b).SetBondType(bond.GetBondType())
        for k, atom in enumerate(found.GetAtoms()):
            rw.GetAtomWithIdx(bonded[k]).SetFormalCharge(atom.GetFormalCharge())
            ligand_charge += atom.GetFormalCharge()
    share, extra = divmod(total - ligand_charge, len(metals))
    for k, i in enumerate(metals):
        rw.GetAtomWithIdx(i).SetFormalCharge(share + (1 if k < extra else 0))
    for ligand_atom, i in links:
        rw.AddBond(ligand_atom, i, Chem.BondType.DATIVE)
    out = rw.GetMol()
    Chem.SanitizeMol(out)
    Chem.AssignStereochemistryFrom3D(out)
    return out


def _ligand_bond_orders(rw, atoms: list[int], room: int, n_metals: int, iterations: int):
    """The bonded ligand atoms ``atoms`` of ``rw`` alone, with bond orders at the first charge of
    :func:`_ligand_charges` (``room``: the total charge less the lone atoms') that has them."""
    from rdkit import Chem

    ligands = Chem.RWMol(rw)
    keep = set(atoms)
    for i in range(rw.GetNumAtoms() - 1, -1, -1):
        if i not in keep:
            ligands.RemoveAtom(i)
    electrons = sum(rw.GetAtomWithIdx(i).GetAtomicNum() for i in atoms)
    tries = _ligand_charges(room, electrons, n_metals)
    errors = []
    for charge in tries:
        found = ligands.GetMol()
        try:
            _bond_orders(found, charge, max(1, iterations // len(tries)))
            return found
        except (ValueError, RuntimeError) as exc:
            errors.append(f"ligands at charge {charge}: {str(exc).strip()}")
    raise ValueError("; ".join(errors))
