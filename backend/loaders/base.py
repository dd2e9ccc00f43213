"""What every format adapter shares: records, the streaming collector and counted reading.

A reader yields :class:`Record` (one molecule) or :class:`BadRecord` (a
malformed one it could step over) as it streams through a file; it raises
:class:`DatasetError` for damage it cannot step over (a truncated file, binary
junk). :class:`Collector` validates each record against :class:`Limits`,
skips and counts bad ones (unless strict) and builds the :class:`MoleculeSet`.
"""

from __future__ import annotations

import io
import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from orientscope.core.dataset import RESERVED_COLUMNS, TOTAL_CHARGE, MoleculeSet
from orientscope.core.elements import MAX_Z, atomic_number_message, dummy_atom_message, hill_formulas, symbol_to_z
from orientscope.core.errors import DatasetError
from orientscope.core.limits import Limits
from orientscope.core.progress import Progress

log = logging.getLogger(__name__)

MAX_PROBLEMS_KEPT = 20
MAX_TAG_VALUES = 10  # distinct values of one server tag kept in the dataset's metadata
# Deuterium and tritium are read as hydrogen: the store keeps elements, not isotopes (docs/formats.md).
HYDROGEN_ISOTOPES = ("D", "T")
ISOTOPE_NOTE = (
    "atoms written D or T (deuterium, tritium) were read as hydrogen (Z = 1): the store keeps elements, not "
    "isotopes, so mass-weighted frames (pca-mass, inertia) use hydrogen's mass"
)
# Symbols of atoms that are not elements: ghost, centroid and query atoms (RDKit reads them as atomic number 0).
DUMMY_SYMBOLS = ("X", "XX", "DU", "*", "Q", "A", "R", "L", "R#")


# A property whose name a format uses for something else (an npz array "z", an extended-XYZ key "name") is
# written as "property:<name>"; every reader takes such a column back under its own name.
PROPERTY_PREFIX = "property:"


def written_property_name(name: str, own: Iterable[str]) -> str:
    """The name to write property ``name`` under, in a format whose own fields are ``own``."""
    return f"{PROPERTY_PREFIX}{name}" if name in own or name.startswith(PROPERTY_PREFIX) else name


# Per-atom charges (e.g. Mulliken) sum to the total charge up to rounding: within this of a whole number.
CHARGE_TOLERANCE = 1e-3


@dataclass
class Record:
    """One molecule as read from a file; ``where`` locates it for error messages.

    ``notes`` are things said about the record that do not stop it (e.g. :data:`ISOTOPE_NOTE`), counted
    into the load's warnings; ``tags`` are the server's own tags (pose, units, dataset), read as metadata;
    ``units`` maps property names to their units where the file states them.
    """

    where: str
    atomic_numbers: np.ndarray
    positions_angstrom: np.ndarray
    id: str | None = None
    smiles: str = ""
    properties: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    tags: dict[str, str] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    charge: float = math.nan  # total charge in e, NaN if the file gives none (see :func:`charge_value`)


@dataclass
class BadRecord:
    where: str
    message: str


@dataclass
class Loaded:
    """A loaded dataset and what was skipped or changed on the way.

    problems : the skipped records, each named (at most MAX_PROBLEMS_KEPT)
    warnings : what was read differently from what the file says (renamed ids and properties, isotopes)
    tags : the server's own tags of the records (pose, units, dataset) -> their distinct values
    """

    mols: MoleculeSet
    format: str
    n_skipped: int = 0
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    tags: dict[str, list[str]] = field(default_factory=dict)


def element_to_z(token: str) -> int:
    """Atomic number from a symbol ("C", "cl"; "D" and "T" are hydrogen) or a number ("6").

    ValueError naming the token and what is accepted; dummy atoms ("X", "*", 0) get their own message.
    """
    token = token.strip()
    if token.upper() in HYDROGEN_ISOTOPES:
        return 1
    if token.isdigit():
        z = int(token)
        if not 1 <= z <= MAX_Z:
            raise ValueError(dummy_atom_message(token) if z == 0 else atomic_number_message(z))
        return z
    if token.upper() in DUMMY_SYMBOLS:
        raise ValueError(dummy_atom_message(token))
    try:
        return symbol_to_z(token)
    except ValueError:
        raise ValueError(
            f"unknown element symbol {token!r}; accepted: element symbols (H to Og), D and T (read as hydrogen), "
            f"or atomic numbers 1 to {MAX_Z}"
        ) from None


