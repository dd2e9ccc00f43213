"""SDF / MOL files (V2000 and V3000) with SD data fields as numeric properties.

Records are split at ``$$$$`` lines by our own streaming reader (so errors name
the record and line) and each mol block is parsed by RDKit with hydrogens kept.
The molecule id is the title line as written (spaces kept), else the ``CHEMBL_ID``/``ID``/``NAME``
tag, else the record number; a name that repeats over molecules of one formula
(several conformers of one molecule, as in QMugs) becomes ``<name>_conf<k>``
(``loaders/base.py`` ``unique_ids``). SD fields whose values parse as numbers
become properties; the SMILES comes from the mol block where it has bonds (or one atom); an atoms-only
block has none, so the chemistry stage perceives its bonds from 3D. ``D`` and ``T`` are
read as hydrogen; a dummy or query atom (``X``, ``*``, ``R`` …) or an unknown
symbol skips the record with a message naming the line and symbol. The
server's own fields ``pose`` and ``units`` (with ``dataset``) are metadata.
The total charge is the sum of the mol block's formal charges (``M  CHG`` or
the atom lines' charge field) where the block has bonds or charges; an
atoms-only block takes it from a ``total_charge`` or ``charge`` SD field
(which stays a property too), else it is unknown.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from orientscope.core.dataset import TOTAL_CHARGE
from orientscope.core.elements import dummy_atom_message
from orientscope.core.errors import DatasetError
from orientscope.core.limits import Limits
from orientscope.core.progress import Progress
from orientscope.loaders.base import (
    ISOTOPE_NOTE,
    BadRecord,
    LineReader,
    Record,
    element_to_z,
    first_charge,
    numeric_properties,
    open_text,
    written_property_name,
)
from orientscope.loaders.comment_line import SERVER_TAGS, check_units, server_tags
from orientscope.loaders.formats import MARKER, NO, NO_CHEMISTRY, Format, MoleculeChemistry, records

# (atomic numbers (n,), positions (n, 3) Å) -> an RDKit molecule with bonds and formal charges, or None.
Perceive = Callable[[np.ndarray, np.ndarray], object]
ID_TAGS = ("CHEMBL_ID", "chembl_id", "ID", "id", "NAME", "name", "_Name")
SMILES_TAGS = ("SMILES", "smiles")
END = "$$$$"
OWN_TAGS = frozenset({*ID_TAGS, *SMILES_TAGS, *SERVER_TAGS})  # SD fields that are never read as properties


def _split_tags(lines: list[str]) -> tuple[list[str], dict[str, str]]:
    """Mol block lines (through ``M  END``) and the SD data fields after it."""
    try:
        end = next(i for i, line in enumerate(lines) if line.startswith("M  END"))
    except StopIteration:
        return lines, {}
    tags: dict[str, str] = {}
    name = None
    values: list[str] = []
    for line in lines[end + 1 :]:
        text = line.rstrip("\r\n")
        if text.startswith(">") and "<" in text and ">" in text[text.index("<") :]:
            if name is not None:
                tags[name] = "\n".join(values).strip()
            name = text[text.index("<") + 1 : text.index(">", text.index("<"))]
            values = []
        elif name is not None:
            values.append(text)
    if name is not None:
        tags[name] = "\n".join(values).strip()
    return lines[: end + 1], tags


def iter_sd_blocks(lines: LineReader) -> Iterator[tuple[int, int, list[str], bool]]:
    """(record number, first line, lines, terminated by $$$$) per record."""
    ordinal = 0
    block: list[str] = []
    start = 1
    while True:
        line = lines.next()
        if line is None:
            if any(x.strip() for x in block):
                yield ordinal + 1, start, block, False
            return
        if line.rstrip("\r\n").strip() == END:
            ordinal += 1
            yield ordinal, start, block, True
            block, start = [], lines.line_no + 1
        else:
            block.append(line)


def atom_symbols(mol_lines: list[str]) -> list[tuple[int, str]]:
    """(index of its line in the block, element symbol as written) of each atom of a V2000 or V3000 mol block."""
    if len(mol_lines) < 4:
        return []
    if "V3000" in mol_lines[3]:
        out, inside = [], False
        for k, line in enumerate(mol_lines):
            if line.startswith("M  V30 BEGIN ATOM"):
                inside = True
            elif line.startswith("M  V30 END ATOM"):
                break
            elif inside and line.startswith("M  V30"):
                parts = line.split()
                if len(parts) > 3:
                    out.append((k, parts[3]))
        return out
    n = mol_lines[3][:3].strip()
    rows = range(4, min(4 + int(n), len(mol_lines))) if n.isdigit() else ()
    return [(k, mol_lines[k][31:34].strip()) for k in rows if _v2000_atom_line(mol_lines[k])]


def _v2000_atom_line(line: str) -> bool:
    """An atom line of a V2000 block: three coordinates, then a symbol (a corrupt line is not one)."""
    try:
        [float(line[c : c + 10]) for c in (0, 10, 20)]
    except ValueError:
        return False
    return bool(line[31:34].strip())


def element_problem(mol_lines: list[str], start: int, atomic_numbers=None) -> str | None:
    """A message naming the line and symbol of the first atom that is not an element, if there is one.

    Without ``atomic_numbers`` (RDKit could not read the block) the symbols are checked as written;
    with them, the atoms RDKit read as atomic number 0 (dummy or query atoms: X, *, R, Q …) are named.
    """
    symbols = atom_symbols(mol_lines)
    for atom, (k, symbol) in enumerate(symbols):
        if atomic_numbers is not None:
            if atom < len(atomic_numbers) and atomic_numbers[atom] == 0:
                return f"line {start + k}: {dummy_atom_message(symbol)}"
            continue
        try:
            element_to_z(symbol)
        except ValueError as err:
            return f"line {start + k}: {err}"
    return None


def parse_sd_block(where: str, block: list[str], start: int = 1) -> Record | BadRecord:
    """One record of an SD file; ``start`` is the file's line number of the block's first line."""
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")  # failures are reported per record instead
    mol_lines, tags = _split_tags(block)
    text = "".join(mol_lines)
    mol = Chem.MolFromMolBlock(text, sanitize=False, removeHs=False)
    if mol is None or mol.GetNumConformers() == 0:
        problem = element_problem(mol_lines, start) if mol is None else None
        return BadRecord(
            where, problem or "RDKit cannot parse this mol block (wrong atom/bond counts or corrupt lines?)"
        )
    z = np.array([a.GetAtomicNum() for a in mol.GetAtoms()], dtype=np.int64)
    if (z == 0).any():
        return BadRecord(where, element_problem(mol_lines, start, z) or dummy_atom_message("*"))
    isotopes = any(a.GetAtomicNum() == 1 and a.GetIsotope() in (2, 3) for a in mol.GetAtoms())
    pos = np.asarray(mol.GetConformer().GetPositions(), dtype=np.float64)
    # The title as written (an id "  lead" of the server's own SDF comes back as itself); a blank one is no id.
    title = mol_lines[0].rstrip("\r\n") if mol_lines else ""
    mol_id = (title if title.strip() else "") or next((tags[t] for t in ID_TAGS if tags.get(t)), None)
    smiles = next((tags[t] for t in SMILES_TAGS if tags.get(t)), "")
    # An atoms-only block (several atoms, no bond lines) says nothing of its connectivity: its SMILES would be
    # every atom apart ("C.C.O.[HH]…", one "(acyclic)" scaffold for the whole set). It has none, and the
    # chemistry stage perceives its bonds from the coordinates, as for XYZ.
    if not smiles and (mol.GetNumBonds() or mol.GetNumAtoms() == 1):
        try:
            Chem.SanitizeMol(mol)
            smiles = Chem.MolToSmiles(Chem.RemoveHs(mol))
        except Exception:  # unsanitizable chemistry: keep the geometry, leave SMILES unknown
            smiles = ""
    skip = set(ID_TAGS) | set(SMILES_TAGS) | {TOTAL_CHARGE}
    own = server_tags(tags)  # the server's own download: its tags are metadata
    if own:
        skip |= set(SERVER_TAGS)
        problem = check_units(tags["units"])
        if problem:
            return BadRecord(where, problem)
    props = numeric_properties((k, v) for k, v in tags.items() if k not in skip)
    return Record(
        where,
        z,
        pos,
        id=mol_id,
        smiles=smiles,
        properties=props,
        notes=(ISOTOPE_NOTE,) if isotopes else (),
        tags={k: tags[k] for k in SERVER_TAGS if k in tags} if own else {},
        charge=block_charge(mol, tags),
    )


def block_charge(mol, tags: dict[str, str]) -> float:
    """The sum of a mol block's formal charges if it has bonds or charges, else its charge SD field (or NaN)."""
    formal = [a.GetFormalCharge() for a in mol.GetAtoms()]
    if mol.GetNumBonds() or any(formal):
        return float(sum(formal))
    return first_charge(tags)


