import numpy as np
import pytest

from orientscope.science.sphere import axes_lonlat_deg, mollweide_graticule, mollweide_outline, mollweide_xy


def test_lonlat_of_lab_axes():
    lon, lat = axes_lonlat_deg(np.eye(3)[None])
    np.testing.assert_allclose(lon[0], [0, 90, 0], atol=1e-12)
    np.testing.assert_allclose(lat[0], [0, 0, 90], atol=1e-12)


def test_mollweide_known_points_and_bounds():
    x, y = mollweide_xy(np.array([0.0, 180.0, 0.0, -90.0]), np.array([0.0, 0.0, 90.0, 0.0]))
    np.testing.assert_allclose([x[0], y[0]], [0, 0], atol=1e-12)
    assert x[1] == pytest.approx(2 * np.sqrt(2))
    assert y[2] == pytest.approx(np.sqrt(2))
    assert x[3] == pytest.approx(-np.sqrt(2))


def test_mollweide_is_equal_area():
    # Uniform points on the sphere fill the ellipse uniformly: equal-area halves in y.
    v = np.random.default_rng(0).normal(size=(200000, 3))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    x, y = mollweide_xy(np.degrees(np.arctan2(v[:, 1], v[:, 0])), np.degrees(np.arcsin(v[:, 2])))
    inside = (x / (2 * np.sqrt(2))) ** 2 + (y / np.sqrt(2)) ** 2 <= 1 + 1e-9
    assert inside.all()
    # Fraction in the central band |y| < 0.5 equals its share of the ellipse area.
    t = np.linspace(-0.5, 0.5, 20001)
    band = np.trapezoid(2 * 2 * np.sqrt(2) * np.sqrt(1 - (t / np.sqrt(2)) ** 2), t) / (
        np.pi * 2 * np.sqrt(2) * np.sqrt(2)
    )
    assert np.mean(np.abs(y) < 0.5) == pytest.approx(band, abs=0.005)


def test_mollweide_solves_its_equation_at_every_latitude_and_keeps_nan_apart():
    # Near a pole the derivative of 2θ + sin 2θ vanishes and Newton converges slowly; each point must still
    # solve the equation, and a NaN (an undefined axis) stays NaN without changing its neighbours.
    lat = np.concatenate([np.linspace(-90, 90, 2001), 90 - np.logspace(-9, -1, 50), [np.nan]])
    lon = np.full(lat.shape, 45.0)
    x, y = mollweide_xy(lon, lat)
    theta = np.arcsin(y[:-1] / np.sqrt(2))
    residual = 2 * theta + np.sin(2 * theta) - np.pi * np.sin(np.radians(lat[:-1]))
    assert np.abs(residual).max() < 1e-9
    assert np.isnan(x[-1]) and np.isnan(y[-1])
    alone = mollweide_xy(lon[:-1], lat[:-1])
    np.testing.assert_array_equal(x[:-1], alone[0])
    np.testing.assert_array_equal(y[:-1], alone[1])
    grid_x, grid_y = mollweide_xy(lon.reshape(-1, 1)[:-1].repeat(3, 1), lat.reshape(-1, 1)[:-1].repeat(3, 1))
    assert grid_x.shape == (len(lat) - 1, 3)
    np.testing.assert_array_equal(grid_y[:, 2], alone[1])


def test_outline_and_graticule_shapes():
    x, y = mollweide_outline()
    assert np.isclose(x[0], x[-1]) and np.isclose(y[0], y[-1])
    gx, gy = mollweide_graticule()
    assert np.isnan(gx).sum() == np.isnan(gy).sum() > 0


def test_mollweide_vectors_invert_the_projection():
    from orientscope.science.sphere import mollweide_vectors

    rng = np.random.default_rng(4)
    v = rng.normal(size=(5000, 3))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    x, y = mollweide_xy(np.degrees(np.arctan2(v[:, 1], v[:, 0])), np.degrees(np.arcsin(v[:, 2])))
    np.testing.assert_allclose(mollweide_vectors(x, y), v, atol=1e-9)
    np.testing.assert_allclose(mollweide_vectors(np.array([0.0]), np.array([np.sqrt(2)])), [[0, 0, 1]], atol=1e-12)