def charge_value(value) -> float:
    """A total charge read from a file as a whole number of e (float), NaN if absent or not one.

    Accepts ints, floats and numeric text; a sum of per-atom charges within ``CHARGE_TOLERANCE``
    of a whole number is rounded to it. Anything else (a fraction, text, NaN) is unknown.
    """
    if isinstance(value, bool | np.bool_) or value is None:
        return math.nan
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(-1)[0]
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        return math.nan
    whole = round(number) if math.isfinite(number) else math.nan
    return float(whole) if abs(number - whole) <= CHARGE_TOLERANCE else math.nan


def first_charge(*sources: dict, keys: tuple[str, ...] = (TOTAL_CHARGE, "charge")) -> float:
    """The first whole-number charge under ``keys`` in ``sources`` (mappings, in order of trust), else NaN."""
    for source in sources:
        for key in keys:
            if key in source:
                charge = charge_value(source[key])
                if not math.isnan(charge):
                    return charge
    return math.nan


def numeric_properties(items: Iterable[tuple[str, object]]) -> dict[str, float]:
    """Keep the finite-or-NaN real scalars of a key/value mapping, as float."""
    out: dict[str, float] = {}
    for key, value in items:
        if isinstance(value, bool | np.bool_):
            out[str(key)] = float(value)
            continue
        if isinstance(value, np.ndarray) and value.size == 1:
            value = value.reshape(-1)[0]
        if isinstance(value, int | float | np.integer | np.floating):
            out[str(key)] = float(value)
        elif isinstance(value, str):
            try:
                out[str(key)] = float(value.strip())
            except ValueError:
                continue
    return out