def read_sdf(path: Path, limits: Limits, progress: Progress | None = None) -> Iterator[Record | BadRecord]:
    source = Path(path).name
    with open_text(path, progress) as fh:
        for ordinal, start, block, terminated in iter_sd_blocks(LineReader(fh, source)):
            where = f"record {ordinal} (line {start})"
            if len(block) >= 4:
                counts = block[3][:3].strip()
                if counts.isdigit():
                    limits.check_atoms(int(counts), f"{source}: {where}")
            item = parse_sd_block(where, block, start)
            if isinstance(item, BadRecord) and not terminated:
                raise DatasetError(f"{source}: {where}: file ends inside a record without '$$$$' (truncated file?)")
            yield item


def _atoms_molecule(atomic_numbers, positions_angstrom):
    """An RDKit molecule of the atoms and one conformer, no bonds."""
    from rdkit import Chem
    from rdkit.Geometry import Point3D

    rw = Chem.RWMol()
    for a in atomic_numbers:
        rw.AddAtom(Chem.Atom(int(a)))
    conf = Chem.Conformer(len(atomic_numbers))
    for k, (x, y, w) in enumerate(np.asarray(positions_angstrom, np.float64)):
        conf.SetAtomPosition(k, Point3D(float(x), float(y), float(w)))
    mol = rw.GetMol()
    mol.AddConformer(conf, assignId=True)
    return mol


