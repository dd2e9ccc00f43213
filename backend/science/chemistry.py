"""Per-molecule chemistry with RDKit: graphs, Morgan fingerprints, scaffolds, formulas.

A molecule's graph comes from its SMILES where the dataset has one, otherwise
bonds are perceived from the 3D coordinates (``rdDetermineBonds``). A SMILES
whose heavy-atom count disagrees with the 3D atoms is not trusted: the
molecule falls back to perception. A molecule whose graph cannot be built is
kept and flagged (``ok`` False, ``error`` says why); its fingerprint is empty
and it has no scaffold.

Fingerprints are Morgan (radius 2, 2048 bits) packed little-endian into
``(n, 32)`` uint64 words: bit ``b`` is bit ``b % 64`` of word ``b // 64``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from orientscope.core.dataset import MoleculeSet
from orientscope.core.elements import hill_formulas

log = logging.getLogger(__name__)

FP_RADIUS = 2
FP_BITS = 2048
FP_WORDS = FP_BITS // 64
FP_COLUMNS = [f"fp{i:02d}" for i in range(FP_WORDS)]
SOURCES = ("smiles", "3d", "failed")


@dataclass(frozen=True)
class Chemistry:
    """Chemistry of ``n`` molecules.

    smiles : (n,) str, the graph used ("" if it failed)
    formula : (n,) str, Hill formula from the 3D atoms (always defined)
    scaffold : (n,) str, Murcko scaffold SMILES ("" for acyclic or failed)
    generic_scaffold : (n,) str, the scaffold with all atoms C and bonds single
    ok : (n,) bool, a molecular graph was built
    source : (n,) str, one of :data:`SOURCES`
    error : (n,) str, why the SMILES was rejected or perception failed ("" if none)
    fingerprints : (n, 32) uint64 packed Morgan bits
    """

    smiles: np.ndarray
    formula: np.ndarray
    scaffold: np.ndarray
    generic_scaffold: np.ndarray
    ok: np.ndarray
    source: np.ndarray
    error: np.ndarray
    fingerprints: np.ndarray

    def __len__(self) -> int:
        return len(self.ok)


# ------------------------------------------------------------------ graphs
def mol_from_xyz(atomic_numbers: np.ndarray, positions_angstrom: np.ndarray, charge: int = 0):
    """An RDKit molecule (hydrogens removed) with bonds perceived from 3D coordinates.

    Raises ``ValueError`` naming the reason if perception fails.
    """
    from rdkit import Chem
    from rdkit.Chem import rdDetermineBonds

    rw = Chem.RWMol()
    for z in atomic_numbers:
        rw.AddAtom(Chem.Atom(int(z)))
    conf = Chem.Conformer(len(atomic_numbers))
    for i, p in enumerate(np.asarray(positions_angstrom, dtype=np.float64)):
        conf.SetAtomPosition(i, p.tolist())
    mol = rw.GetMol()
    mol.AddConformer(conf, assignId=True)
    try:
        rdDetermineBonds.DetermineBonds(mol, charge=charge)
        Chem.SanitizeMol(mol)
        return Chem.RemoveHs(mol)
    except Exception as exc:  # RDKit raises several unrelated types here
        raise ValueError(f"bond perception from 3D coordinates failed: {exc}".strip()) from None


def smiles_graph(smiles: str, n_heavy: int):
    """(RDKit mol, "") of a SMILES whose heavy-atom count is ``n_heavy``, else (None, why it is not trusted)."""
    from rdkit import Chem

    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return None, f"unparsable SMILES {smiles!r}"
    if mol.GetNumHeavyAtoms() != n_heavy:
        return None, f"SMILES {smiles!r} has {mol.GetNumHeavyAtoms()} heavy atoms, the 3D structure {n_heavy}"
    return mol, ""


def molecule_graph(smiles: str, z: np.ndarray, pos: np.ndarray):
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
        return mol_from_xyz(z, pos), "3d", error
    except ValueError as exc:
        return None, "failed", "; ".join(e for e in (error, str(exc)) if e)


def murcko_scaffolds(mol, cache: dict | None = None) -> tuple[str, str]:
    """(Murcko scaffold, generic scaffold) SMILES; ("", "") for acyclic molecules.

    The generic scaffold is the cyclic skeleton: all atoms carbon, all bonds
    single, exocyclic atoms pruned. ``cache`` maps scaffold -> generic SMILES.
    """
    from rdkit import Chem
    from rdkit.Chem.Scaffolds import MurckoScaffold

    if mol.GetRingInfo().NumRings() == 0:
        return "", ""
    core = MurckoScaffold.GetScaffoldForMol(mol)
    exact = Chem.MolToSmiles(core)
    cache = {} if cache is None else cache
    if exact not in cache:
        generic = MurckoScaffold.GetScaffoldForMol(MurckoScaffold.MakeScaffoldGeneric(core))
        cache[exact] = Chem.MolToSmiles(generic)
    return exact, cache[exact]


def _graph_record(mol, smiles: str, source: str, gen, cache: dict) -> tuple[str, str, str, str]:
    """(graph SMILES, scaffold, generic scaffold, FPS hex fingerprint) of one built graph."""
    from rdkit import Chem, DataStructs

    exact, generic = murcko_scaffolds(mol, cache)
    # FPS text is the bit vector as little-endian hex: bytes.fromhex packs it as we store it.
    hex_fp = DataStructs.BitVectToFPSText(gen.GetFingerprint(mol))
    return (smiles if source == "smiles" else Chem.MolToSmiles(mol)), exact, generic, hex_fp


def heavy_atom_counts(atomic_numbers: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(n,) int64 atoms heavier than hydrogen per molecule."""
    n = len(offsets) - 1
    member = np.repeat(np.arange(n), np.diff(offsets))
    return np.bincount(member, weights=np.asarray(atomic_numbers) > 1, minlength=n).astype(np.int64)


