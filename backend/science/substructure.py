"""SMARTS substructure search over a dataset's molecules: the one index and its limits.

:class:`SubstructureIndex` keeps the molecules once in an RDKit
``SubstructLibrary`` (C++ matching, 2 threads). The scan runs in blocks and
stops after ``timeout_s``: the result then holds the matches found so far,
says it is not complete and how many molecules were scanned, so a
pathological SMARTS cannot hold a request.

Molecules are held as RDKit's own canonical SMILES
(``CachedTrustedSmilesMolHolder``, ~30 bytes each), re-read without
sanitising at match time. Measured on full QM9 (2-core machine, load 3-4):
live molecules (``MolHolder``) match ~5x faster but take ~850 MB, too much for
a web worker; binary pickles (``CachedMolHolder``, ~0.3 kB each) took 85.5 s
over 29 queries where trusted SMILES took 57.3 s with identical matches; the
Python loop of ``HasSubstructMatch`` the service used before was ~1.7x slower
than pickles. Pattern-fingerprint screening (``prefilter``) speeds selective
queries but costs ~15-30 s of build on QM9, so it is off by default.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

PATTERN_BITS = 2048
MAX_SMARTS_LENGTH = 500
DEFAULT_TIMEOUT_S = 10.0
# Molecules matched per library call; the timeout is checked between blocks.
BLOCK = 4096


@dataclass(frozen=True)
class SearchResult:
    indices: np.ndarray  # (k,) int64 rows that match, ascending
    n_scanned: int  # rows scanned (== len(index) when complete)
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


def canonical_smarts(smarts: str) -> str:
    """RDKit's SMARTS written back from the parsed query: one spelling for patterns that differ only in form
    (``"C=O"`` and ``" [C]=[O] "`` give the same string), the key under which a search's result is kept.

    Raises ``ValueError`` like :func:`parse_smarts`.
    """
    from rdkit import Chem

    return Chem.MolToSmarts(parse_smarts(smarts))


def _molecule(m):
    """A sanitised RDKit molecule from a SMILES string (None if empty or unparsable) or an RDKit molecule."""
    from rdkit import Chem

    return (Chem.MolFromSmiles(m) if m else None) if isinstance(m, str) else m


def _parsed(molecules):
    """(sanitised molecule or None, the SMILES an index holds for it: "" for none) of each, one alive at a time
    (all of QM9's at once is ~850 MB that the C heap then keeps)."""
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    for m in molecules:
        mol = _molecule(m)
        # RDKit writes these SMILES from a sanitised molecule, so re-reading them unsanitised is exact
        yield mol, (Chem.MolToSmiles(mol) if mol is not None else "")


def search_smiles(molecules) -> tuple[list[str], np.ndarray]:
    """What an index holds for ``molecules``: each one's SMILES as RDKit writes it from the sanitised
    molecule ("" where there is none) and (n,) bool which are valid. Parsing is the cost of building an
    index (about 9 s on QM9); kept with a dataset, :meth:`SubstructureIndex.from_search_smiles` reads them
    back without parsing."""
    smiles, valid = [], []
    for mol, text in _parsed(molecules):
        smiles.append(text)
        valid.append(mol is not None)
    return smiles, np.array(valid, bool)


class SubstructureIndex:
    """An RDKit SubstructLibrary over the molecules.

    Parameters
    ----------
    molecules : sequence of SMILES strings or RDKit molecules; "", None or an
        unparsable SMILES never matches
    prefilter : keep pattern fingerprints for screening (see the module note)
    n_threads : matching threads
    """

    def __init__(self, molecules, prefilter: bool = False, n_threads: int = 2):
        self._fill(_parsed(molecules), prefilter, n_threads)

    @classmethod
    def from_search_smiles(cls, smiles, valid, n_threads: int = 2) -> SubstructureIndex:
        """The index over SMILES and validity that :func:`search_smiles` made: nothing is parsed (QM9's 130,831
        load in a fraction of a second instead of the build's 9 s)."""
        index = cls.__new__(cls)
        valid = np.asarray(valid, bool)
        index._fill(((True if ok else None, str(s) if ok else "") for s, ok in zip(smiles, valid, strict=True)),
                    False, n_threads)  # fmt: skip
        return index

    def _fill(self, parsed, prefilter: bool, n_threads: int) -> None:
        """Hold ``parsed`` ((molecule or None, SMILES) pairs; the molecule is only read for the prefilter)."""
        from rdkit import Chem
        from rdkit.Chem import rdSubstructLibrary

        holder = rdSubstructLibrary.CachedTrustedSmilesMolHolder()
        patterns = rdSubstructLibrary.PatternHolder(PATTERN_BITS) if prefilter else None
        empty = Chem.Mol()
        valid = []
        self.nbytes_ = 0  # the SMILES the holder keeps
        for mol, smiles in parsed:
            valid.append(mol is not None)
            holder.AddSmiles(smiles)
            self.nbytes_ += len(smiles) + 32  # a std::string each
            if patterns is not None:
                patterns.AddFingerprint(patterns.MakeFingerprint(mol if mol is not None else empty))
        self.valid_ = np.array(valid, bool)
        self.nbytes_ += self.valid_.nbytes
        if patterns is not None:
            self.library_ = rdSubstructLibrary.SubstructLibrary(holder, patterns)
        else:
            self.library_ = rdSubstructLibrary.SubstructLibrary(holder)
        self.prefilter = prefilter
        self.n_threads = n_threads

    def cache_nbytes(self) -> int:
        """Bytes held, about (the molecules' SMILES, not the RDKit objects parsed while matching)."""
        return self.nbytes_

    def __len__(self) -> int:
        return len(self.valid_)

    def search(
        self, smarts: str, timeout_s: float = DEFAULT_TIMEOUT_S, max_matches: int | None = None, block: int = BLOCK
    ) -> SearchResult:
        """Rows whose molecule contains ``smarts``; scans blocks until done, ``max_matches`` or ``timeout_s``.

        Raises ``ValueError`` naming the problem if ``smarts`` is invalid or too long.
        """
        t0 = time.perf_counter()
        query = parse_smarts(smarts)
        hits: list[np.ndarray] = []
        n_found = 0
        n = len(self)
        hi = 0
        for lo in range(0, n, block):
            hi = min(n, lo + block)
            limit = -1 if max_matches is None else max_matches - n_found
            found = np.asarray(
                self.library_.GetMatches(query, lo, hi, True, False, False, self.n_threads, limit), np.int64
            )
            hits.append(found)
            n_found += len(found)
            if hi < n and (
                (max_matches is not None and n_found >= max_matches) or time.perf_counter() - t0 > timeout_s
            ):
                break
        idx = np.sort(np.concatenate(hits)) if hits else np.zeros(0, np.int64)
        return SearchResult(idx[self.valid_[idx]], hi, hi == n, time.perf_counter() - t0)


def search_smarts(molecules, smarts: str, prefilter: bool = False, timeout_s: float = DEFAULT_TIMEOUT_S) -> np.ndarray:
    """(k,) row indices of the molecules containing ``smarts`` (one-off; reuse an index for many queries)."""
    return SubstructureIndex(molecules, prefilter=prefilter).search(smarts, timeout_s=timeout_s).indices