def _with_bonds(mol, smiles: str | None, perceive: Perceive | None):
    """Bond orders from the SMILES when it matches the atoms, else ``perceive(atomic numbers, positions)``
    (the caller's guarded bond perception, ``science.perception``), else connectivity alone."""
    from rdkit import Chem
    from rdkit.Chem import AllChem, rdDetermineBonds

    template = Chem.MolFromSmiles(smiles) if smiles else None
    if template is not None:
        try:
            conn = Chem.Mol(mol)
            rdDetermineBonds.DetermineConnectivity(conn)
            return AllChem.AssignBondOrdersFromTemplate(template, conn)
        except (ValueError, RuntimeError):
            pass
    if perceive is not None:
        found = perceive(np.array([a.GetAtomicNum() for a in mol.GetAtoms()]), mol.GetConformer().GetPositions())
        if found is not None:
            return found
    bonded = Chem.Mol(mol)
    try:
        rdDetermineBonds.DetermineConnectivity(bonded)
    except (ValueError, RuntimeError):
        pass  # the atoms alone
    return bonded


def sdf_mol(atomic_numbers, positions_angstrom, title: str, smiles: str | None, properties: dict, bonds: bool,
            tags=(), perceive: Perceive | None = None):  # fmt: skip
    """The RDKit molecule of one SDF record: ``title`` (the id) as its name, then ``tags`` (pairs), the SMILES
    and ``properties`` as SD fields.

    With ``bonds`` the record carries bonds (see :func:`_with_bonds`); without, atoms only, so reading
    it back gives exactly the stored atoms.
    """
    mol = _atoms_molecule(atomic_numbers, positions_angstrom)
    if bonds:
        mol = _with_bonds(mol, smiles, perceive)
    mol.SetProp("_Name", str(title).replace("\r", " ").replace("\n", " "))
    for name, value in tags:
        mol.SetProp(name, str(value))
    if smiles:
        mol.SetProp("SMILES", smiles)
    for name, value in properties.items():
        if value is not None:
            mol.SetProp(written_property_name(str(name), OWN_TAGS), repr(float(value)))
    return mol


