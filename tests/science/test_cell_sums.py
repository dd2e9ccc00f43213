"""Cell sums of map points: any rectangle of whole cells holds what a histogram of the points gives."""

from __future__ import annotations

import numpy as np

from orientscope.science import cell_sums as cs


def _points(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.828, 2.828, n).astype(np.float32)  # inside the map, as every projected point is
    y = rng.uniform(-1.414, 1.414, n).astype(np.float32)
    return rng, x, y


def test_block_sums_per_category_and_of_values_match_histograms():
    rng, x, y = _points(50_000)
    codes = rng.integers(0, 3, x.size).astype(np.uint8)
    values = rng.normal(7.0, 2.0, x.size).astype(np.float32)
    values[::5] = np.nan
    by_code, by_value = cs.cell_sums(x, y, codes, 3), cs.cell_sums(x, y, values=values)
    for region in ((-2.83, 2.83, -1.42, 1.42, 200, 100), (-0.5, 1.3, -0.2, 0.7, 60, 40)):
        grid = cs.aligned_grid(*region)
        x0, x1, y0, y1 = grid.extent
        edges = [np.linspace(y0, y1, grid.height + 1), np.linspace(x0, x1, grid.width + 1)]
        counts, sums = by_code.block_sums(grid)
        assert sums is None and counts.shape == (grid.height, grid.width, 3)
        for k in range(3):
            np.testing.assert_array_equal(counts[..., k], np.histogram2d(y[codes == k], x[codes == k], edges)[0])
        assert by_code.total(grid) == counts.sum()
        counts, sums = by_value.block_sums(grid)
        ok = ~np.isnan(values)
        np.testing.assert_array_equal(counts[..., 0], np.histogram2d(y, x, edges)[0])
        np.testing.assert_array_equal(counts[..., 1], np.histogram2d(y[ok], x[ok], edges)[0])
        expected = np.histogram2d(y[ok], x[ok], edges, weights=values[ok].astype(np.float64))[0]
        np.testing.assert_allclose(sums, expected, rtol=1e-9, atol=1e-9)
        assert by_value.total(grid) == counts[..., 0].sum()


def test_the_grid_is_aligned_covers_the_region_and_refuses_pixels_of_few_cells():
    grid = cs.aligned_grid(-1.0, 1.0, -0.5, 0.5, 100, 50)
    x0, x1, y0, y1 = grid.extent
    assert x0 <= -1.0 and x1 >= 1.0 and y0 <= -0.5 and y1 >= 0.5
    assert grid.mx == round(0.02 / cs.CELL) and grid.my == round(0.02 / cs.CELL)
    assert np.isclose((x0 - cs.GRID_X0) / cs.CELL, grid.col0) and float(grid.col0).is_integer()
    assert cs.aligned_grid(-1.0, 1.0, -0.5, 0.5, 1000, 500) is None  # 1.4 cells a pixel
    assert cs.aligned_grid(-1.0, 1.0, -0.5, 0.5, 1000, 500, min_cells=1) is not None


def test_points_on_the_maps_edge_and_beyond_it():
    edge = np.float32(2 * np.sqrt(2))  # float32 rounding puts it just beyond the map
    x = np.array([edge, -edge, 0.0, 5.0, np.nan], np.float32)
    y = np.array([0.0, 0.0, np.float32(np.sqrt(2)), 0.0, 0.0], np.float32)
    sums = cs.cell_sums(x, y)
    whole = cs.CellGrid(0, 0, 1, 1, cs.NX, cs.NY)
    assert sums.total(whole) == 3  # the edges count, a point far off the map and NaN do not
    counts, _ = sums.block_sums(cs.CellGrid(cs.NX - 1, cs.NY // 2, 1, 1, 1, 1))
    assert counts[0, 0, 0] == 1  # in the last column


def test_counts_beyond_the_uint16_range_are_exact():
    x = np.full(70_000, 0.1, np.float32)
    y = np.full(70_000, 0.2, np.float32)
    sums = cs.cell_sums(x, y)
    grid = cs.aligned_grid(-1.0, 1.0, -0.5, 0.5, 100, 50)
    counts, _ = sums.block_sums(grid)
    assert counts.sum() == 70_000 and counts.max() == 70_000
