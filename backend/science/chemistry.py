"""Per-molecule chemistry with RDKit: graphs, Morgan fingerprints, scaffolds, formulas.

A molecule's graph comes from its SMILES where the dataset has one, otherwise
bonds are perceived from the 3D coordinates at the molecule's total charge
(``science.perception``: one guarded path, under a budget). A SMILES whose
heavy-atom count disagrees with the 3D atoms is not trusted: the molecule falls
back to perception. Every RDKit call on one molecule (parsing, perception,
removing hydrogens, SMILES, scaffolds, fingerprints) is guarded: a molecule
whose graph cannot be built, or on which a later step fails, is kept and
flagged (``ok`` False, ``reason`` a code of ``NO_GRAPH_REASONS``, ``error``
RDKit's words); its fingerprint is empty and it has no scaffold. No molecule
can stop the set. Only a generic scaffold that RDKit cannot make (all atoms
carbon: a metal's dative bonds become a five-bonded carbon) is left empty on
an otherwise good molecule.

Fingerprints are Morgan (radius 2, 2048 bits) packed little-endian into
``(n, 32)`` uint64 words: bit ``b`` is bit ``b % 64`` of word ``b // 64``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from orientscope.core.dataset import MoleculeSet
from orientscope.core.elements import hill_formulas
from orientscope.science.perception import NO_GRAPH_REASONS, perceive_bonds

log = logging.getLogger(__name__)

FP_RADIUS = 2
FP_BITS = 2048
FP_WORDS = FP_BITS // 64
FP_COLUMNS = [f"fp{i:02d}" for i in range(FP_WORDS)]
SOURCES = ("smiles", "3d", "failed")
REASONS = tuple(NO_GRAPH_REASONS)


@dataclass(frozen=True)
class Chemistry:
    """Chemistry of ``n`` molecules.

    smiles : (n,) str, the graph used ("" if it failed)
    formula : (n,) str, Hill formula from the 3D atoms (always defined)
    scaffold : (n,) str, Murcko scaffold SMILES ("" for acyclic or failed)
    generic_scaffold : (n,) str, the scaffold with all atoms C and bonds single
    ok : (n,) bool, a molecular graph was built
    source : (n,) str, one of :data:`SOURCES`
    error : (n,) str, why the SMILES was rejected or the graph failed ("" if none)
    reason : (n,) str, "" where ``ok``, else a code of ``NO_GRAPH_REASONS`` (why there is no graph)
    fingerprints : (n, 32) uint64 packed Morgan bits
    """

    smiles: np.ndarray
    formula: np.ndarray
    scaffold: np.ndarray
    generic_scaffold: np.ndarray
    ok: np.ndarray
    source: np.ndarray
    error: np.ndarray
    reason: np.ndarray
    fingerprints: np.ndarray

    def __len__(self) -> int:
        return len(self.ok)


class MoleculeFailure(Exception):
    """One molecule's chemistry failed: ``reason`` (a ``NO_GRAPH_REASONS`` code) and RDKit's words."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def _guarded(step: str, fn, *args, **kwargs):
    """``fn(*args)``; any RDKit error becomes a MoleculeFailure naming ``step`` (KeyboardInterrupt passes)."""
    try:
        return fn(*args, **kwargs)
    except MoleculeFailure:
        raise
    except Exception as exc:  # RDKit raises many unrelated types for one molecule's chemistry
        raise MoleculeFailure("rdkit", f"{step}: {str(exc).strip() or type(exc).__name__}") from None


# ------------------------------------------------------------------ graphs
def mol_from_xyz(atomic_numbers: np.ndarray, positions_angstrom: np.ndarray, charge: float = math.nan):
    """An RDKit molecule (hydrogens removed) with bonds perceived from 3D coordinates at ``charge`` (NaN: 0).

    Raises MoleculeFailure (a ValueError-like error with a ``reason`` code) naming why perception failed.
    """
    from rdkit import Chem

    found = perceive_bonds(atomic_numbers, positions_angstrom, charge)
    if found.mol is None:
        raise MoleculeFailure(found.reason, f"bond perception from 3D coordinates failed: {found.message}")
    try:
        return Chem.RemoveHs(found.mol)
    except Exception:  # RDKit may fail to kekulize again a ring it made aromatic around a metal's dative bonds
        return _guarded("removing hydrogens", _without_hydrogens, found.mol)


def _without_hydrogens(mol):
    """``mol`` (sanitised) without its hydrogens and without sanitising it again."""
    from rdkit import Chem

    out = Chem.RemoveHs(mol, sanitize=False)
    out.UpdatePropertyCache(strict=False)
    Chem.FastFindRings(out)
    return out


def smiles_graph(smiles: str, n_heavy: int):
    """(RDKit mol, "") of a SMILES whose heavy-atom count is ``n_heavy``, else (None, why it is not trusted)."""
    from rdkit import Chem

    try:
        mol = Chem.MolFromSmiles(smiles)
    except Exception:  # RDKit may raise on a malformed SMILES: it is simply not trusted
        mol = None
    if mol is None:
        return None, f"unparsable SMILES {smiles!r}"
    if mol.GetNumHeavyAtoms() != n_heavy:
        return None, f"SMILES {smiles!r} has {mol.GetNumHeavyAtoms()} heavy atoms, the 3D structure {n_heavy}"
    return mol, ""


