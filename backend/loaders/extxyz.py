"""Extended XYZ (ASE's format): per-structure ``key=value`` pairs on the comment line become properties.

Frames are split by our own streaming reader (so a bad frame is located by
line and stepped over). The comment line is read as text
(``loaders/comment_line.py``: ASE's grammar, without its type guessing), so an
id is kept exactly as written (``000``, ``T``, ``1E3``, ``NAN`` stay text);
numeric values become properties, ``id``/``name`` the molecule id and
``smiles`` the SMILES. The atom columns are read from the ``Properties=`` spec
(``species`` or ``Z``, and ``pos``); extra columns (forces …) are ignored.
The total charge is ``total_charge=`` or ``charge=`` (which stays a property
too), else the sum of a per-atom ``initial_charges`` or ``charges`` column.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from orientscope.core.limits import Limits
from orientscope.core.progress import Progress
from orientscope.loaders.base import BadRecord, LineReader, Record, charge_value, open_text
from orientscope.loaders.comment_line import read_comment
from orientscope.loaders.formats import NO, OPENING, Format, records
from orientscope.loaders.xyz import (
    comment_record,
    count_line,
    iter_xyz_blocks,
    key_value_comment,
    molecule_comments,
    parse_atom_lines,
    xyz_block,
)

DEFAULT_SPEC = "species:S:1:pos:R:3"  # what ASE assumes when a frame has no Properties=
ELEMENT_COLUMNS = ("species", "symbols", "Z", "numbers")
POSITION_COLUMNS = ("pos", "positions")
CHARGE_COLUMNS = ("initial_charges", "charges")  # per-atom charges (ASE's names); their sum is the total


def atom_columns(spec: str, first_atom_line: str) -> tuple[int, int, int] | str:
    """(element column, first position column, columns per line) of a ``Properties=`` spec, or why not.

    A spec declaring more columns than the atom lines hold is refused before any is read (ASE would make
    one array per declared column: ``species:S:2147483648`` took minutes and gigabytes).
    """
    parts = spec.split(":")
    if len(parts) % 3:
        return f"Properties={spec[:80]!r} is not name:type:count triples"
    element = position = None
    column = 0
    for name, count in zip(parts[0::3], parts[2::3], strict=True):
        if not count.strip().isdigit():
            return f"Properties={spec[:80]!r}: the count {count[:20]!r} is not a number"
        n = int(count)
        if name in ELEMENT_COLUMNS and element is None and n == 1:
            element = column
        elif name in POSITION_COLUMNS and position is None and n == 3:
            position = column
        column += n
    available = len(first_atom_line.split())
    if column > available:
        return f"Properties declares {column:,} columns but the atom lines have {available}"
    if element is None:
        return f"Properties={spec[:80]!r} has no species (or Z) column"
    if position is None:
        return f"Properties={spec[:80]!r} has no pos column of 3 numbers"
    return element, position, column


def charge_column(spec: str) -> int | None:
    """The column of a per-atom charge (one number per atom) in a valid ``Properties=`` spec, else None."""
    parts = spec.split(":")
    column = 0
    for name, count in zip(parts[0::3], parts[2::3], strict=True):
        if name in CHARGE_COLUMNS and int(count) == 1:
            return column
        column += int(count)
    return None


def summed_charge(atom_lines: list[str], column: int) -> float:
    """The total charge of a frame from its per-atom charge column (whole numbers only; NaN otherwise)."""
    try:
        return charge_value(sum(float(line.split()[column]) for line in atom_lines))
    except (ValueError, IndexError):
        return math.nan


def read_extxyz(path: Path, limits: Limits, progress: Progress | None = None) -> Iterator[Record | BadRecord]:
    with open_text(path, progress) as fh:
        for block in iter_xyz_blocks(LineReader(fh, Path(path).name), limits):
            if isinstance(block, BadRecord):
                yield block
                continue
            fields = read_comment(block.comment)
            spec = fields.spec or DEFAULT_SPEC
            columns = atom_columns(spec, block.atom_lines[0])
            if isinstance(columns, str):
                yield BadRecord(block.where, f"not a valid extended-XYZ frame ({columns})")
                continue
            element, position, n = columns
            atoms = parse_atom_lines(block, element, position, n, f"{n} columns ({spec[:80]})")
            if isinstance(atoms, str):
                yield BadRecord(block.where, atoms)
                continue
            record = comment_record(block, atoms, fields)
            column = charge_column(spec)
            if isinstance(record, Record) and math.isnan(record.charge) and column is not None:
                record.charge = summed_charge(block.atom_lines, column)
            yield record


def write_extxyz(path: Path, mols) -> None:
    """Extended XYZ with the id, SMILES and every property on each frame's comment line.

    Written as ASE writes it (``Properties=species:S:1:pos:R:3`` first), with text quoted and
    escaped so that it reads back as written, and numbers written in full (``repr``).
    """
    with open(path, "w", encoding="utf-8") as fh:
        for i, comment in enumerate(molecule_comments(mols, tags=[("Properties", DEFAULT_SPEC)])):
            fh.write(xyz_block(*mols.atoms_of(i), comment))


def _sniff(head: bytes, path: Path) -> int:
    return OPENING if count_line(head) and key_value_comment(head) else NO


FORMAT = Format(
    name="extxyz",
    label="extended XYZ",
    # A ".xyz" whose comment line holds key=value pairs is extended XYZ (ASE writes it so).
    extensions=(".extxyz", ".exyz", ".xyz"),
    read=records(read_extxyz),
    description="XYZ whose comment lines hold `key=value` pairs (ASE's): the id, SMILES and numeric properties; "
    "the atom columns from `Properties=`",
    sniff=_sniff,
    write=write_extxyz,
    media_type="chemical/x-xyz",
)
