"""Per-group sums that do not depend on how the rows are cut into shards.

Floating-point addition is not associative, so adding per-shard sums gives
results that change (in the last bits) with the shard size. Here the rows are
summed in fixed global blocks of :data:`BLOCK` rows, ``[b * BLOCK, (b + 1) * BLOCK)``,
each block sequentially in row order (``np.bincount``), and the block sums are
added in block order. A shard sums the blocks that lie wholly inside it and
hands over the rows of the (at most two) blocks its edges cut; the merge sums
those from the rows of the neighbouring shards put together. So every cut,
and one pass over all rows, gives the same bits.
"""

from __future__ import annotations

import numpy as np

BLOCK = 4096


def group_sums(values: np.ndarray, group: np.ndarray, n_groups: int, block: np.ndarray | None = None) -> np.ndarray:
    """(n_blocks, n_groups, q) sums of ``values`` (n, q) per (block, group), each added in row order.

    ``block`` (n,) numbers the rows' blocks from 0 (all 0 if None).
    """
    values = np.asarray(values, dtype=np.float64)
    block = np.zeros(len(values), dtype=np.int64) if block is None else np.asarray(block, dtype=np.int64)
    n_blocks = int(block.max()) + 1 if len(block) else 1
    key = block * n_groups + np.asarray(group, dtype=np.int64)
    cols = [np.bincount(key, weights=values[:, j], minlength=n_blocks * n_groups) for j in range(values.shape[1])]
    return np.stack(cols, axis=-1).reshape(n_blocks, n_groups, values.shape[1])


def block_partial(values: np.ndarray, group: np.ndarray, n_groups: int, start: int) -> dict:
    """One shard's part of the ordered sums.

    Parameters
    ----------
    values : (n, q) the shard's rows, global rows ``start .. start + n - 1``
    group : (n,) int in [0, n_groups)

    Returns
    -------
    {"sums": {block number: (n_groups, q)} of the blocks wholly inside,
     "edges": {block number: ((m, q) values, (m,) group)} of the rows of cut blocks}
    """
    values = np.asarray(values, dtype=np.float64)
    group = np.asarray(group, dtype=np.int64)
    stop = start + len(values)
    first = -(-start // BLOCK)  # first block that starts inside
    last = stop // BLOCK  # blocks first .. last - 1 end inside
    edges = {}
    if first >= last:  # no whole block inside: every row belongs to a cut block
        for b in range(start // BLOCK, (stop - 1) // BLOCK + 1):
            rows = slice(max(b * BLOCK, start) - start, min((b + 1) * BLOCK, stop) - start)
            edges[b] = (values[rows], group[rows])
        return {"sums": {}, "edges": edges}
    lo, hi = first * BLOCK - start, last * BLOCK - start
    if lo > 0:
        edges[first - 1] = (values[:lo], group[:lo])
    if hi < len(values):
        edges[last] = (values[hi:], group[hi:])
    local_block = np.arange(hi - lo) // BLOCK
    sums = group_sums(values[lo:hi], group[lo:hi], n_groups, local_block)
    return {"sums": {first + i: s for i, s in enumerate(sums)}, "edges": edges}


def merge_block_partials(parts: list[dict], n_groups: int) -> np.ndarray:
    """(n_groups, q) totals from the shards' :func:`block_partial` results, given in row order."""
    sums = {}
    edges: dict[int, list] = {}
    for part in parts:
        sums.update(part["sums"])
        for b, piece in part["edges"].items():
            edges.setdefault(b, []).append(piece)
    for b, pieces in edges.items():
        values = np.concatenate([v for v, _ in pieces])
        group = np.concatenate([g for _, g in pieces])
        sums[b] = group_sums(values, group, n_groups)[0]
    total = None
    for b in sorted(sums):
        total = sums[b].copy() if total is None else total + sums[b]
    return total


def ordered_sums(values: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """(n_groups, q) per-group sums of all rows, bit for bit what any cut into shards gives."""
    return merge_block_partials([block_partial(values, group, n_groups, 0)], n_groups)
