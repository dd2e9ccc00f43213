"""Density relative to uniform and the colour scales' ranges, on constructed data with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from orientscope.science.map_scales import ELLIPSE_AREA, density_ceiling, density_ratio, robust_range
from orientscope.science.sphere import SQRT2


def test_the_mollweide_ellipse_has_the_spheres_area():
    assert ELLIPSE_AREA == pytest.approx(4 * np.pi, rel=1e-15)


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
