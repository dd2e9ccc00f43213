"""Density relative to uniform and the colour scales' ranges, on constructed data with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from orientscope.science.map_scales import ELLIPSE_AREA, density_ceiling, density_ratio, grid_counts, robust_range
from orientscope.science.sphere import SQRT2


def test_the_mollweide_ellipse_has_the_spheres_area():
    assert ELLIPSE_AREA == pytest.approx(4 * np.pi, rel=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nx", [24, 58, 144])
def test_grid_counts_equal_numpy_histogram2d_on_edges_nan_and_outside(nx, dtype):
    ny = nx // 2
    xe, ye = np.linspace(-2 * SQRT2, 2 * SQRT2, nx + 1), np.linspace(-SQRT2, SQRT2, ny + 1)
    rng = np.random.default_rng(nx)
    x, y = rng.uniform(-3.0, 3.0, 100_000).astype(dtype), rng.uniform(-1.5, 1.5, 100_000).astype(dtype)
    # points on every edge, one float step either side of the first edges, NaN and infinity
    x[: nx + 1], y[: nx + 1] = xe.astype(dtype), 0.1
    y[500 : 500 + ny + 1], x[500 : 500 + ny + 1] = ye.astype(dtype), 0.2
    x[900:910] = np.nextafter(xe[:10].astype(dtype), dtype(np.inf))
    x[910:920] = np.nextafter(xe[:10].astype(dtype), dtype(-np.inf))
    x[950], y[951], x[952] = np.nan, np.nan, np.inf
    expected = np.histogram2d(y.astype(np.float64), x.astype(np.float64), bins=[ye, xe])[0]
    counts = grid_counts(x, y, xe, ye)
    assert counts.shape == (ny, nx) and counts.dtype == np.int64
    np.testing.assert_array_equal(counts, expected)


def test_density_ratio_is_counts_over_the_uniform_expectation_inside_the_ellipse():
    # 2 x 3 cells of area 0.5 and 12 points: a uniform sphere (area 4π) puts 12 * 0.5 / 4π in each
    xc, yc = np.array([-2.9, 0.0, 1.0]), np.array([-1.4, 0.2])
    counts = np.array([[7, 1, 2], [3, 0, 4]])
    ratio = density_ratio(counts, xc, yc, 0.5, 12)
    expected = 12 * 0.5 / (4 * np.pi)
    assert ratio.dtype == np.float32
    # centres outside x²/8 + y²/2 <= 1: x = -2.9 in both rows, (1, -1.4)
    np.testing.assert_array_equal(np.isnan(ratio), [[True, False, True], [True, False, False]])
    np.testing.assert_allclose(ratio[0, 1], 1 / expected, rtol=1e-6)
    np.testing.assert_allclose(ratio[1, 1:], np.array([0, 4]) / expected, rtol=1e-6)


def test_density_ratio_of_no_points_is_zero_inside_and_nan_outside():
    ratio = density_ratio(np.zeros((1, 2)), np.array([0.0, 2 * SQRT2 + 0.1]), np.array([0.0]), 1.0, 0)
    assert ratio[0, 0] == 0 and np.isnan(ratio[0, 1])


def test_density_ceiling_is_the_995th_percentile_over_all_maps_at_least_two():
    a = np.full((10, 20), 1.0, np.float32)
    a[0, 0] = 9.0  # 1 of 200: the 99.5th percentile is 1.04
    b = np.full((10, 20), np.nan, np.float32)
    b[0, 0] = 3.0
    assert density_ceiling(a) == 2.0  # uniform but for a few cells: the floor
    many = np.linspace(0, 10, 1001, dtype=np.float32)
    assert density_ceiling(many) == float(np.percentile(many, 99.5))  # 9.95
    # maps shown together share one ceiling over all their finite values
    assert density_ceiling(many, b) == float(np.percentile(np.append(many, np.float32(3.0)), 99.5))
    assert density_ceiling(b[1:]) == 2.0 and density_ceiling() == 2.0  # nothing finite


def test_robust_range_is_the_1st_and_99th_percentile_of_finite_values():
    values = np.append(np.arange(101.0), [np.nan, np.inf, -np.inf])
    assert robust_range(values) == (1.0, 99.0)
    assert robust_range(np.array([5.0, 5.0, np.nan])) == (5.0, 6.0)  # one value: a unit-wide range
    assert robust_range(np.array([np.nan])) == (0.0, 1.0)
    assert robust_range(np.arange(101, dtype=np.float32)) == (1.0, 99.0)


def test_grid_counts_of_points_by_row_and_axis_equal_counts_of_the_gathered_points():
    rng = np.random.default_rng(7)
    n = 20_000
    x = rng.uniform(-3.0, 3.0, (n, 3)).astype(np.float32)
    y = rng.uniform(-1.5, 1.5, (n, 3)).astype(np.float32)
    x[5, 1], y[6, 2] = np.nan, np.nan
    xe, ye = np.linspace(-2 * SQRT2, 2 * SQRT2, 41), np.linspace(-SQRT2, SQRT2, 21)
    # a subset with repeats, axes in any order, the NaN points included
    rows = np.concatenate([rng.integers(0, n, 30_000), [5, 6]]).astype(np.int32)
    axes = np.concatenate([rng.integers(1, 4, 30_000), [2, 3]]).astype(np.int8)
    gathered = grid_counts(x[rows, axes - 1], y[rows, axes - 1], xe, ye)
    np.testing.assert_array_equal(grid_counts(x, y, xe, ye, rows, axes), gathered)
    assert gathered.sum() < rows.size  # the NaN points and those outside are in no cell
