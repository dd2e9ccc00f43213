"""Ordered per-group sums: any cut of the rows into shards gives the same bits."""

from __future__ import annotations

import numpy as np
import pytest

from orientscope.science.ordered_sums import BLOCK, block_partial, group_sums, merge_block_partials, ordered_sums


def test_group_sums_known_answer():
    values = np.array([[1.0, 10.0], [2.0, 20.0], [4.0, 40.0]])
    sums = group_sums(values, np.array([0, 1, 0]), 3)
    np.testing.assert_array_equal(sums[0], [[5.0, 50.0], [2.0, 20.0], [0.0, 0.0]])


@pytest.mark.parametrize(
    "cuts",
    [
        [0, 700, 1400, 20000],
        [0, BLOCK, 2 * BLOCK, 20000],
        [0, 1, 5000, 5001, 13000, 20000],
        [0, 100, 200, 300, 20000],
        [0, 20000],
    ],
)
def test_any_cut_gives_the_same_bits(cuts):
    rng = np.random.default_rng(0)
    # Values of very different size: a plain per-shard sum would change in the last bits with the cut.
    values = rng.standard_normal((20000, 3)) * 10.0 ** rng.integers(-8, 8, (20000, 1))
    group = rng.integers(0, 4, 20000)
    whole = ordered_sums(values, group, 4)
    parts = [block_partial(values[a:b], group[a:b], 4, a) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    np.testing.assert_array_equal(merge_block_partials(parts, 4), whole)
    exact = np.array([[np.sum(values[group == g, j]) for j in range(3)] for g in range(4)])
    np.testing.assert_allclose(whole, exact, rtol=1e-9, atol=1e-6)
