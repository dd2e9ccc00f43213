"""SMARTS substructure search over a dataset's molecules.

:class:`SubstructureIndex` parses the molecules once into an RDKit
``SubstructLibrary``, optionally with pattern fingerprints (2048 bits) for
screening: a molecule can only match if it has every bit of the query's
pattern fingerprint. The scan runs in blocks and stops after ``timeout_s`` (the result
says it is partial) so a pathological SMARTS cannot hang a request.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

PATTERN_BITS = 2048
MAX_SMARTS_LENGTH = 500
DEFAULT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class SearchResult:
    indices: np.ndarray  # (k,) int64 rows that match, ascending
    n_candidates: int  # rows the library returned before dropping unparsable ones
    complete: bool  # False if the timeout or max_matches stopped the scan
    seconds: float


def parse_smarts(smarts: str):
    """An RDKit query molecule; ValueError naming the SMARTS if it is invalid."""
    from rdkit import Chem

    if not isinstance(smarts, str) or not smarts.strip():
        raise ValueError("SMARTS must be a non-empty string, e.g. 'C=O' or '[#7]~[#6]'")
    if len(smarts) > MAX_SMARTS_LENGTH:
        raise ValueError(f"SMARTS is {len(smarts)} characters long; at most {MAX_SMARTS_LENGTH} are accepted")
    query = Chem.MolFromSmarts(smarts.strip())
    if query is None:
        raise ValueError(f"invalid SMARTS {smarts!r}: RDKit could not parse it (e.g. 'C=O', 'c1ccccc1', '[#7;R]')")
    return query


def _to_mols(smiles_or_mols) -> list:
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    return [Chem.MolFromSmiles(s) if isinstance(s, str) else s for s in smiles_or_mols]


class SubstructureIndex:
    """An RDKit SubstructLibrary (C++ matching, 2 threads) over the parsed molecules.

    Parameters
    ----------
    smiles_or_mols : sequence of SMILES strings ("" / unparsable -> never matches) or RDKit molecules
    prefilter : keep pattern fingerprints for screening: on full QM9 it cut the
        p95 query time by ~1/3 but makes the build ~3x slower (BENCHMARKS.md,
        section chemistry).
    n_threads : matching threads
    """

    def __init__(self, smiles_or_mols, prefilter: bool = True, n_threads: int = 2):
        from rdkit import Chem
        from rdkit.Chem import rdSubstructLibrary

        mols = _to_mols(smiles_or_mols)
        self.valid_ = np.array([m is not None for m in mols], bool)
        holder = rdSubstructLibrary.MolHolder()
        patterns = rdSubstructLibrary.PatternHolder(PATTERN_BITS) if prefilter else None
        empty = Chem.Mol()
        for m in mols:
            holder.AddMol(m if m is not None else empty)
        self.library_ = (
            rdSubstructLibrary.SubstructLibrary(holder, patterns)
            if prefilter
            else rdSubstructLibrary.SubstructLibrary(holder)
        )
        if prefilter:
            for m in mols:
                patterns.AddFingerprint(patterns.MakeFingerprint(m if m is not None else empty))
        self.prefilter = prefilter
        self.n_threads = n_threads

    def __len__(self) -> int:
        return len(self.valid_)

    def search(
        self, smarts: str, timeout_s: float = DEFAULT_TIMEOUT_S, max_matches: int | None = None, block: int = 20000
    ) -> SearchResult:
        """Rows whose molecule contains ``smarts``; scans blocks until done or ``timeout_s``."""
        t0 = time.perf_counter()
        query = parse_smarts(smarts)
        hits: list[np.ndarray] = []
        n_found = 0
        complete = True
        n = len(self)
        for lo in range(0, n, block):
            hi = min(n, lo + block)
            limit = -1 if max_matches is None else max_matches - n_found
            found = np.asarray(
                self.library_.GetMatches(query, lo, hi, True, False, False, self.n_threads, limit), np.int64
            )
            hits.append(found)
            n_found += len(found)
            done = hi == n
            if not done and (
                (max_matches is not None and n_found >= max_matches) or time.perf_counter() - t0 > timeout_s
            ):
                complete = False
                break
        idx = np.sort(np.concatenate(hits)) if hits else np.zeros(0, np.int64)
        return SearchResult(idx[self.valid_[idx]], int(len(idx)), complete, time.perf_counter() - t0)


def search_smarts(
    smiles_or_mols, smarts: str, prefilter: bool = True, timeout_s: float = DEFAULT_TIMEOUT_S
) -> np.ndarray:
    """(k,) row indices of the molecules containing ``smarts`` (one-off; reuse an index for many queries)."""
    return SubstructureIndex(smiles_or_mols, prefilter=prefilter).search(smarts, timeout_s=timeout_s).indices