class Collector:
    """Validates records as they stream in and builds the molecule set.

    Parameters
    ----------
    source : name of the input used in messages (a file name)
    strict : fail on the first malformed record instead of skipping it
    limits : molecule, atom and bad-record limits
    """

    def __init__(self, source: str, strict: bool = False, limits: Limits | None = None):
        self.source = source
        self.strict = strict
        self.limits = limits or Limits()
        self.id_prefix = ""
        self._z: list[np.ndarray] = []
        self._pos: list[np.ndarray] = []
        self._counts: list[np.ndarray] = []
        self._ids: list[str] = []
        self._smiles: list[str] = []
        self._charges: list[float] = []
        self._props: dict[str, list[float]] = {}
        self._units: dict[str, str] = {}
        self._renamed: dict[str, str] = {}  # property name as written -> as stored
        self._notes: dict[str, list] = {}  # note -> [records, first record's place]
        self._tags: dict[str, list[str]] = {}
        self.n_good = 0
        self.n_atoms = 0
        self.n_bad = 0
        self.problems: list[str] = []

    # ----------------------------------------------------------------- intake
    def bad(self, where: str, message: str) -> None:
        text = f"{self.source}: {where}: {message}"
        if self.strict:
            raise DatasetError(f"{text} (strict mode: no malformed records allowed)")
        self.n_bad += 1
        if len(self.problems) < MAX_PROBLEMS_KEPT:
            self.problems.append(text)
        log.info("skipped %s", text)

    def add(self, item: Record | BadRecord) -> None:
        if isinstance(item, BadRecord):
            self.bad(item.where, item.message)
            return
        z = np.asarray(item.atomic_numbers).reshape(-1)
        pos = np.asarray(item.positions_angstrom, dtype=np.float64)
        problem = self._check(z, pos, item.where)
        if problem:
            self.bad(item.where, problem)
            return
        self._accept(1, len(z), item.where)
        self._z.append(z.astype(np.int16))
        self._pos.append(pos.reshape(-1, 3))
        self._counts.append(np.array([len(z)], dtype=np.int64))
        self._ids.append(item.id if item.id else f"{self.id_prefix}{self.n_good}")
        self._smiles.append(item.smiles or "")
        self._charges.append(charge_value(item.charge))
        self._add_props(item.properties, 1)
        self._read_aside(item)

    def _read_aside(self, item: Record) -> None:
        """Keep what a record says besides its atoms: notes (counted), server tags and property units."""
        for note in item.notes:
            self._notes.setdefault(note, [0, item.where])[0] += 1
        if item.tags:
            self._tags = merge_tags([self._tags, {k: [v] for k, v in item.tags.items()}])
        for name, unit in item.units.items():
            self._units.setdefault(self._property_name(name), unit)

    def add_bulk(
        self,
        z,
        pos,
        counts,
        ids,
        properties: dict[str, np.ndarray],
        smiles: list[str] | None = None,
        charges: np.ndarray | None = None,
    ) -> None:
        """Vectorised intake of many molecules; bad ones are skipped (counted) or fail if strict.

        ``charges``: (n,) total charge per molecule, NaN where unknown (see :func:`charge_value`).
        """
        z = np.asarray(z, dtype=np.int64)
        pos = np.asarray(pos, dtype=np.float64).reshape(-1, 3)
        counts = np.asarray(counts, dtype=np.int64)
        ids = np.asarray(ids).astype(str)
        charges = (
            np.full(len(counts), np.nan)
            if charges is None
            else np.array([charge_value(q) for q in np.asarray(charges)])
        )
        if counts.size and counts.max() > self.limits.max_atoms_per_molecule:
            self.limits.check_atoms(int(counts.max()), f"{self.source}: molecule {ids[int(np.argmax(counts))]!r}")
        offsets = np.concatenate([[0], np.cumsum(counts)])
        owner = np.repeat(np.arange(len(counts)), counts)
        bad_atom = ~np.isfinite(pos).all(axis=1) | (z < 1) | (z > MAX_Z)
        bad = np.zeros(len(counts), dtype=bool)
        bad[owner[bad_atom]] = True
        bad |= counts == 0
        for i in np.flatnonzero(bad):
            a, b = offsets[i], offsets[i + 1]
            self.bad(f"molecule {str(ids[i])!r} (index {i})", self._check(z[a:b], pos[a:b], "") or "invalid")
        if bad.any():
            keep = ~bad
            keep_atoms = keep[owner]
            z, pos, counts, ids, charges = z[keep_atoms], pos[keep_atoms], counts[keep], ids[keep], charges[keep]
            properties = {k: np.asarray(v)[keep] for k, v in properties.items()}
            smiles = None if smiles is None else [s for s, k in zip(smiles, keep, strict=True) if k]
        self._accept(len(counts), int(counts.sum()), self.source)
        self._z.append(z.astype(np.int16))
        self._pos.append(pos)
        self._counts.append(counts)
        self._ids.extend(ids)
        self._smiles.extend(smiles if smiles is not None else [""] * len(counts))
        self._charges.extend(charges.tolist())
        self._add_props({k: np.asarray(v, dtype=np.float64) for k, v in properties.items()}, len(counts))

    def _check(self, z: np.ndarray, pos: np.ndarray, where: str) -> str | None:
        if z.size == 0:
            return "no atoms"
        self.limits.check_atoms(int(z.size), where)
        if pos.shape != (z.size, 3):
            return f"{z.size} elements but positions of shape {pos.shape}"
        if not np.isfinite(pos).all():
            return "NaN or infinite coordinates"
        bad = (z < 1) | (z > MAX_Z)
        if bad.any():
            k = int(np.argmax(bad))
            return f"atom {k + 1}: {atomic_number_message(int(z[k]))}"
        return None

    def _accept(self, n_mols: int, n_atoms: int, where: str) -> None:
        self.limits.check_molecules(self.n_good + n_mols, self.source)
        self.limits.check_total_atoms(self.n_atoms + n_atoms, self.source)
        self.n_good += n_mols
        self.n_atoms += n_atoms

    def _property_name(self, key: str) -> str:
        """The stored name of a property: as written (``property:<name>`` is ``<name>``), but a name the
        molecules table uses itself (RESERVED_COLUMNS) is renamed, and reported."""
        key = str(key)
        if key.startswith(PROPERTY_PREFIX) and len(key) > len(PROPERTY_PREFIX):
            key = key[len(PROPERTY_PREFIX) :]
        if key not in RESERVED_COLUMNS:
            return key
        return self._renamed.setdefault(key, f"prop_{key}")

    def _add_props(self, props: dict, n_new: int) -> None:
        before = self.n_good - n_new
        for key, value in props.items():
            name = self._property_name(key)
            col = self._props.get(name)
            if col is None:
                col = self._props[name] = [math.nan] * before
            if len(col) < before:
                col.extend([math.nan] * (before - len(col)))
            if n_new == 1 and np.ndim(value) == 0:
                col.append(float(value))
            else:
                col.extend(np.asarray(value, dtype=np.float64).reshape(-1).tolist())

    # ---------------------------------------------------------------- result
    def finish(self, fmt: str) -> Loaded:
        total = self.n_good + self.n_bad
        if self.n_good == 0:
            first = f"; first problem: {self.problems[0]}" if self.problems else ""
            raise DatasetError(f"{self.source}: no valid molecules found{first}")
        if self.n_bad > self.limits.max_bad_fraction * total:
            raise DatasetError(
                f"{self.source}: {self.n_bad} of {total} records are malformed (more than "
                f"{self.limits.max_bad_fraction:.0%} allowed in lenient mode); first: {self.problems[0]}"
            )
        counts = np.concatenate(self._counts)
        props = {k: v + [math.nan] * (self.n_good - len(v)) for k, v in self._props.items()}
        smiles = np.array(self._smiles, dtype=str)
        z = np.concatenate(self._z)
        offsets = np.concatenate([[0], np.cumsum(counts)])
        ids, warnings = unique_ids(self._ids, lambda rows: formulas_of(z, offsets, rows), self.strict, self.source)
        charges = np.array(self._charges, dtype=np.float64)
        mols = MoleculeSet(
            atomic_numbers=z,
            positions_angstrom=np.concatenate(self._pos),
            offsets=offsets,
            ids=ids,
            smiles=smiles if (smiles != "").any() else None,
            properties=pd.DataFrame(props) if props else pd.DataFrame(),
            property_units={k: v for k, v in self._units.items() if k in props},
            charges=charges if (~np.isnan(charges)).any() else None,
        )
        warnings += self._warnings()
        return Loaded(mols, fmt, self.n_bad, list(self.problems), warnings, dict(self._tags))

    def _warnings(self) -> list[str]:
        """What was read differently from what the file says, besides the ids, one sentence each."""
        out = []
        if self._renamed:
            pairs = ", ".join(f"{old!r} → {new!r}" for old, new in self._renamed.items())
            out.append(
                f"{self.source}: {len(self._renamed)} propert{'y' if len(self._renamed) == 1 else 'ies'} renamed, "
                f"because the molecules table uses the name itself ({', '.join(sorted(RESERVED_COLUMNS))}): {pairs}"
            )
        for note, (n, where) in self._notes.items():
            out.append(f"{self.source}: {note} ({n:,} record{'s' if n > 1 else ''}; the first: {where})")
        if "canonical" in self._tags.get("pose", []):
            out.append(
                f"{self.source}: records tagged pose=canonical were written in their canonical pose by the server: "
                "such a set is aligned by construction"
            )
        return out


