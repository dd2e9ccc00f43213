"""JSON molecule records, as ``GET /api/datasets/{id}/molecules/{mol_id}`` (``format=json``) writes them.

A file holds one record, a JSON array of records, or JSON Lines (one record a
line). A record is an object with ``elements`` (symbols or atomic numbers) and
``positions`` ((n, 3) ångström, the stored pose); ``id``, ``smiles`` and
``properties`` are optional. ``properties`` is the server's list of
``{"name", "value", "unit"}`` (a ``null`` value is missing) or an object of
name → number. Every other field of the server's record (the frame, the
canonical pose, groups …) is what OrientScope computed, and is not read.

Numbers are kept as written until used, so an id written as a JSON number
(``1e3``) stays the text ``"1e3"``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from itertools import chain
from pathlib import Path

import numpy as np

from orientscope.core.elements import z_to_symbols
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
    open_text,
    written_property_name,
)
from orientscope.loaders.formats import HEAD_BYTES, NO, OPENING, Format, records

REQUIRED_FIELDS = ("elements", "positions")
SHAPE_HELP = (
    "expected a molecule record (an object with 'elements' and 'positions', as GET "
    "/api/datasets/{id}/molecules/{mol_id} writes it), an array of them, or one per line (JSON Lines)"
)


def record_fields(atomic_numbers, positions_angstrom, properties: dict[str, float], units: dict[str, str]) -> dict:
    """The ``elements``, ``positions`` ((n, 3) Å) and ``properties`` fields of a molecule record, as this module
    reads them back (the server's JSON record is these, the id and SMILES, and what it computed)."""
    return {
        "elements": z_to_symbols(atomic_numbers),
        "positions": np.asarray(positions_angstrom, dtype=np.float64).tolist(),
        "properties": [
            {
                "name": written_property_name(str(name), ()),  # "property:x" is read as x: it is written doubled
                "value": float(value) if math.isfinite(value) else None,
                "unit": units.get(name),
            }
            for name, value in properties.items()
        ],
    }


def _decode(text: str):
    # Numbers stay text (parse_float/parse_int) so that an id is kept as written; NaN and Infinity too.
    return json.loads(text, parse_float=str, parse_int=str, parse_constant=str)


def _number(value, what: str) -> float:
    if value is None:
        return float("nan")
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError(f"{what} is {json.dumps(value)[:40]}, not a number")
    return float(value)


def _properties(value) -> tuple[dict[str, float], dict[str, str]]:
    """(numeric properties, units) of a record's ``properties``: the server's list, or name → number."""
    props, units = {}, {}
    items = value.items() if isinstance(value, dict) else ((p.get("name"), p) for p in value or [])
    for name, entry in items:
        if not isinstance(name, str) or not name:
            raise ValueError("a property without a name")
        raw = entry.get("value") if isinstance(entry, dict) else entry
        if isinstance(raw, bool):  # true/false as 1/0, as extended XYZ's T/F
            raw = str(float(raw))
        try:
            props[name] = _number(raw, f"property {name!r}")
        except ValueError:
            if isinstance(raw, str):  # a text value is not a property, as in the other formats
                continue
            raise
        if isinstance(entry, dict) and isinstance(entry.get("unit"), str) and entry["unit"]:
            units[name] = entry["unit"]
    return props, units


def json_record(record, where: str) -> Record | BadRecord:
    """One molecule record as a :class:`Record`, or why it cannot be read (naming the atom or field)."""
    if not isinstance(record, dict):
        return BadRecord(where, f"not an object; {SHAPE_HELP}")
    missing = [k for k in REQUIRED_FIELDS if k not in record]
    if missing:
        return BadRecord(where, f"no {' or '.join(repr(m) for m in missing)}; {SHAPE_HELP}")
    elements, positions = record["elements"], record["positions"]
    if not isinstance(elements, list) or not isinstance(positions, list) or len(elements) != len(positions):
        return BadRecord(where, "'elements' and 'positions' must be lists of the same length (one entry per atom)")
    z = np.empty(len(elements), dtype=np.int16)
    pos = np.empty((len(elements), 3))
    for k, (element, xyz) in enumerate(zip(elements, positions, strict=True)):
        try:
            z[k] = element_to_z(str(element))
            if not isinstance(xyz, list) or len(xyz) != 3:
                raise ValueError("a position must be [x, y, z]")
            pos[k] = [_number(c, "a coordinate") for c in xyz]
        except ValueError as err:
            return BadRecord(where, f"atom {k + 1}: {err}")
    try:
        props, units = _properties(record.get("properties"))
    except (ValueError, AttributeError) as err:
        return BadRecord(where, f"properties: {err}")
    mol_id = record.get("id")
    smiles = record.get("smiles")
    isotopes = any(str(e).strip().upper() in HYDROGEN_ISOTOPES for e in elements)
    return Record(
        where,
        z,
        pos,
        id=None if mol_id is None else str(mol_id),
        smiles=smiles if isinstance(smiles, str) else "",
        properties=props,
        notes=(ISOTOPE_NOTE,) if isotopes else (),
        units=units,
    )


def read_json_records(path: Path, limits: Limits, progress: Progress | None = None) -> Iterator[Record | BadRecord]:
    source = Path(path).name
    with open_text(path, progress) as fh:
        lines = _numbered(LineReader(fh, source))
        buffer: list[tuple[int, str]] = []  # the lines up to the second that is not blank
        for item in lines:
            buffer.append(item)
            if sum(1 for _, line in buffer if line.strip()) == 2:
                break
        filled = [(n, line) for n, line in buffer if line.strip()]
        if not filled:
            raise DatasetError(f"{source}: the file holds no JSON; {SHAPE_HELP}")
        if len(filled) == 2 and _is_record_line(filled[0][1]):  # JSON Lines: a record a line, read as it streams
            rest = ((n, line) for n, line in lines if line.strip())
            for k, (line_no, line) in enumerate(chain(filled, rest)):
                where = f"record {k + 1} (line {line_no})"
                try:
                    record = _decode(line)
                except json.JSONDecodeError as err:
                    yield BadRecord(where, f"not JSON ({err.msg})")
                    continue
                yield _checked(json_record(record, where), limits, source)
            return
        body = "".join(line for _, line in chain(buffer, lines))
    try:
        document = _decode(body)
    except json.JSONDecodeError as err:
        raise DatasetError(f"{source}: line {err.lineno}: not JSON ({err.msg}); {SHAPE_HELP}") from None
    records = document if isinstance(document, list) else [document]
    limits.check_molecules(len(records), source)
    for k, record in enumerate(records):
        yield _checked(json_record(record, f"record {k + 1}"), limits, source)


def _numbered(lines: LineReader) -> Iterator[tuple[int, str]]:
    while (line := lines.next()) is not None:
        yield lines.line_no, line


def _is_record_line(line: str) -> bool:
    try:
        return isinstance(_decode(line), dict)
    except json.JSONDecodeError:
        return False


def _checked(item: Record | BadRecord, limits: Limits, source: str) -> Record | BadRecord:
    if isinstance(item, Record):
        limits.check_atoms(len(item.atomic_numbers), f"{source}: {item.where}")
    return item


def _sniff(head: bytes, path: Path) -> int:
    return OPENING if head.lstrip()[:1] in (b"{", b"[") and b'"elements"' in head else NO


def _in_folder(path: Path) -> bool:
    """Records inside: a folder's ``metadata.json`` or a manifest is not a molecule file."""
    with open(path, "rb") as fh:
        return b'"elements"' in fh.read(HEAD_BYTES)


FORMAT = Format(
    name="json",
    label="JSON molecule records",
    extensions=(".json", ".jsonl", ".ndjson"),
    read=records(read_json_records),
    description="what `GET …/molecules/{mol_id}` answers: records of `elements` and `positions` (Å), with `id`, "
    "`smiles` and `properties`; one, an array, or one a line (JSON Lines)",
    sniff=_sniff,
    media_type="application/json",
    in_folder=_in_folder,
)