def _write_records(target, mols) -> None:
    from rdkit import Chem

    writer = Chem.SDWriter(target)
    writer.SetKekulize(False)  # aromatic bonds as stored in the SMILES, as the molecule file we read had them
    try:
        for mol in mols:
            writer.write(mol)
    finally:
        writer.close()


def sdf_block(
    atomic_numbers,
    positions_angstrom,
    title: str,
    smiles: str | None = None,
    properties: dict | None = None,
    tags=(),
    perceive: Perceive | None = None,
) -> str:
    """One SDF record with bonds (a single-molecule download); ``tags``: (name, text) SD fields put first. Bonds
    come from the SMILES where it fits the atoms, else from ``perceive``, the caller's guarded bond perception
    (loaders do not import the science layer)."""
    buf = io.StringIO()
    record = sdf_mol(
        atomic_numbers, positions_angstrom, title, smiles, properties or {}, bonds=True, tags=tags, perceive=perceive
    )
    _write_records(buf, [record])
    return buf.getvalue()


def molecule_sdf(atomic_numbers, positions_angstrom, mol_id: str, smiles=None, properties=None, tags=(),
                 chemistry: MoleculeChemistry = NO_CHEMISTRY) -> str:  # fmt: skip
    """One molecule as the server's SDF download (:func:`sdf_block`): bonds from the file's SMILES, else from
    the graph the chemistry stage built, else from ``chemistry.perceive`` (at the molecule's charge); a property
    that is not a finite number is left out."""
    smiles = smiles or chemistry.graph_smiles() or None
    finite = {name: value for name, value in (properties or {}).items() if value is not None and math.isfinite(value)}
    return sdf_block(atomic_numbers, positions_angstrom, mol_id, smiles, finite, tags, chemistry.perceive)


def write_sdf(path: Path, mols) -> None:
    """SDF with the id as title and every property as an SD field.

    The dataset model keeps atoms and coordinates but no bonds, so the blocks
    carry atoms only; reading them back gives the same atoms, poses and properties.
    """
    props = mols.properties
    smiles = mols.smiles

    def records():
        for i in range(mols.n_molecules):
            values = {col: float(props[col].iat[i]) for col in props.columns}
            if mols.charges is not None and not np.isnan(mols.charges[i]):
                values[TOTAL_CHARGE] = int(mols.charges[i])  # atoms-only blocks cannot carry it
            smi = str(smiles[i]) if smiles is not None and smiles[i] else None
            yield sdf_mol(*mols.atoms_of(i), str(mols.ids[i]), smi, values, bonds=False)

    _write_records(str(path), records())


def _sniff(head: bytes, path: Path) -> int:
    # A mol block's end or counts-line version, anywhere in the head (the title line before it is free text).
    return MARKER if b"M  END" in head or b"V2000" in head or b"V3000" in head else NO


FORMAT = Format(
    name="sdf",
    label="SDF/MOL",
    extensions=(".sdf", ".sd", ".mol"),
    read=records(read_sdf),
    description="V2000 or V3000 mol blocks separated by `$$$$`; the title line is the id, numeric SD fields "
    "are properties",
    sniff=_sniff,
    write=write_sdf,
    write_molecule=molecule_sdf,
    media_type="chemical/x-mdl-sdfile",
)
