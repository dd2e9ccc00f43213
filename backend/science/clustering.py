"""Tanimoto search and clustering over packed fingerprints, without an N x N matrix.

Fingerprints are ``(n, n_words)`` uint64 rows (see :mod:`orientscope.science.chemistry`).

* :class:`TanimotoIndex`: exact Tanimoto search (k most similar, nearest
  neighbour of many queries) keeping the packed 64-bit words, word-major.
* :func:`leader_clusters`: sphere-exclusion ("leader") clustering at a
  Tanimoto threshold. Each leader's candidates come from an inverted index on
  its rarest bits (prefix filtering, exact), and assigned molecules are
  dropped from the index as clustering proceeds.
* :func:`leader_clusters_naive`: the same clustering from the full pairwise
  similarity matrix, the O(N²) baseline.
* :func:`sampled_leader_clusters`: exact leader clustering is still ~N² work
  on QM9 (at Tanimoto 0.6 most molecules are their own leader), so for whole
  datasets the leaders are found on a seeded sample and every other molecule
  joins its most similar leader if that is >= the threshold (else -1). The
  sample and the visiting order are counter-based draws by global index
  (:mod:`orientscope.science.counter_rng`), so a sharded run finds the same clusters.
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from orientscope.science.counter_rng import subsample, uniforms

# Re-compact the inverted index once this fraction of its entries is assigned.
COMPACT_FRACTION = 0.2
# Bands of the Tanimoto bound min(|a|, |b|) / max(|a|, |b|) a sharded scan visits, best first:
# [1, inf) holds the rows with the query's bit count (exact copies among them), then [0.9, 1), ...
BOUND_BANDS = (np.inf, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.3, -np.inf)


def _unpack(words: np.ndarray) -> np.ndarray:
    """(n, 64 * n_words) uint8 0/1 bits."""
    return np.unpackbits(np.ascontiguousarray(words).view(np.uint8), axis=1, bitorder="little")


def _set_bits(words: np.ndarray, chunk: int = 16384) -> tuple[np.ndarray, np.ndarray]:
    """(rows, bits) of every set bit, row-major."""
    rows, bits = [], []
    for lo in range(0, len(words), chunk):
        r, b = np.nonzero(_unpack(words[lo : lo + chunk]))
        rows.append(r + lo)
        bits.append(b)
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(rows).astype(np.int64), np.concatenate(bits).astype(np.int64)


def popcounts(words: np.ndarray) -> np.ndarray:
    """(n,) number of set bits per row."""
    return np.bitwise_count(words).sum(axis=1, dtype=np.int64)


def tanimoto_from_counts(inter: np.ndarray, count_a, count_b) -> np.ndarray:
    """|a∩b| / |a∪b|, with 0 where both are empty."""
    union = np.asarray(count_a) + np.asarray(count_b) - inter
    return np.divide(inter, union, out=np.zeros(np.shape(inter), np.float64), where=union > 0)


def pairwise_tanimoto(words_a: np.ndarray, words_b: np.ndarray, block: int = 256) -> np.ndarray:
    """(n_a, n_b) dense Tanimoto matrix, computed in blocks (the O(N²) baseline)."""
    ca, cb = popcounts(words_a), popcounts(words_b)
    out = np.empty((len(words_a), len(words_b)), np.float64)
    for lo in range(0, len(words_a), block):
        a = words_a[lo : lo + block]
        inter = np.bitwise_count(a[:, None, :] & words_b[None, :, :]).sum(axis=2, dtype=np.int64)
        out[lo : lo + block] = tanimoto_from_counts(inter, ca[lo : lo + block, None], cb[None, :])
    return out


def words_from_bytes(fps: np.ndarray) -> np.ndarray:
    """(n, n_words) uint64 from (n, n_bytes) uint8 packed bits, zero-padded to whole words."""
    fps = np.asarray(fps, dtype=np.uint8)
    pad = (-fps.shape[1]) % 8
    if pad:
        fps = np.pad(fps, ((0, 0), (0, pad)))
    return np.ascontiguousarray(fps).view(np.uint64)


class TanimotoIndex:
    """Exact Tanimoto search over a fixed set of packed fingerprints.

    The fingerprints are kept word-major, (n_words, n) uint64 (~33 MB for
    QM9's 134k 2048-bit fingerprints): a query touches only the words where
    its own bits are set (a few of 32 for a sparse Morgan fingerprint), each a
    contiguous scan. The loops are fused numba kernels
    (:mod:`orientscope.science.tanimoto_kernels`, which says why).

    Parameters
    ----------
    words : (n, n_words) uint64 packed fingerprints
    candidates : (n,) bool, rows that may be returned as neighbours (default all)
    """

    def __init__(self, words: np.ndarray, candidates: np.ndarray | None = None):
        words = np.asarray(words, dtype=np.uint64)
        self.columns_ = np.ascontiguousarray(words.T)
        self.counts_ = popcounts(words)
        self.candidates_ = np.ones(len(words), bool) if candidates is None else np.asarray(candidates, bool)

    def __len__(self) -> int:
        return self.columns_.shape[1]

    def intersections(self, i: int) -> np.ndarray:
        """(n,) int64 number of bits row ``i`` shares with every row."""
        inter = np.zeros(len(self), np.int64)
        from orientscope.science.tanimoto_kernels import intersections

        intersections(self.columns_, int(i), inter)
        return inter

    def similarities(self, i: int) -> np.ndarray:
        """(n,) Tanimoto of row ``i`` to every row (0 where both are empty)."""
        return tanimoto_from_counts(self.intersections(i), self.counts_[i], self.counts_)

    def most_similar(self, i: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` rows most similar to row ``i`` (itself excluded), best first; ties go to the lower index.

        Returns (indices (k,) int64, Tanimoto (k,) float64); fewer if there are fewer other rows.
        """
        if not 0 <= i < len(self):
            raise IndexError(f"row {i} out of range for {len(self)} fingerprints")
        sim = self.similarities(i)
        sim[i] = -np.inf
        k = min(k, len(sim) - 1)
        if k <= 0:
            return np.zeros(0, np.int64), np.zeros(0)
        kth = sim[np.argpartition(-sim, k - 1)[k - 1]]
        top = np.flatnonzero(sim >= kth)  # every row tied with the k-th, so ties go to the lower rows
        top = top[np.lexsort((top, -sim[top]))][:k]
        return top.astype(np.int64), sim[top]

    def nearest(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Nearest candidate row of each query row (excluding itself).

        Returns (neighbour index (q,) int64, similarity (q,) float64); ties go
        to the lowest index. -1 and 0.0 if there is no other candidate.
        """
        queries = np.asarray(queries, dtype=np.int64)
        nn = np.full(len(queries), -1, np.int64)
        best = np.zeros(len(queries))
        inter = np.zeros(len(self), np.int64)
        from orientscope.science.tanimoto_kernels import nearest as kernel

        for k, i in enumerate(queries):
            j, sim = kernel(self.columns_, self.counts_, self.candidates_, int(i), inter)
            if j >= 0:
                nn[k], best[k] = j, sim
        return nn, best


class ShardedTanimotoScan:
    """Exact Tanimoto search over row-major fingerprint shards (e.g. memory-mapped ``.npy`` files).

    Gives the answers of :class:`TanimotoIndex` over the shards' rows concatenated, without
    holding the fingerprints: only the (n,) uint16 bit counts are kept (20 MB at 10M).
    A query holds a running top-k (:func:`~orientscope.science.tanimoto_kernels.top_k_scan`).
    Since T(a, b) <= min(|a|, |b|) / max(|a|, |b|), the bound of a row follows from its bit
    count: the rows are visited in bands of that bound, best first (:data:`BOUND_BANDS`; each
    band a pass over the bit counts), and once k rows are held a row whose bound cannot beat
    the k-th is skipped without reading its fingerprint. On a set where the query's best
    matches are exact (copies, conformers of one molecule: Tanimoto 1) the first band, the
    rows with the query's own bit count, holds them, and the other bands are never read. The shards are cut into ``n_threads`` contiguous runs,
    each scanned with its own top-k by a thread (the kernel releases the GIL); the
    runs' top-k lists merge exactly, since each holds every row of its run that can be
    in the overall top-k.

    Parameters
    ----------
    shards : list of (n_s, n_words) uint64, rows in global order
    counts : list of (n_s,) set bits per row of each shard (e.g. written beside the
        fingerprints by the chemistry stage); counted from the shards if None
    after_scan : called with each shard once a query has read it (e.g. to release its mapped pages)
    n_threads : threads per query (the machine's cores)
    """

    def __init__(self, shards: list[np.ndarray], counts=None, after_scan=None, n_threads: int = 2):
        self.shards_ = list(shards)
        self.after_scan = after_scan
        self.n_threads = max(1, int(n_threads))
        self.starts_ = np.cumsum([0] + [len(s) for s in self.shards_])
        if counts is None:
            counts = [self._counts(s) for s in self.shards_]
        self.counts_ = [np.array(c, dtype=np.uint16) for c in counts]  # copied: the maps are not kept
        if [len(c) for c in self.counts_] != [len(s) for s in self.shards_]:
            raise ValueError("bit counts do not match the fingerprint shards row for row")
        self.n_bits_ = 64 * (self.shards_[0].shape[1] if self.shards_ else 0)

    def _counts(self, words: np.ndarray) -> np.ndarray:
        counts = popcounts(words)
        if self.after_scan is not None:
            self.after_scan(words)
        return counts

    def __len__(self) -> int:
        return int(self.starts_[-1])

    def row(self, i: int) -> np.ndarray:
        """(n_words,) uint64 fingerprint of global row ``i``."""
        s = int(np.searchsorted(self.starts_, i, "right")) - 1
        return np.array(self.shards_[s][i - self.starts_[s]], dtype=np.uint64)

    def _runs(self) -> list[list[int]]:
        """Shard numbers cut into up to ``n_threads`` contiguous runs of about equal rows."""
        total = max(len(self), 1)
        cut = np.searchsorted(self.starts_[1:], np.arange(1, self.n_threads) * total / self.n_threads, "left") + 1
        return [run.tolist() for run in np.split(np.arange(len(self.shards_)), cut) if len(run)]

    def _scan(self, shard_numbers: list[int], query, query_count: int, skip: int, bound, k: int):
        from orientscope.science.tanimoto_kernels import top_k_scan

        top_sim, top_row, n_top = np.full(k, -np.inf), np.full(k, -1, np.int64), 0
        for hi, lo in itertools.pairwise(BOUND_BANDS):
            if n_top == k and top_sim[k - 1] >= hi:  # every row left has a bound below the k-th
                break
            for s in shard_numbers:
                n_top = top_k_scan(self.shards_[s], self.counts_[s], int(self.starts_[s]), query, query_count, skip,
                                   bound, lo, hi, top_sim, top_row, n_top)  # fmt: skip
        if self.after_scan is not None:
            for s in shard_numbers:
                self.after_scan(self.shards_[s])
        return top_row[:n_top], top_sim[:n_top]

    def most_similar(self, i: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`TanimotoIndex.most_similar`: k rows most similar to row ``i``, best first, ties to lower rows."""
        if not 0 <= i < len(self):
            raise IndexError(f"row {i} out of range for {len(self)} fingerprints")
        k = min(k, len(self) - 1)
        if k <= 0:
            return np.zeros(0, np.int64), np.zeros(0)
        query = self.row(i)
        query_count = int(np.bitwise_count(query).sum())
        c = np.arange(self.n_bits_ + 1)
        low, high = np.minimum(c, query_count), np.maximum(c, query_count)
        bound = np.divide(low, high, out=np.zeros(len(c)), where=high > 0)  # as tanimoto_from_counts rounds
        args = (query, query_count, int(i), bound, k)
        runs = self._runs()
        if len(runs) == 1:
            parts = [self._scan(runs[0], *args)]
        else:
            with ThreadPoolExecutor(max_workers=len(runs) - 1, thread_name_prefix="tanimoto-scan") as pool:
                futures = [pool.submit(self._scan, run, *args) for run in runs[1:]]
                parts = [self._scan(runs[0], *args)] + [f.result() for f in futures]
        rows = np.concatenate([p[0] for p in parts])
        sims = np.concatenate([p[1] for p in parts])
        best = np.lexsort((rows, -sims))[:k]
        return rows[best], sims[best]


def _check_threshold(threshold: float) -> None:
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"Tanimoto threshold must be in (0, 1], got {threshold}")


def _leader_order(n: int, order: np.ndarray | None) -> np.ndarray:
    if order is None:
        return np.arange(n)
    order = np.asarray(order, dtype=np.int64)
    if sorted(order.tolist()) != list(range(n)):
        raise ValueError(f"order must be a permutation of range({n})")
    return order


def _rarest_first(rows, bits, counts, n_bits: int, threshold: float):
    """Each row's bits sorted rarest first, row starts, and the prefix length.

    A molecule b with Tanimoto >= t to a shares >= ceil(t|a|) bits with a, so
    b holds one of a's |a| - ceil(t|a|) + 1 rarest bits (prefix filtering).
    """
    freq = np.bincount(bits, minlength=n_bits)
    row_bits = bits[np.lexsort((freq[bits], rows))]
    row_start = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=len(counts)))])
    prefix = counts - np.ceil(threshold * counts - 1e-9).astype(np.int64) + 1
    return row_bits, row_start, prefix