def chemistry_chunk(chunk: tuple) -> tuple:
    """Graphs, packed fingerprints and scaffolds of one chunk ``(smiles, z, pos, offsets)``.

    Molecules that repeat a SMILES (conformers, tiled copies) share one RDKit
    parse, fingerprint and scaffold: the work is done once per distinct
    (SMILES, heavy-atom count), since a SMILES graph does not depend on the
    coordinates. Only molecules whose SMILES is missing or rejected are
    perceived from their own 3D atoms. Returns (smiles, sources, errors,
    scaffolds, generic scaffolds) lists and (n, FP_WORDS) uint64 fingerprints.
    """
    from rdkit import RDLogger
    from rdkit.Chem import rdFingerprintGenerator

    smiles, z, pos, offsets = chunk
    RDLogger.DisableLog("rdApp.*")
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=FP_RADIUS, fpSize=FP_BITS)
    empty = "0" * (FP_BITS // 4)
    failed = ("", "", "", empty)
    heavy = heavy_atom_counts(z, offsets)
    cache: dict[str, str] = {}
    by_smiles: dict[tuple[str, int], tuple] = {}  # (SMILES, heavy atoms) -> (record or None, error)
    records, sources, errors = [], [], []
    for i, smi in enumerate(smiles):
        key = (smi, int(heavy[i]))
        if smi and key not in by_smiles:
            mol, error = smiles_graph(smi, key[1])
            by_smiles[key] = (None if mol is None else _graph_record(mol, smi, "smiles", gen, cache), error)
        record, error = by_smiles[key] if smi else (None, "")
        if record is not None:
            records.append(record)
            sources.append("smiles")
            errors.append("")
            continue
        a, b = offsets[i], offsets[i + 1]
        try:
            mol = mol_from_xyz(z[a:b], pos[a:b])
        except ValueError as exc:
            records.append(failed)
            sources.append("failed")
            errors.append("; ".join(e for e in (error, str(exc)) if e))
            continue
        records.append(_graph_record(mol, smi, "3d", gen, cache))
        sources.append("3d")
        errors.append(error)
    out_smiles, scaffolds, generics, hex_fps = (
        (list(col) for col in zip(*records, strict=True)) if records else ([],) * 4
    )
    fps = np.frombuffer(bytes.fromhex("".join(hex_fps)), dtype=np.uint8).reshape(len(smiles), FP_BITS // 8)
    return out_smiles, sources, errors, scaffolds, generics, fps.view(np.uint64)


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
    smiles = list(mols.smiles) if mols.smiles is not None else [""] * n
    off = mols.offsets
    edges = np.linspace(0, n, max(n_chunks, 1) + 1).round().astype(int)
    chunks = [
        (smiles[lo:hi], mols.atomic_numbers[off[lo] : off[hi]], mols.positions_angstrom[off[lo] : off[hi]],
         off[lo : hi + 1] - off[lo])
        for lo, hi in zip(edges[:-1], edges[1:], strict=True)
        if hi > lo
    ]  # fmt: skip
    results = map_chunks(chemistry_chunk, chunks) if map_chunks else [chemistry_chunk(c) for c in chunks]

    def cat(i: int) -> np.ndarray:
        return np.concatenate([np.asarray(r[i], dtype=object) for r in results]) if results else np.zeros(0, object)

    out_smiles, sources, errors, scaffolds, generic = (cat(i).astype(str) for i in range(5))
    fps = np.concatenate([r[5] for r in results]) if results else np.zeros((0, FP_WORDS), np.uint64)
    ok = sources != "failed"
    if (~ok).any():
        log.warning("%d of %d molecules have no molecular graph", int((~ok).sum()), n)
    return Chemistry(
        smiles=out_smiles,
        formula=hill_formulas(mols.atomic_numbers, mols.offsets),
        scaffold=scaffolds,
        generic_scaffold=generic,
        ok=ok,
        source=sources,
        error=errors,
        fingerprints=fps,
    )
