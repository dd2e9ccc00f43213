"""The map's banded order: points by band of y, then by x, ties in their given order."""

from __future__ import annotations

import numpy as np
import pytest

from orientscope.science.map_order import N_BANDS, band_of, band_starts, banded_order


def _by_two_stable_sorts(x, y):
    """The definition: a stable sort by x, then a stable sort of that by band."""
    by_x = np.argsort(x, kind="stable")
    return by_x[np.argsort(band_of(y[by_x]), kind="stable")]


@pytest.mark.parametrize("n", [0, 1, 2, 5_000])
def test_banded_order_is_the_stable_sort_by_band_then_x(n):
    rng = np.random.default_rng(n)
    x = rng.uniform(-2.8, 2.8, n).astype(np.float32)
    y = rng.uniform(-1.6, 1.6, n).astype(np.float32)  # beyond ±√2 too: the edge bands
    if n > 100:
        x[::7] = x[0]  # ties in x: kept in row order
        x[::97], y[::89] = np.nan, np.nan
    order = banded_order(x, y)
    assert order.dtype == np.int32
    np.testing.assert_array_equal(order, _by_two_stable_sorts(x, y))
    if n:
        bands = band_of(y[order])
        assert (np.diff(bands.astype(int)) >= 0).all()
        starts = band_starts(y[order])
        assert starts[0] == 0 and starts[-1] == n and len(starts) == N_BANDS + 1