def molecule_graph(smiles: str, z: np.ndarray, pos: np.ndarray, charge: float = math.nan):
    """(RDKit mol or None, source, error) of one molecule: its SMILES if it agrees with the 3D atoms, else perceived.

    ``source`` is one of :data:`SOURCES`; ``error`` says why the SMILES was
    rejected or perception failed ("" if none).
    """
    error = ""
    if smiles:
        mol, error = smiles_graph(smiles, int((z > 1).sum()))
        if mol is not None:
            return mol, "smiles", ""
    try:
        return mol_from_xyz(z, pos, charge), "3d", error
    except MoleculeFailure as exc:
        return None, "failed", "; ".join(e for e in (error, str(exc)) if e)


def murcko_scaffolds(mol, cache: dict | None = None) -> tuple[str, str]:
    """(Murcko scaffold, generic scaffold) SMILES; ("", "") for acyclic molecules.

    The generic scaffold is the cyclic skeleton: all atoms carbon, all bonds
    single, exocyclic atoms pruned; "" where RDKit cannot make it (see
    :func:`scaffolds_and_note`). ``cache`` maps scaffold -> (generic SMILES, note).
    """
    return scaffolds_and_note(mol, cache)[:2]


def scaffolds_and_note(mol, cache: dict | None = None) -> tuple[str, str, str]:
    """(Murcko scaffold, generic scaffold, note): the note says why the generic scaffold is "" on a ring system
    RDKit cannot turn all-carbon (a metal with five bonds becomes a carbon it will not accept); MoleculeFailure
    if the scaffold itself fails."""
    from rdkit import Chem
    from rdkit.Chem.Scaffolds import MurckoScaffold

    if mol.GetRingInfo().NumRings() == 0:
        return "", "", ""
    core = _guarded("Murcko scaffold", MurckoScaffold.GetScaffoldForMol, mol)
    exact = _guarded("scaffold SMILES", Chem.MolToSmiles, core)
    cache = {} if cache is None else cache
    if exact not in cache:
        try:
            generic = MurckoScaffold.GetScaffoldForMol(MurckoScaffold.MakeScaffoldGeneric(core))
            cache[exact] = (Chem.MolToSmiles(generic), "")
        except Exception as exc:  # only the generic form is lost; the molecule keeps its graph and scaffold
            cache[exact] = ("", f"no generic scaffold: {str(exc).strip() or type(exc).__name__}")
    return exact, *cache[exact]


def _graph_record(mol, smiles: str, source: str, gen, cache: dict) -> tuple[str, str, str, str, str]:
    """(graph SMILES, scaffold, generic scaffold, FPS hex fingerprint, note) of one built graph; MoleculeFailure
    if a step fails. The note says what was left out of an otherwise good graph ("" if nothing)."""
    from rdkit import Chem, DataStructs

    exact, generic, note = scaffolds_and_note(mol, cache)
    # FPS text is the bit vector as little-endian hex: bytes.fromhex packs it as we store it.
    hex_fp = DataStructs.BitVectToFPSText(_guarded("Morgan fingerprint", gen.GetFingerprint, mol))
    graph = smiles if source == "smiles" else _guarded("SMILES", Chem.MolToSmiles, mol)
    return graph, exact, generic, hex_fp, note


