"""The wwPDB Chemical Component Dictionary (CCD): every ligand, ion and monomer of the PDB, a molecule each.

Reads the text mmCIF the wwPDB distributes (``components.cif``, or one component's ``.cif``: a ``data_``
block per component) and the BinaryCIF that biotite ships (``biotite/structure/info/components.bcif``:
one block whose ``_chem_comp_atom`` rows run component by component); the content says which. The
molecule id is the component id (``_chem_comp_atom.comp_id``: ``ATP``, ``ZN``, ``HEM``), the elements its
atoms' ``type_symbol``, and the coordinates the ``coordinates`` option chooses:

* ``ideal`` (the default): ``pdbx_model_Cartn_{x,y,z}_ideal``, the computed ideal geometry;
* ``model``: ``model_Cartn_{x,y,z}``, the pose taken from one PDB entry.

A component some of whose atoms lack the chosen coordinates (``?``) is skipped, with that reason; with
``fallback=yes`` it takes the other kind where those are complete, and a warning counts such components.
The component's total charge (e) is the sum of its atoms' formal charges (``_chem_comp_atom.charge``), or,
where an atom's is ``?``, the component's ``_chem_comp.pdbx_formal_charge``; it is the record's charge, which
the chemistry stage perceives bonds at (ions, charged ligands), and also the property ``charge``, as a
``charge=`` key of extended XYZ is. Bonds, names and descriptors are not read.

The mmCIF parser is biotite's, an optional dependency: ``pip install 'orientscope[ccd]'``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from orientscope.core.errors import DatasetError, Unavailable
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
)
from orientscope.loaders.formats import HEAD_BYTES, NO, OPENING, Format, FormatOption, records

COORDINATES = {
    "ideal": ("pdbx_model_Cartn_x_ideal", "pdbx_model_Cartn_y_ideal", "pdbx_model_Cartn_z_ideal"),
    "model": ("model_Cartn_x", "model_Cartn_y", "model_Cartn_z"),
}
FALLBACK = ("no", "yes")
ATOMS = "chem_comp_atom"
BCIF_KEY = b"\xaadataBlocks"  # the MessagePack string "dataBlocks": BinaryCIF's top-level key
PROGRESS_EVERY = 1000  # components


def _pdbx():
    try:
        from biotite.structure.io import pdbx
    except ImportError:
        raise Unavailable(
            "reading the Chemical Component Dictionary needs biotite, an optional dependency: "
            "pip install 'orientscope[ccd]'"
        ) from None
    return pdbx


def _check(coordinates: str, fallback: str) -> None:
    if coordinates not in COORDINATES:
        raise ValueError(f"unknown CCD coordinates {coordinates!r}; expected one of {tuple(COORDINATES)}")
    if fallback not in FALLBACK:
        raise ValueError(f"unknown CCD fallback {fallback!r}; expected one of {FALLBACK}")


def is_binary(head: bytes) -> bool:
    """BinaryCIF: a MessagePack map (fixmap, map16 or map32) with the key ``dataBlocks`` near its start."""
    return head[:1] != b"" and (0x80 <= head[0] <= 0x8F or head[0] in (0xDE, 0xDF)) and BCIF_KEY in head[:256]


def _sniff(head: bytes, path: Path) -> int:
    if is_binary(head):
        return OPENING
    lines = (line.strip() for line in head.split(b"\n"))
    opening = next((line for line in lines if line and not line.startswith(b"#")), b"")
    return OPENING if opening[:5].lower() == b"data_" and b"_chem_comp" in head else NO


def read_ccd(
    path: Path,
    limits: Limits,
    progress: Progress | None = None,
    coordinates: str = "ideal",
    fallback: str = "no",
) -> Iterator[Record | BadRecord]:
    """The components of a CCD file (text mmCIF or BinaryCIF), one record each (see the module's docstring)."""
    _check(coordinates, fallback)
    path = Path(path)
    pdbx = _pdbx()
    with open(path, "rb") as fh:
        head = fh.read(HEAD_BYTES)
    if is_binary(head):
        yield from _read_binary(pdbx, path, progress, coordinates, fallback == "yes")
        return
    with open_text(path, progress) as fh:
        for name, line_no, text in _text_blocks(LineReader(fh, path.name)):
            try:
                block = pdbx.CIFBlock.deserialize(text)
                yield from _components(block, f"data_{name} (line {line_no})", coordinates, fallback == "yes")
            except DatasetError:
                raise
            except Exception as err:  # biotite raises its own and numpy's errors for a malformed block
                yield BadRecord(f"data_{name} (line {line_no})", f"not a readable mmCIF block ({err})")


def _text_blocks(lines: LineReader) -> Iterator[tuple[str, int, str]]:
    """(block name, line of its ``data_``, its text) for each data block, streamed.

    A ``data_`` line inside a ``;`` text field does not start a block.
    """
    name, start, body, in_text = None, 0, [], False
    while (line := lines.next()) is not None:
        if line.startswith(";"):
            in_text = not in_text
        if not in_text and line[:5].lower() == "data_":
            if name is not None:
                yield name, start, "".join(body)
            name, start, body = line[5:].strip(), lines.line_no, []
            continue
        if name is None:
            if line.strip() and not line.lstrip().startswith("#"):
                raise DatasetError(
                    f"{lines.source}: line {lines.line_no}: expected a 'data_' block (mmCIF), got {line.strip()[:60]!r}"
                )
            continue
        body.append(line)
    if name is None:
        raise DatasetError(f"{lines.source}: no 'data_' block; expected wwPDB Chemical Component Dictionary mmCIF")
    yield name, start, "".join(body)


def _read_binary(pdbx, path: Path, progress, coordinates: str, fallback: bool) -> Iterator[Record | BadRecord]:
    if progress is not None:
        progress(0.0, f"reading {path.name}")
    try:
        bcif = pdbx.BinaryCIFFile.read(str(path))
        blocks = [(name, bcif[name]) for name in bcif]
    except Exception as err:  # msgpack and biotite raise their own errors for a damaged file
        raise DatasetError(f"{path.name}: not a readable BinaryCIF file ({type(err).__name__}: {err})") from None
    for name, block in blocks:
        yield from _components(block, f"data_{name}", coordinates, fallback, progress)


def _column(category, name: str, dtype, missing):
    """A column as an array, ``missing`` where the file has ``?`` or ``.`` or no such column."""
    if name not in category:
        return np.full(category.row_count, missing, dtype=dtype)
    return category[name].as_array(dtype, masked_value=missing)


def _components(block, where: str, coordinates: str, fallback: bool, progress=None) -> Iterator[Record | BadRecord]:
    """The records of one data block's components, in the order they first appear."""
    listed, formal = _formal_charges(block)
    if ATOMS not in block:
        named = f" (component {', '.join(map(repr, listed[:3]))})" if listed else ""
        yield BadRecord(where, f"no _chem_comp_atom category{named}: a component without atoms, or not CCD mmCIF")
        return
    try:
        table = _atom_table(block[ATOMS])
    except Exception as err:  # biotite and numpy raise their own errors for a malformed column
        yield BadRecord(where, f"unreadable _chem_comp_atom ({type(err).__name__}: {err})")
        return
    ids = table["ids"].tolist()
    for name in sorted(set(listed) - set(ids), key=listed.index):
        yield BadRecord(f"component {name!r}", "no atoms in _chem_comp_atom")
    other = next(k for k in COORDINATES if k != coordinates)
    for done, (mol_id, rows) in enumerate(zip(ids, table["rows"], strict=True)):
        yield _record(mol_id, rows, table, coordinates, other, fallback, formal.get(mol_id, np.nan))
        if progress is not None and done % PROGRESS_EVERY == 0:
            progress(done / len(ids), f"read {done:,} of {len(ids):,} components")


def _formal_charges(block) -> tuple[list[str], dict[str, float]]:
    """The component ids ``_chem_comp`` lists, and each one's ``pdbx_formal_charge`` (NaN where ``?``)."""
    if "chem_comp" not in block:
        return [], {}
    comp = block["chem_comp"]
    listed = _column(comp, "id", str, "?").tolist()
    return listed, dict(zip(listed, _column(comp, "pdbx_formal_charge", float, np.nan).tolist(), strict=True))


def _atom_table(atoms) -> dict:
    """The columns read, as arrays over the rows of ``_chem_comp_atom``, and each component's rows.

    ids : the component ids in the order they first appear; rows : for each, its rows in file order
    """
    comp = _column(atoms, "comp_id", str, "?")
    symbols = _column(atoms, "type_symbol", str, "?")
    z, why = _atomic_numbers(symbols)
    ids, first, inverse = np.unique(comp, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    starts = np.concatenate([[0], np.cumsum(np.bincount(inverse, minlength=len(ids)))])
    by_appearance = np.argsort(first, kind="stable")
    return {
        "ids": ids[by_appearance],
        "rows": [order[starts[k] : starts[k + 1]] for k in by_appearance],
        "atom_names": _column(atoms, "atom_id", str, "?"),
        "symbols": symbols,
        "z": z,
        "why": why,
        "charges": _column(atoms, "charge", float, np.nan),
        **{kind: np.stack([_column(atoms, c, float, np.nan) for c in cols], 1) for kind, cols in COORDINATES.items()},
    }


def _record(mol_id: str, rows: np.ndarray, table: dict, chosen: str, other: str, fallback: bool,
            formal_charge: float) -> Record | BadRecord:  # fmt: skip
    where = f"component {mol_id!r}"
    z = table["z"][rows]
    wrong = np.flatnonzero(z == 0)
    if wrong.size:
        row = rows[int(wrong[0])]
        atom = f"atom {int(wrong[0]) + 1} ({table['atom_names'][row]})"
        return BadRecord(where, f"{atom}: {table['why'][table['symbols'][row]]}")
    symbols = {s.upper() for s in table["symbols"][rows].tolist()}
    notes = (ISOTOPE_NOTE,) if symbols & set(HYDROGEN_ISOTOPES) else ()
    pos = table[chosen][rows]
    if not np.isfinite(pos).all():
        n_missing = int((~np.isfinite(pos).all(axis=1)).sum())
        missing = f"no {chosen} coordinates ({n_missing} of {len(rows)} atoms have '?')"
        other_complete = bool(np.isfinite(table[other][rows]).all())
        if not other_complete:
            return BadRecord(where, f"{missing}, nor complete {other} ones")
        if not fallback:
            return BadRecord(where, f"{missing}; its {other} ones are read with coordinates={other} or fallback=yes")
        pos = table[other][rows]
        notes += (f"components without {chosen} coordinates were read with their {other} ones (fallback=yes)",)
    charge = float(table["charges"][rows].sum())  # NaN where an atom's charge is '?'
    if np.isnan(charge):
        charge = float(formal_charge)
    return Record(
        where=where,
        atomic_numbers=z,
        positions_angstrom=pos,
        id=str(mol_id),
        properties={"charge": charge},
        notes=notes,
        charge=charge,
    )


def _atomic_numbers(symbols: np.ndarray) -> tuple[np.ndarray, dict[str, str]]:
    """(n_atoms,) atomic numbers (0 where the symbol is not an element) and, per such symbol, why."""
    unique, inverse = np.unique(symbols, return_inverse=True)
    table = np.zeros(len(unique), dtype=np.int16)
    why = {}
    for k, symbol in enumerate(unique.tolist()):
        try:
            table[k] = element_to_z(symbol)
        except ValueError as err:
            why[symbol] = str(err)
    return table[inverse.reshape(-1)], why


FORMAT = Format(
    name="ccd",
    label="wwPDB Chemical Component Dictionary",
    extensions=(".cif", ".bcif"),
    read=records(read_ccd),
    description="components (ligands, ions, monomers) as mmCIF `data_` blocks or biotite's BinaryCIF; the "
    "component id is the id, its formal charge the total charge (and property `charge`); needs `orientscope[ccd]`",
    sniff=_sniff,
    media_type="chemical/x-mmcif",
    options=(
        FormatOption(
            "coordinates",
            tuple(COORDINATES),
            "ideal",
            "the computed ideal geometry, or the model coordinates taken from a PDB entry",
        ),
        FormatOption(
            "fallback", FALLBACK, "no", "yes: a component without the chosen coordinates takes the other ones"
        ),
    ),
)
