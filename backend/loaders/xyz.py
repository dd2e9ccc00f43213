"""Multi-frame XYZ: ``n`` / comment / ``n`` lines ``symbol x y z`` per molecule (ångström).

A one-word comment line is the molecule id, as written; a comment of
``key=value`` pairs gives the id, SMILES and numeric properties as extended XYZ
does (``loaders/comment_line.py``, the grammar our writer uses); any other
comment leaves the molecules numbered from 1 in file order.
Fortran/Mathematica exponents (``1.5*^-6``, as in the original QM9 files) are
accepted. ``D`` and ``T`` are read as hydrogen (with a warning); a dummy atom
``X`` or an unknown symbol skips the record with a message naming the symbol and line.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from orientscope.core.dataset import TOTAL_CHARGE
from orientscope.core.elements import SYMBOLS
from orientscope.core.errors import DatasetError
from orientscope.core.limits import Limits
from orientscope.core.progress import Progress
from orientscope.loaders.base import (
    HYDROGEN_ISOTOPES,
    ISOTOPE_NOTE,
    BadRecord,
    LineReader,
    Record,
    element_to_z,
    first_charge,
    open_text,
)
from orientscope.loaders.comment_line import CommentFields, comment_fields, format_comment, quote, read_comment
from orientscope.loaders.formats import NO, NO_CHEMISTRY, OPENING, Format, MoleculeChemistry, first_line, records

MAX_ID_LENGTH = 128  # a longer single word on a comment line is not read as an id


@dataclass
class XyzBlock:
    ordinal: int  # 1-based record number
    line_no: int  # line of the atom count
    comment: str
    atom_lines: list[str]

    @property
    def where(self) -> str:
        return f"record {self.ordinal} (line {self.line_no})"


def _lone_int(line: str) -> int | None:
    parts = line.split()
    if len(parts) != 1:
        return None
    try:
        return int(parts[0])
    except ValueError:
        return None


def iter_xyz_blocks(lines: LineReader, limits: Limits) -> Iterator[XyzBlock | BadRecord]:
    """Split an XYZ stream into frames, stepping over a frame whose count line is unreadable.

    Raises DatasetError if the file ends inside a frame (truncated) and
    LimitExceeded if a frame declares more atoms than allowed.
    """
    ordinal = 0
    resyncing = False
    while True:
        line = lines.next()
        if line is None:
            return
        if not line.strip():
            continue
        n = _lone_int(line)
        if n is None or n < 1:
            if not resyncing:  # one bad record per damaged stretch, not one per line
                ordinal += 1
                yield BadRecord(
                    f"record {ordinal} (line {lines.line_no})",
                    f"expected a positive atom count on its own line, got {line.strip()[:60]!r}",
                )
            resyncing = True
            continue
        resyncing = False
        ordinal += 1
        start = lines.line_no
        limits.check_atoms(n, f"{lines.source}: record {ordinal} (line {start})")
        comment = lines.next()
        atom_lines = []
        for _ in range(n if comment is not None else 0):
            atom = lines.next()
            if atom is None:
                break
            atom_lines.append(atom)
        if comment is None or len(atom_lines) < n:
            raise DatasetError(
                f"{lines.source}: record {ordinal} (line {start}): file ends after {len(atom_lines)} of the "
                f"{n} atom lines it declares (truncated file?)"
            )
        yield XyzBlock(ordinal, start, comment.rstrip("\r\n"), atom_lines)


@dataclass
class AtomLines:
    """The atoms of one frame: atomic numbers (n,), positions (n, 3) Å, and notes on how they were read."""

    z: np.ndarray
    pos: np.ndarray
    notes: tuple[str, ...] = ()


PLAIN_COLUMNS = "'element x y z'"


def parse_atom_lines(
    block: XyzBlock, element: int = 0, position: int = 1, n_columns: int = 4, columns: str = PLAIN_COLUMNS
) -> AtomLines | str:
    """The atoms of a frame, or a message naming the bad line (and the unknown element symbol).

    ``element`` and ``position`` are the columns of the element (symbol or atomic number) and of x;
    each line needs ``n_columns`` columns, described as ``columns`` in messages.
    """
    z = np.empty(len(block.atom_lines), dtype=np.int16)
    pos = np.empty((len(block.atom_lines), 3))
    isotopes = False
    for k, line in enumerate(block.atom_lines):
        parts = line.split()
        line_no = block.line_no + 2 + k
        if len(parts) < n_columns:
            return f"line {line_no}: expected {columns}, got {line.strip()[:60]!r} (wrong atom count?)"
        try:
            z[k] = element_to_z(parts[element])
            pos[k] = [float(p.replace("*^", "e")) for p in parts[position : position + 3]]
        except ValueError as err:
            return f"line {line_no}: {err}"
        isotopes = isotopes or parts[element].upper() in HYDROGEN_ISOTOPES
    return AtomLines(z, pos, (ISOTOPE_NOTE,) if isotopes else ())


def comment_record(block: XyzBlock, atoms: AtomLines, fields: CommentFields | None = None) -> Record | BadRecord:
    """The record of a frame whose atoms are read: id, SMILES, properties and tags from its comment line.

    A comment that is one word, or ``key=value`` pairs (:func:`~orientscope.loaders.comment_line.read_comment`),
    gives the id as written; any other comment leaves the record's number as its id.
    """
    words = block.comment.split()
    if fields is None:
        if "=" not in block.comment:  # free text (QM9's "gdb 1 157.7 …"): only a single word is an id
            mol_id = words[0] if len(words) == 1 and len(words[0]) <= MAX_ID_LENGTH else str(block.ordinal)
            return Record(block.where, atoms.z, atoms.pos, id=mol_id, notes=atoms.notes)
        fields = read_comment(block.comment, flags=False)
    if fields.problem:
        return BadRecord(block.where, fields.problem)
    # The total charge: ``total_charge=`` (the charge only) or ``charge=`` (which stays a property too).
    properties = dict(fields.properties)
    charge = first_charge(properties)
    properties.pop(TOTAL_CHARGE, None)
    return Record(
        block.where,
        atoms.z,
        atoms.pos,
        id=fields.id or str(block.ordinal),
        smiles=fields.smiles,
        properties=properties,
        notes=atoms.notes,
        tags=fields.tags,
        charge=charge,
    )


def read_xyz(path: Path, limits: Limits, progress: Progress | None = None) -> Iterator[Record | BadRecord]:
    with open_text(path, progress) as fh:
        for block in iter_xyz_blocks(LineReader(fh, Path(path).name), limits):
            if isinstance(block, BadRecord):
                yield block
                continue
            parsed = parse_atom_lines(block)
            yield BadRecord(block.where, parsed) if isinstance(parsed, str) else comment_record(block, parsed)


def read_xyz_text(text: str, limits: Limits | None = None, source: str = "xyz") -> tuple[np.ndarray, np.ndarray]:
    """Atomic numbers (n,) and positions (n, 3) Å of the first frame of an XYZ text.

    Raises DatasetError naming the line (LimitExceeded above the atom limit).
    """
    lines = LineReader(io.StringIO(text), source)
    for block in iter_xyz_blocks(lines, limits or Limits()):
        if isinstance(block, BadRecord):
            raise DatasetError(f"{source}: {block.where}: {block.message}")
        parsed = parse_atom_lines(block)
        if isinstance(parsed, str):
            raise DatasetError(f"{source}: {block.where}: {parsed}")
        return parsed.z, parsed.pos
    raise DatasetError(f"{source}: line 1: expected an atom count, got an empty text")


# Writing: our own formatter, not ase.io.write (its plain-XYZ writer puts one
# comment on every frame; we need each molecule's id) nor RDKit's
# MolToXYZBlock (it needs an RDKit molecule per frame: 2.4x slower than this
# on 5,000 QM9 molecules, 1.45 s vs 0.60 s; busy machine, noisy).
def xyz_block(atoms, positions_angstrom, comment: str = "", decimals: int = 10) -> str:
    """One XYZ frame: the atom count, ``comment`` (kept on one line), then ``symbol x y z`` lines (Å).

    ``atoms`` holds element symbols or atomic numbers; ``decimals`` is the
    number of digits after the point.
    """
    pos = np.asarray(positions_angstrom, np.float64).reshape(-1, 3)
    symbols = [a if isinstance(a, str) else SYMBOLS[int(a)] for a in atoms]
    lines = [str(len(symbols)), comment.replace("\r", " ").replace("\n", " ")]
    lines += [
        f"{s} {x:.{decimals}f} {y:.{decimals}f} {z:.{decimals}f}" for s, (x, y, z) in zip(symbols, pos, strict=True)
    ]
    return "\n".join(lines) + "\n"


def molecule_comment(
    mol_id: str, smiles: str | None = None, properties: dict | None = None, tags=(), charge: float = math.nan
) -> str:
    """The comment line that reads back as this id, SMILES, properties, total ``charge`` (NaN: unknown, not
    written) and ``tags`` (pairs, put first).

    The bare id where it is all there is and reads back as one word (plain XYZ); else ``key=value`` pairs.
    """
    mol_id = str(mol_id)
    known = charge is not None and math.isfinite(charge)
    if not (smiles or properties or tags or known) and quote(mol_id) == mol_id and len(mol_id) <= MAX_ID_LENGTH:
        return mol_id
    fields = comment_fields(mol_id, smiles, properties or {})
    return format_comment([*tags, *fields, *([(TOTAL_CHARGE, int(charge))] if known else [])])


def molecule_comments(mols, tags=()) -> Iterator[str]:
    """Each molecule's comment line (:func:`molecule_comment`; ``tags`` lead every line), in order."""
    names = [str(c) for c in mols.properties.columns]
    values = mols.properties.to_numpy(np.float64) if names else np.zeros((mols.n_molecules, 0))
    for i in range(mols.n_molecules):
        smiles = str(mols.smiles[i]) if mols.smiles is not None and mols.smiles[i] else None
        properties = dict(zip(names, values[i].tolist(), strict=True))
        yield molecule_comment(mols.ids[i], smiles, properties, tags, mols.charge_of(i))