def merge_tags(parts: list[dict[str, list[str]]]) -> dict[str, list[str]]:
    """The server tags of several records or files: each tag's distinct values in order (at most MAX_TAG_VALUES)."""
    out: dict[str, list[str]] = {}
    for part in parts:
        for key, values in part.items():
            seen = out.setdefault(key, [])
            seen += [v for v in values if v not in seen][: MAX_TAG_VALUES - len(seen)]
    return out


def formulas_of(atomic_numbers: np.ndarray, offsets: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(len(rows),) the Hill formula (element counts) of the molecules at ``rows``."""
    counts = np.diff(offsets)[rows]
    starts = offsets[:-1][rows]
    own = np.concatenate([[0], np.cumsum(counts)])
    atoms = np.repeat(starts - own[:-1], counts) + np.arange(own[-1])
    return hill_formulas(atomic_numbers[atoms], own)


def unique_ids(ids: list[str], formulas, strict: bool = False, source: str = "") -> tuple[np.ndarray, list[str]]:
    """Ids made unique where one names several molecules, and warnings that count the renamed ones.

    Conformer files (QMugs SDF, OMol25) repeat a molecule's name once per
    conformer: where every molecule of a repeated id ``X`` has one formula (the
    same element counts), the k-th (0-based, in file order) becomes
    ``X_conf<k>``. Where they have different formulas they are different
    molecules: those of the first formula keep ``X`` (``X_conf<k>`` if several),
    those of the j-th other formula become ``X_dup<j>`` (``X_dup<j>_conf<k>``);
    under ``strict`` that is a DatasetError naming the id instead.

    ``formulas(rows)`` gives the formula of the molecules at ``rows``.
    """
    arr = np.asarray(ids, dtype=object).astype(str)
    _, inverse, counts = np.unique(arr, return_inverse=True, return_counts=True)
    repeated = np.flatnonzero(counts[inverse.reshape(-1)] > 1)
    if not repeated.size:
        return arr, []
    formula = dict(zip(repeated.tolist(), np.asarray(formulas(repeated)).tolist(), strict=True))
    names = arr.tolist()
    groups: dict[str, dict[str, list[int]]] = {}  # id -> formula -> rows, in file order
    for i in repeated.tolist():
        groups.setdefault(names[i], {}).setdefault(formula[i], []).append(i)
    out = arr.astype(object)
    conformers, distinct = [], []
    for mol_id, by_formula in groups.items():
        if len(by_formula) > 1 and strict:
            (f0, rows0), (f1, rows1) = list(by_formula.items())[:2]
            raise DatasetError(
                f"{source}: id {mol_id!r} names molecules of different formulas: {f0} (molecule {rows0[0] + 1} in "
                f"file order) and {f1} (molecule {rows1[0] + 1}); strict mode refuses two distinct molecules with "
                "one id"
            )
        (distinct if len(by_formula) > 1 else conformers).append(mol_id)
        for j, rows in enumerate(by_formula.values()):
            base = mol_id if j == 0 else f"{mol_id}_dup{j}"
            for k, i in enumerate(rows):
                out[i] = f"{base}_conf{k}" if len(rows) > 1 else base
    out = out.astype(str)
    _, inverse, counts = np.unique(out, return_inverse=True, return_counts=True)
    clash = repeated[counts[inverse.reshape(-1)][repeated] > 1]  # a new name that the file also uses verbatim
    if clash.size:
        out = out.astype(object)
        out[clash] = [f"{out[i]}#{i}" for i in clash]
        out = out.astype(str)
    return out, _id_warnings(source, groups, conformers, distinct)


def _id_warnings(source: str, groups: dict, conformers: list[str], distinct: list[str]) -> list[str]:
    out = []
    if conformers:
        n = sum(len(next(iter(groups[i].values()))) for i in conformers)
        out.append(
            f"{source}: {len(conformers):,} id(s) repeat over {n:,} molecules of one formula each: read as "
            f"conformers and numbered '<id>_conf<k>' in file order (e.g. {conformers[0]!r} → "
            f"{conformers[0] + '_conf0'!r})"
        )
    if distinct:
        n = sum(len(rows) for i in distinct for rows in groups[i].values())
        first = groups[distinct[0]]
        (f0, _), (f1, _) = list(first.items())[:2]
        out.append(
            f"{source}: {len(distinct):,} id(s) name {n:,} molecules of different formulas: the first formula's "
            f"molecules keep the id, the j-th other formula's get '<id>_dup<j>' (e.g. {distinct[0]!r} ({f0}) and "
            f"{distinct[0] + '_dup1'!r} ({f1})); use strict mode to refuse such a file"
        )
    return out


class CountingReader(io.RawIOBase):
    """A binary file wrapper that reports bytes read (for progress)."""

    def __init__(self, raw, total_bytes: int, progress: Progress | None, label: str):
        self._raw = raw
        self.total = max(int(total_bytes), 1)
        self.done = 0
        self._progress = progress
        self._label = label
        self._next_report = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._raw.readinto(buffer)
        self.done += n or 0
        if self._progress is not None and self.done >= self._next_report:
            self._next_report = self.done + max(self.total // 100, 1 << 20)
            self._progress(min(self.done / self.total, 1.0), f"reading {self._label}")
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


def open_text(path: Path, progress: Progress | None = None):
    """Open a text file for streaming, decoding strictly as UTF-8 and counting bytes."""
    path = Path(path)
    raw = open(path, "rb", buffering=0)  # handed to the wrapper that closes it
    counted = CountingReader(raw, path.stat().st_size, progress, path.name)
    return io.TextIOWrapper(io.BufferedReader(counted, 1 << 20), encoding="utf-8", errors="strict", newline=None)


class LineReader:
    """Numbered lines of a text stream; binary junk becomes a DatasetError naming the line."""

    def __init__(self, fh, source: str):
        self._fh = fh
        self.source = source
        self.line_no = 0

    def next(self) -> str | None:
        try:
            line = self._fh.readline()
        except UnicodeDecodeError:
            raise DatasetError(
                f"{self.source}: line {self.line_no + 1}: not UTF-8 text (binary data?); expected a text format"
            ) from None
        if not line:
            return None
        self.line_no += 1
        if "\x00" in line:
            raise DatasetError(f"{self.source}: line {self.line_no}: NUL bytes (binary data?); expected a text format")
        return line


def open_parquet(path: Path):
    """A ``pyarrow.parquet.ParquetFile``; DatasetError naming the file if it is not Parquet."""
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except Exception as err:  # pyarrow raises several types for a damaged file
        raise DatasetError(f"{path.name}: not a readable Parquet file ({type(err).__name__}: {err})") from None
