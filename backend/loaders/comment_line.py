"""The ``key=value`` comment line of (extended) XYZ, read as text and written so that it reads back.

ASE's reader guesses a type for every value (``id=000`` becomes the integer 0,
``name=T`` becomes True, ``id=1E3`` a float), so ids are read here instead, with
the same grammar (whitespace-separated ``key=value`` pairs; a value or key in
``"…"``, ``'…'``, ``{…}`` or ``[…]`` may hold spaces; a backslash keeps the next
character as it is) but every value kept as the text written. Only properties
become numbers.

The server's single-molecule downloads carry its own tags ``pose=stored|canonical``
and ``units=angstrom`` (and the dataset's id): where both tags are present, they
are read as metadata, never as properties, and the older form
``<dataset> <id> pose=… units=…`` gives the id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from orientscope.loaders.base import written_property_name

ID_KEYS = ("id", "name", "mol_id", "identifier")
SMILES_KEYS = ("smiles", "SMILES", "canonical_smiles")
# Frame-level keys of extended XYZ that describe the file, not the molecule.
FRAME_KEYS = ("Properties", "Lattice", "pbc")
SERVER_TAGS = ("dataset", "pose", "units")
SERVER_POSES = ("stored", "canonical")
ANGSTROM = ("angstrom", "ångström", "å", "a", "ang")
OWN_KEYS = frozenset({*ID_KEYS, *SMILES_KEYS, *FRAME_KEYS, *SERVER_TAGS})
_CLOSING = {'"': '"', "'": "'", "{": "}", "[": "]"}
_BOOLEANS = {"T": 1.0, "F": 0.0, "true": 1.0, "false": 0.0, "True": 1.0, "False": 0.0, "TRUE": 1.0, "FALSE": 0.0}
_NEEDS_QUOTES = set("\"'{}[]=\\")


def comment_pairs(text: str) -> list[tuple[str, str | None]]:
    """``[(key, value as written)]`` of a comment line, in order; a bare word's value is None.

    The grammar is ASE's extended-XYZ comment grammar (``ase.io.extxyz.key_val_str_to_dict``),
    without its type guessing.
    """
    entries: list[list[list[str]]] = [[[]]]  # per entry: the key's characters, then each value piece's
    closing = None
    escaped = False
    for char in text.strip():
        if escaped:
            entries[-1][-1].append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif closing:
            if char == closing:
                closing = None
            else:
                entries[-1][-1].append(char)
        elif char in _CLOSING:
            closing = _CLOSING[char]
        elif char.isspace():
            if entries[-1] != [[]] and entries[-1][-1] != []:
                entries.append([[]])
        elif char == "=":
            if entries[-1] == [[]] and len(entries) > 1:  # "key =value": the value belongs to the word before
                del entries[-1]
            entries[-1].append([])
        else:
            entries[-1][-1].append(char)
    pairs: list[tuple[str, str | None]] = []
    for entry in entries:
        if entry == [[]]:
            continue
        key = "".join(entry[0])
        pairs.append((key, None) if len(entry) == 1 else (key, "=".join("".join(p) for p in entry[1:])))
    return pairs


def quote(text: str) -> str:
    """``text`` as one key or value of a comment line: quoted (and escaped) when it would not read back bare."""
    text = text.replace("\r", " ").replace("\n", " ")
    if text and not any(c.isspace() or c in _NEEDS_QUOTES for c in text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_value(value) -> str:
    """A property value as the shortest text that reads back as the same float (``nan`` for missing)."""
    if value is None:
        return "nan"
    return repr(float(value))


def format_comment(fields: list[tuple[str, object]]) -> str:
    """A comment line of ``key=value`` pairs: text values quoted where needed, numbers written exactly."""
    out = []
    for key, value in fields:
        if value == "":  # an empty value cannot be written: the next pair would read as its value
            continue
        text = quote(value) if isinstance(value, str) else format_value(value)
        out.append(f"{quote(key)}={text}")
    return " ".join(out)


def property_value(text: str) -> float | None:
    """The number a property's text holds (``T``/``F`` as 1/0, as ASE reads them), or None if it is not one."""
    words = re.findall(r"[^\s,]+", text)
    if len(words) != 1:
        return None
    if words[0] in _BOOLEANS:
        return _BOOLEANS[words[0]]
    try:
        return float(words[0])
    except ValueError:
        return None


def server_tags(values: dict[str, str]) -> bool:
    """Whether a record carries the server's own tags: ``pose`` one of SERVER_POSES and ``units``."""
    return values.get("pose") in SERVER_POSES and "units" in values


def check_units(units: str) -> str | None:
    """Why coordinates tagged ``units`` cannot be read (None for ångström)."""
    if units.strip().lower() in ANGSTROM:
        return None
    return f"units={units!r}: coordinates are read in ångström (units=angstrom); convert them first"


@dataclass
class CommentFields:
    """What a comment line says about its molecule.

    id, smiles : as written (None / "" if absent)
    properties : numeric values, by key as written
    tags : the server's own tags (pose, units, dataset), read as metadata
    spec : the extended-XYZ ``Properties=`` column spec, if any
    problem : why the record cannot be read (units that are not ångström), else None
    """

    id: str | None = None
    smiles: str = ""
    properties: dict[str, float] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    spec: str | None = None
    problem: str | None = None


def read_comment(comment: str, flags: bool = True) -> CommentFields:
    """The id, SMILES, properties and server tags of one (extended) XYZ comment line, ids as written.

    A comment that is one word is the id (plain XYZ). With ``flags`` (extended
    XYZ), other bare words are ASE's boolean flags, a property of 1; without
    (plain XYZ, whose comment is free text) they are not read. Identifier and
    SMILES keys, the frame keys (``Properties``, ``Lattice``, ``pbc``) and, in
    the server's own files, its tags are never properties.
    """
    pairs = comment_pairs(comment)
    values = {k: v for k, v in pairs if v is not None}  # a repeated key: the last one, as ASE reads it
    bare = [k for k, v in pairs if v is None]
    out = CommentFields(spec=values.get("Properties"))
    out.id = next((values[k] for k in ID_KEYS if values.get(k)), None)
    out.smiles = next((values[k] for k in SMILES_KEYS if values.get(k)), "")
    skip = {*ID_KEYS, *SMILES_KEYS, *FRAME_KEYS}
    if server_tags(values):
        skip.update(SERVER_TAGS)
        out.tags = {k: values[k] for k in SERVER_TAGS if k in values}
        out.problem = check_units(values["units"])
        if out.id is None and len(bare) >= 2:  # the older download: "<dataset> <id> pose=… units=…"
            out.tags.setdefault("dataset", bare[0])  # a dataset id has no blank (a slug): the rest is the id
            out.id, bare = " ".join(bare[1:]), []
    if out.id is None and len(pairs) == 1 and bare:
        out.id, bare = bare[0], []
    for key, text in values.items():
        if key not in skip:
            number = property_value(text)
            if number is not None:
                out.properties[key] = number
    for key in bare if flags else ():
        if key not in skip:
            out.properties[key] = 1.0
    return out


def comment_fields(mol_id: str, smiles: str | None, properties: dict[str, float]) -> list[tuple[str, object]]:
    """The ``(key, value)`` pairs of one molecule's comment line: its id, SMILES, then properties (a property
    named like a key the line uses itself, such as ``name``, as ``property:name``)."""
    fields: list[tuple[str, object]] = [("id", str(mol_id))]
    if smiles:
        fields.append(("smiles", str(smiles)))
    fields += [(written_property_name(str(k), OWN_KEYS), v) for k, v in properties.items()]
    return fields
