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
than pickles. Pattern-fingerprint screening (``prefilter``) spares a query the
molecules whose fingerprint lacks the pattern's bits: on full QM9 (load 15-20)
seven patterns took a median 2.5 s against 7.4 s without it, but making the
fingerprints costs ~15-30 s on QM9, so an index built on the spot does without.
:func:`search_data` makes what an index holds, fingerprints included, once (a
dataset keeps it: ``pipeline.shard_smarts``); :meth:`SubstructureIndex.from_search_data`
reads it back, screen and all, without parsing a molecule.
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


def _parsed(molecules, patterns=None):
    """(valid, the SMILES an index holds: "" for none, the pattern fingerprint when ``patterns`` is a
    PatternHolder, else None) of each molecule, one alive at a time (all of QM9's at once is ~850 MB that the C
    heap then keeps)."""
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    empty = Chem.Mol()
    for m in molecules:
        mol = _molecule(m)
        # RDKit writes these SMILES from a sanitised molecule, so re-reading them unsanitised is exact
        smiles = Chem.MolToSmiles(mol) if mol is not None else ""
        fingerprint = None if patterns is None else patterns.MakeFingerprint(mol if mol is not None else empty)
        yield mol is not None, smiles, fingerprint


@dataclass(frozen=True)
class SearchData:
    """What an index holds for n molecules, made once (:func:`search_data`) and kept with a dataset, so that
    an index is made again without parsing a molecule (:meth:`SubstructureIndex.from_search_data`).

    smiles : each molecule's SMILES as RDKit writes it from the sanitised molecule ("" where there is none)
    valid : (n,) bool
    patterns : each molecule's pattern fingerprint (:data:`PATTERN_BITS` bits) in RDKit's binary form, the
        screen; empty for an index without one
    rdkit : the RDKit version that made them (another version's fingerprints may differ: not to be mixed)
    """

    smiles: list[str]
    valid: np.ndarray
    patterns: list[bytes]
    rdkit: str


def rdkit_version() -> str:
    import rdkit

    return rdkit.__version__


def search_data(molecules) -> SearchData:
    """What an index holds for ``molecules``, its screen included. Parsing is the cost of an index (QM9: about
    9 s, 25 s with the fingerprints)."""
    from rdkit.Chem import rdSubstructLibrary

    maker = rdSubstructLibrary.PatternHolder(PATTERN_BITS)
    smiles, valid, patterns = [], [], []
    for ok, text, fingerprint in _parsed(molecules, maker):
        smiles.append(text)
        valid.append(ok)
        patterns.append(fingerprint.ToBinary())
    return SearchData(smiles, np.array(valid, bool), patterns, rdkit_version())


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
        from rdkit.Chem import rdSubstructLibrary

        maker = rdSubstructLibrary.PatternHolder(PATTERN_BITS) if prefilter else None
        self._fill(_parsed(molecules, maker), prefilter, n_threads)

    @classmethod
    def from_search_data(cls, data: SearchData, n_threads: int = 2) -> SubstructureIndex:
        """The index over what :func:`search_data` made, its screen included when it holds fingerprints:
        nothing is parsed (QM9's 130,831 molecules load in about a second instead of the build's 25 s)."""
        from rdkit import DataStructs

        prefilter = bool(data.patterns)
        if prefilter and data.rdkit != rdkit_version():
            raise ValueError(f"pattern fingerprints of RDKit {data.rdkit} cannot screen for RDKit {rdkit_version()}")
        patterns = data.patterns if prefilter else [None] * len(data.smiles)
        entries = (
            (bool(ok), str(s) if ok else "", None if p is None else DataStructs.ExplicitBitVect(p))
            for s, ok, p in zip(data.smiles, data.valid, patterns, strict=True)
        )
        index = cls.__new__(cls)
        index._fill(entries, prefilter, n_threads)
        return index

    def _fill(self, entries, prefilter: bool, n_threads: int) -> None:
        """Hold ``entries``: (valid, SMILES, pattern fingerprint or None) each; with ``prefilter`` the
        fingerprints make the screen."""
        from rdkit.Chem import rdSubstructLibrary

        holder = rdSubstructLibrary.CachedTrustedSmilesMolHolder()
        patterns = rdSubstructLibrary.PatternHolder(PATTERN_BITS) if prefilter else None
        valid = []
        self.nbytes_ = 0  # the SMILES the holder keeps, and the fingerprints
        for ok, smiles, fingerprint in entries:
            valid.append(ok)
            holder.AddSmiles(smiles)
            self.nbytes_ += len(smiles) + 32  # a std::string each
            if patterns is not None:
                patterns.AddFingerprint(fingerprint)
                self.nbytes_ += PATTERN_BITS // 8 + 32
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