def heavy_atom_counts(atomic_numbers: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(n,) int64 atoms heavier than hydrogen per molecule."""
    n = len(offsets) - 1
    member = np.repeat(np.arange(n), np.diff(offsets))
    return np.bincount(member, weights=np.asarray(atomic_numbers) > 1, minlength=n).astype(np.int64)


def chemistry_chunk(chunk: tuple) -> tuple:
    """Graphs, packed fingerprints and scaffolds of one chunk ``(smiles, z, pos, offsets, charges)``.

    ``charges`` is (n,) float, NaN where the file gives no charge (or None: all unknown).
    Molecules that repeat a SMILES (conformers, tiled copies) share one RDKit
    parse, fingerprint and scaffold: the work is done once per distinct
    (SMILES, heavy-atom count), since a SMILES graph does not depend on the
    coordinates. Only molecules whose SMILES is missing or rejected are
    perceived from their own 3D atoms, at their own charge. Returns (smiles,
    sources, errors, scaffolds, generic scaffolds, reasons) lists and (n,
    FP_WORDS) uint64 fingerprints.
    """
    from rdkit import RDLogger
    from rdkit.Chem import rdFingerprintGenerator

    smiles, z, pos, offsets, charges = chunk
    charges = np.full(len(smiles), np.nan) if charges is None else np.asarray(charges, np.float64)
    RDLogger.DisableLog("rdApp.*")
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=FP_RADIUS, fpSize=FP_BITS)
    empty = "0" * (FP_BITS // 4)
    heavy = heavy_atom_counts(z, offsets)
    cache: dict[str, str] = {}
    by_smiles: dict[tuple[str, int], tuple] = {}  # (SMILES, heavy atoms) -> (record or MoleculeFailure, error)
    records, sources, errors, reasons = [], [], [], []
    for i, smi in enumerate(smiles):
        key = (smi, int(heavy[i]))
        if smi and key not in by_smiles:
            mol, error = smiles_graph(smi, key[1])
            by_smiles[key] = (None if mol is None else _record_or_failure(mol, smi, "smiles", gen, cache), error)
        record, error = by_smiles[key] if smi else (None, "")
        source = "smiles"
        if record is None:
            a, b = offsets[i], offsets[i + 1]
            try:
                record, source = _record_or_failure(mol_from_xyz(z[a:b], pos[a:b], charges[i]), smi, "3d", gen,
                                                    cache), "3d"  # fmt: skip
            except MoleculeFailure as exc:
                record = exc
        if isinstance(record, MoleculeFailure):
            records.append(("", "", "", empty))
            sources.append("failed")
            errors.append("; ".join(e for e in (error, str(record)) if e))
            reasons.append(record.reason)
            continue
        records.append(record[:4])
        sources.append(source)
        errors.append("; ".join(e for e in (error, record[4]) if e))
        reasons.append("")
    out_smiles, scaffolds, generics, hex_fps = (
        (list(col) for col in zip(*records, strict=True)) if records else ([],) * 4
    )
    fps = np.frombuffer(bytes.fromhex("".join(hex_fps)), dtype=np.uint8).reshape(len(smiles), FP_BITS // 8)
    return out_smiles, sources, errors, scaffolds, generics, reasons, fps.view(np.uint64)


def _record_or_failure(mol, smiles: str, source: str, gen, cache: dict):
    """:func:`_graph_record` of a built graph, or the MoleculeFailure of the step that failed on it."""
    try:
        return _graph_record(mol, smiles, source, gen, cache)
    except MoleculeFailure as exc:
        return exc


def pack_bits(n_bits: np.ndarray, bits: np.ndarray, n_words: int = FP_WORDS, chunk: int = 16384) -> np.ndarray:
    """(n, n_words) uint64 from per-molecule on-bit counts and the flat on-bit list."""
    n = len(n_bits)
    out = np.zeros((n, n_words), dtype=np.uint64)
    starts = np.concatenate([[0], np.cumsum(n_bits)])
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        dense = np.zeros((hi - lo, n_words * 64), dtype=np.uint8)
        rows = np.repeat(np.arange(hi - lo), n_bits[lo:hi])
        dense[rows, bits[starts[lo] : starts[hi]]] = 1
        out[lo:hi] = np.packbits(dense, axis=1, bitorder="little").view(np.uint64)
    return out


def compute_chemistry(mols: MoleculeSet, map_chunks: Callable | None = None, n_chunks: int = 1) -> Chemistry:
    """Chemistry of every molecule of ``mols``, cut into ``n_chunks`` contiguous pieces that
    ``map_chunks(fn, items)`` (e.g. an engine's map) runs; by default one piece, in this process."""
    n = mols.n_molecules
    edges = np.linspace(0, n, max(n_chunks, 1) + 1).round().astype(int)
    chunks = [molecule_chunk(mols, lo, hi) for lo, hi in zip(edges[:-1], edges[1:], strict=True) if hi > lo]
    results = map_chunks(chemistry_chunk, chunks) if map_chunks else [chemistry_chunk(c) for c in chunks]
    return merge_chunks(results, hill_formulas(mols.atomic_numbers, mols.offsets))


def molecule_chunk(mols: MoleculeSet, lo: int, hi: int) -> tuple:
    """The input of :func:`chemistry_chunk` for molecules ``lo:hi`` of ``mols``."""
    off = mols.offsets
    smiles = list(mols.smiles[lo:hi]) if mols.smiles is not None else [""] * (hi - lo)
    charges = None if mols.charges is None else mols.charges[lo:hi]
    return (smiles, mols.atomic_numbers[off[lo] : off[hi]], mols.positions_angstrom[off[lo] : off[hi]],
            off[lo : hi + 1] - off[lo], charges)  # fmt: skip


def merge_chunks(results: list[tuple], formula: np.ndarray) -> Chemistry:
    """The :class:`Chemistry` of consecutive chunks' :func:`chemistry_chunk` results (``formula``: of them all)."""

    def cat(i: int) -> np.ndarray:
        return np.concatenate([np.asarray(r[i], dtype=object) for r in results]) if results else np.zeros(0, object)

    out_smiles, sources, errors, scaffolds, generic, reasons = (cat(i).astype(str) for i in range(6))
    fps = np.concatenate([r[6] for r in results]) if results else np.zeros((0, FP_WORDS), np.uint64)
    ok = sources != "failed"
    if (~ok).any():
        log.warning("%d of %d molecules have no molecular graph", int((~ok).sum()), len(ok))
    return Chemistry(
        smiles=out_smiles,
        formula=np.asarray(formula).astype(str),
        scaffold=scaffolds,
        generic_scaffold=generic,
        ok=ok,
        source=sources,
        error=errors,
        reason=reasons,
        fingerprints=fps,
    )
