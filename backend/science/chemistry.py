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
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import current_process, get_context

import numpy as np

from backend.core.dataset import MoleculeSet
from backend.core.elements import hill_formulas
from backend.core.progress import Progress, quiet

log = logging.getLogger(__name__)

FP_RADIUS = 2
FP_BITS = 2048
FP_WORDS = FP_BITS // 64
FP_COLUMNS = [f"fp{i:02d}" for i in range(FP_WORDS)]
# Below this many molecules worker processes cost more than they save.
MIN_PARALLEL = 4000
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


def molecule_graph(smiles: str, z: np.ndarray, pos: np.ndarray):
    """(RDKit mol or None, source, error) of one molecule: its SMILES if it agrees with the 3D atoms, else perceived.

    ``source`` is one of :data:`SOURCES`; ``error`` says why the SMILES was
    rejected or perception failed ("" if none).
    """
    from rdkit import Chem

    heavy = int((z > 1).sum())
    error = ""
    if smiles:
        mol = Chem.MolFromSmiles(smiles)
        if mol is None:
            error = f"unparsable SMILES {smiles!r}"
        elif mol.GetNumHeavyAtoms() != heavy:
            error = f"SMILES {smiles!r} has {mol.GetNumHeavyAtoms()} heavy atoms, the 3D structure {heavy}"
        else:
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


def _chunk_worker(smiles: list[str], z: np.ndarray, pos: np.ndarray, offsets: np.ndarray):
    """Graphs, packed fingerprints and scaffolds of one chunk (runs in a worker)."""
    from rdkit import Chem, DataStructs, RDLogger
    from rdkit.Chem import rdFingerprintGenerator

    RDLogger.DisableLog("rdApp.*")
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=FP_RADIUS, fpSize=FP_BITS)
    empty = "0" * (FP_BITS // 4)
    out_smiles, sources, errors, scaffolds, generics, hex_fps = [], [], [], [], [], []
    cache: dict[str, str] = {}
    for i, smi in enumerate(smiles):
        a, b = offsets[i], offsets[i + 1]
        mol, source, error = molecule_graph(smi, z[a:b], pos[a:b])
        sources.append(source)
        errors.append(error)
        if mol is None:
            out_smiles.append("")
            scaffolds.append("")
            generics.append("")
            hex_fps.append(empty)
            continue
        out_smiles.append(smi if source == "smiles" else Chem.MolToSmiles(mol))
        exact, generic = murcko_scaffolds(mol, cache)
        scaffolds.append(exact)
        generics.append(generic)
        # FPS text is the bit vector as little-endian hex: bytes.fromhex packs it as we store it.
        hex_fps.append(DataStructs.BitVectToFPSText(gen.GetFingerprint(mol)))
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


def _chunks(n: int, n_chunks: int) -> list[tuple[int, int]]:
    edges = np.linspace(0, n, n_chunks + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]


def compute_chemistry(mols: MoleculeSet, n_jobs: int | None = None, progress: Progress | None = None) -> Chemistry:
    """Chemistry of every molecule of ``mols``.

    Parameters
    ----------
    n_jobs : worker processes (default: up to 2, the CPUs we budget for);
        small sets run in-process.
    progress : called with (fraction, message) as chunks finish.
    """
    n = mols.n_molecules
    notify = progress or quiet
    smiles = list(mols.smiles) if mols.smiles is not None else [""] * n
    n_jobs = max(1, min(n_jobs or 2, os.cpu_count() or 1))
    # Daemon processes (e.g. a job runner's workers) may not start children.
    serial = n < MIN_PARALLEL or n_jobs == 1 or current_process().daemon
    n_chunks = 1 if serial else 8 * n_jobs
    spans = _chunks(n, n_chunks)
    off = mols.offsets

    def args(lo, hi):
        return (
            smiles[lo:hi],
            mols.atomic_numbers[off[lo] : off[hi]],
            mols.positions_angstrom[off[lo] : off[hi]],
            off[lo : hi + 1] - off[lo],
        )

    if len(spans) == 1:
        results = [_chunk_worker(*args(*spans[0]))] if spans else []
    else:
        results = []
        # forkserver: the parent may hold threads (pyarrow), which fork would copy unsafely.
        with ProcessPoolExecutor(n_jobs, mp_context=get_context("forkserver")) as pool:
            futures = [pool.submit(_chunk_worker, *args(lo, hi)) for lo, hi in spans]
            for k, fut in enumerate(futures):
                results.append(fut.result())
                notify((k + 1) / len(futures), f"parsed {spans[k][1]:,} of {n:,} molecules")

    def cat(i, dtype):
        parts = [np.asarray(r[i], dtype=dtype) for r in results]
        return np.concatenate(parts) if parts else np.zeros(0, dtype)

    out_smiles, sources, errors, scaffolds, generic = (cat(i, object).astype(str) for i in range(5))
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
