"""SDF / MOL files (V2000 and V3000) with SD data fields as numeric properties.

Records are split at ``$$$$`` lines by our own streaming reader (so errors name
the record and line) and each mol block is parsed by RDKit with hydrogens kept.
The molecule id is the title line, else the ``CHEMBL_ID``/``ID``/``NAME`` tag,
else the record number; a name that repeats (several conformers of one
molecule, as in QMugs) becomes ``<name>_conf<k>``. SD fields whose values
parse as numbers become properties; the SMILES comes from the mol block.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from backend.core.errors import DatasetError
from backend.core.limits import Limits
from backend.loaders.base import (
    BadRecord,
    LineReader,
    Loaded,
    LoadProgress,
    Record,
    collect,
    numeric_properties,
    open_text,
)

ID_TAGS = ("CHEMBL_ID", "chembl_id", "ID", "id", "NAME", "name", "_Name")
SMILES_TAGS = ("SMILES", "smiles")
END = "$$$$"


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


def parse_sd_block(where: str, block: list[str]) -> Record | BadRecord:
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")  # failures are reported per record instead
    mol_lines, tags = _split_tags(block)
    text = "".join(mol_lines)
    mol = Chem.MolFromMolBlock(text, sanitize=False, removeHs=False)
    if mol is None or mol.GetNumConformers() == 0:
        return BadRecord(where, "RDKit cannot parse this mol block (wrong atom/bond counts or corrupt lines?)")
    z = np.array([a.GetAtomicNum() for a in mol.GetAtoms()], dtype=np.int64)
    pos = np.asarray(mol.GetConformer().GetPositions(), dtype=np.float64)
    title = mol_lines[0].strip() if mol_lines else ""
    mol_id = title or next((tags[t] for t in ID_TAGS if tags.get(t)), None)
    smiles = next((tags[t] for t in SMILES_TAGS if tags.get(t)), "")
    if not smiles:
        try:
            Chem.SanitizeMol(mol)
            smiles = Chem.MolToSmiles(Chem.RemoveHs(mol))
        except Exception:  # unsanitizable chemistry: keep the geometry, leave SMILES unknown
            smiles = ""
    skip = set(ID_TAGS) | set(SMILES_TAGS)
    props = numeric_properties((k, v) for k, v in tags.items() if k not in skip)
    return Record(where, z, pos, id=mol_id, smiles=smiles, properties=props)


def read_sdf(path: Path, limits: Limits, progress: LoadProgress | None = None) -> Iterator[Record | BadRecord]:
    source = Path(path).name
    with open_text(path, progress) as fh:
        for ordinal, start, block, terminated in iter_sd_blocks(LineReader(fh, source)):
            where = f"record {ordinal} (line {start})"
            if len(block) >= 4:
                counts = block[3][:3].strip()
                if counts.isdigit():
                    limits.check_atoms(int(counts), f"{source}: {where}")
            item = parse_sd_block(where, block)
            if isinstance(item, BadRecord) and not terminated:
                raise DatasetError(f"{source}: {where}: file ends inside a record without '$$$$' (truncated file?)")
            yield item


def load_sdf(
    path: Path, strict: bool = False, limits: Limits | None = None, progress: LoadProgress | None = None
) -> Loaded:
    return collect(read_sdf, path, "sdf", strict, limits, progress)


def write_sdf(path: Path, mols) -> None:
    """SDF with the id as title and every property as an SD field.

    The dataset model keeps atoms and coordinates but no bonds, so the blocks
    carry atoms only; reading them back gives the same atoms, poses and properties.
    """
    from rdkit import Chem
    from rdkit.Geometry import Point3D

    writer = Chem.SDWriter(str(path))
    try:
        for i in range(mols.n_molecules):
            z, pos = mols.atoms_of(i)
            rw = Chem.RWMol()
            for a in z:
                rw.AddAtom(Chem.Atom(int(a)))
            conf = Chem.Conformer(len(z))
            for k, (x, y, w) in enumerate(pos):
                conf.SetAtomPosition(k, Point3D(float(x), float(y), float(w)))
            mol = rw.GetMol()
            mol.AddConformer(conf, assignId=True)
            mol.SetProp("_Name", str(mols.ids[i]))
            if mols.smiles is not None and mols.smiles[i]:
                mol.SetProp("SMILES", str(mols.smiles[i]))
            for col in mols.properties.columns:
                mol.SetProp(col, repr(float(mols.properties[col].iat[i])))
            writer.write(mol)
    finally:
        writer.close()