def write_xyz(path: Path, mols) -> None:
    """XYZ, one frame per molecule; the comment line holds the id, and the SMILES and properties where there are
    any, as ``key=value`` pairs (which any extended-XYZ reader reads)."""
    with open(path, "w", encoding="utf-8") as fh:
        for i, comment in enumerate(molecule_comments(mols)):
            fh.write(xyz_block(*mols.atoms_of(i), comment))


def molecule_xyz(atomic_numbers, positions_angstrom, mol_id: str, smiles=None, properties=None, tags=(),
                 chemistry: MoleculeChemistry = NO_CHEMISTRY) -> str:  # fmt: skip
    """One molecule as the server's XYZ download (8 decimals), its id, SMILES, properties, ``tags`` and total
    charge (``chemistry.charge``) on the comment line (:func:`molecule_comment`)."""
    comment = molecule_comment(mol_id, smiles, properties, tags, chemistry.charge)
    return xyz_block(atomic_numbers, positions_angstrom, comment, decimals=8)


def count_line(head: bytes) -> bool:
    """The file opens with an atom count alone on its line (not any leading digit)."""
    return first_line(head).strip().isdigit()


def key_value_comment(head: bytes) -> bool:
    """The second line (the first frame's comment) holds ``key=value`` pairs: extended XYZ.

    The server's own XYZ downloads are such lines too (``dataset=… pose=… units=… id=…``): the extended-XYZ
    reader takes them as they were written (``loaders/comment_line.py``).
    """
    lines = head.split(b"\n", 2)
    return len(lines) > 1 and b"=" in lines[1]


def _sniff(head: bytes, path: Path) -> int:
    return OPENING if count_line(head) and not key_value_comment(head) else NO


FORMAT = Format(
    name="xyz",
    label="XYZ",
    extensions=(".xyz",),
    read=records(read_xyz),
    description="frames of an atom count, a comment line (a one-word id, or `key=value` pairs) and "
    "`symbol x y z` lines in Å",
    sniff=_sniff,
    write=write_xyz,
    write_molecule=molecule_xyz,
    media_type="chemical/x-xyz",
)