def leader_clusters(
    words: np.ndarray, threshold: float, order: np.ndarray | None = None, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Sphere-exclusion clustering at a Tanimoto threshold.

    Molecules are visited in ``order``; an unassigned one becomes a leader and
    takes every unassigned molecule with Tanimoto >= ``threshold`` to it.

    Parameters
    ----------
    words : (n, n_words) uint64 packed fingerprints
    threshold : Tanimoto similarity in (0, 1]
    order : (n,) permutation giving the visiting order (default 0..n-1)
    mask : (n,) bool, molecules to cluster; others (and empty fingerprints) get -1

    Returns
    -------
    labels : (n,) int64 cluster id (0.. in order of creation) or -1
    leaders : (n_clusters,) int64 row index of each cluster's leader
    """
    _check_threshold(threshold)
    words = np.ascontiguousarray(words, dtype=np.uint64)
    n = len(words)
    order = _leader_order(n, order)
    counts = popcounts(words)
    active = counts > 0
    if mask is not None:
        active &= np.asarray(mask, bool)
    rows, bits = _set_bits(words)
    keep = active[rows]
    rows, bits = rows[keep], bits[keep]
    n_bits = 64 * words.shape[1]
    row_bits, row_start, prefix = _rarest_first(rows, bits, counts, n_bits, threshold)

    labels = np.full(n, -1, np.int64)
    leaders: list[int] = []

    def postings(entry_rows, entry_bits):
        by_bit = np.argsort(entry_bits, kind="stable")
        start = np.concatenate([[0], np.cumsum(np.bincount(entry_bits, minlength=n_bits))])
        return entry_rows[by_bit], entry_bits[by_bit], start

    post_rows, post_bits, post_start = postings(rows, bits)
    stale = 0
    for i in order:
        if labels[i] >= 0 or not active[i]:
            continue
        cluster = len(leaders)
        leaders.append(int(i))
        labels[i] = cluster
        a = row_start[i]
        lead_bits = row_bits[a : a + prefix[i]]
        cand = np.concatenate([post_rows[post_start[b] : post_start[b + 1]] for b in lead_bits])
        cand = cand[labels[cand] < 0]
        if cand.size == 0:
            continue
        inter = np.bitwise_count(words[cand] & words[i]).sum(axis=1, dtype=np.int64)
        hit = cand[tanimoto_from_counts(inter, counts[i], counts[cand]) >= threshold]
        labels[hit] = cluster
        stale += len(hit) + 1
        if stale > COMPACT_FRACTION * len(post_rows):
            live = labels[post_rows] < 0
            post_rows, post_bits, post_start = postings(post_rows[live], post_bits[live])
            stale = 0
    return labels, np.asarray(leaders, np.int64)


def leader_clusters_naive(
    words: np.ndarray, threshold: float, order: np.ndarray | None = None, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`leader_clusters` from the dense pairwise matrix (O(N²) time and memory)."""
    _check_threshold(threshold)
    n = len(words)
    order = _leader_order(n, order)
    active = popcounts(words) > 0
    if mask is not None:
        active &= np.asarray(mask, bool)
    sim = pairwise_tanimoto(words, words)
    labels = np.full(n, -1, np.int64)
    leaders: list[int] = []
    for i in order:
        if labels[i] >= 0 or not active[i]:
            continue
        hit = (sim[i] >= threshold) & (labels < 0) & active
        labels[hit] = len(leaders)
        labels[i] = len(leaders)
        leaders.append(int(i))
    return labels, np.asarray(leaders, np.int64)


CLUSTER_STREAM = "cluster"


def cluster_sample(seed: int, index: np.ndarray, sample_size: int) -> np.ndarray:
    """Sorted global indices of the clustering sample: the ``sample_size`` smallest counter-based draws of ``index``.

    A function of (seed, the indices) only, so per-cut samples merge into the same sample (see ``subsample``).
    """
    return subsample(seed, CLUSTER_STREAM, index, sample_size)


def seeded_leaders(sample_index: np.ndarray, sample_words: np.ndarray, threshold: float, seed: int):
    """Exact leader clustering of the sample, visited in the order of counter-based draws by global index.

    Returns (labels (m,) int64 of the sample, leaders (k,) int64 positions in the sample).
    """
    order = np.argsort(uniforms(seed, f"{CLUSTER_STREAM}:order", sample_index)[:, 0], kind="stable")
    return leader_clusters(sample_words, threshold, order=order)


def sampled_leader_clusters(
    words: np.ndarray,
    threshold: float,
    sample_size: int = 1000,
    seed: int = 0,
    mask: np.ndarray | None = None,
    chunk: int = 8192,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Leader clustering of a seeded sample, then assignment of everyone to their best leader.

    Molecules of the sample (:func:`cluster_sample`, row numbers as global
    indices) are clustered exactly (:func:`seeded_leaders`). Every other
    active molecule joins the leader with the highest Tanimoto if it is >=
    ``threshold`` (ties: the first leader); others get -1. The assignment is
    exact given the leaders (:func:`assign_to_leaders`), so cutting the rows
    into shards and assigning each on its own gives the same labels.

    Returns
    -------
    labels : (n,) int64 cluster id or -1
    leaders : (n_clusters,) int64 row index of each leader
    similarity : (n,) float64 Tanimoto to the own leader (1 for leaders, 0 if -1)
    """
    _check_threshold(threshold)
    words = np.ascontiguousarray(words, dtype=np.uint64)
    n = len(words)
    counts = popcounts(words)
    active = counts > 0
    if mask is not None:
        active &= np.asarray(mask, bool)
    sample = cluster_sample(seed, np.flatnonzero(active), sample_size)
    sample_labels, local_leaders = seeded_leaders(sample, words[sample], threshold, seed)
    leaders = sample[local_leaders]
    labels = np.full(n, -1, np.int64)
    in_sample = np.zeros(n, bool)
    in_sample[sample] = True
    rest = np.flatnonzero(active & ~in_sample)
    labels[rest] = assign_to_leaders(words[rest], words[leaders], threshold, chunk)[0]
    labels[sample] = sample_labels
    return labels, leaders, leader_similarity(words, labels, words[leaders])


def assign_to_leaders(
    words: np.ndarray, leader_words: np.ndarray, threshold: float, chunk: int = 8192
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's most similar leader if its Tanimoto is >= ``threshold`` (ties: the first leader), else -1.

    Exact: intersections with every leader as a sparse (molecules x bits) @
    dense (bits x leaders) product, O(n x n_leaders x bits per molecule).

    Returns (labels (n,) int64 leader position or -1, Tanimoto to that leader (n,) float64, 0 where -1).
    """
    words = np.ascontiguousarray(words, dtype=np.uint64)
    labels = np.full(len(words), -1, np.int64)
    similarity = np.zeros(len(words))
    if len(words) == 0 or len(leader_words) == 0:
        return labels, similarity
    counts, leader_counts = popcounts(words), popcounts(leader_words)
    n_bits = 64 * words.shape[1]
    leader_bits = _unpack(leader_words).T.astype(np.float32)
    for lo in range(0, len(words), chunk):
        r, c = np.nonzero(_unpack(words[lo : lo + chunk]))
        rows = min(chunk, len(words) - lo)
        x = sp.csr_matrix((np.ones(len(r), np.float32), (r, c)), shape=(rows, n_bits))
        sim = tanimoto_from_counts(np.asarray(x @ leader_bits), counts[lo : lo + rows, None], leader_counts[None, :])
        best = np.argmax(sim, axis=1)
        top = sim[np.arange(rows), best]
        hit = top >= threshold
        labels[lo : lo + rows][hit] = best[hit]
        similarity[lo : lo + rows][hit] = top[hit]
    return labels, similarity


def leader_similarity(words: np.ndarray, labels: np.ndarray, leader_words: np.ndarray) -> np.ndarray:
    """(n,) Tanimoto of each row to its own leader ``leader_words[labels]`` (0 where the label is -1)."""
    sim = np.zeros(len(words))
    member = np.flatnonzero(labels >= 0)
    a, b = words[member], leader_words[labels[member]]
    inter = np.bitwise_count(a & b).sum(axis=1, dtype=np.int64)
    sim[member] = tanimoto_from_counts(inter, popcounts(a), popcounts(b))
    return sim
