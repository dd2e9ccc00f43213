"""Map data: projected axes of every molecule, draw order and density binning."""

from __future__ import annotations

import numpy as np

from backend.services.map_data import density_grid, load_map_data, reference_xy
from backend.services.results import open_result


def test_every_axis_of_every_molecule_is_projected(qm9_store):
    md = load_map_data(qm9_store, "qm9")
    frames = open_result(qm9_store, "qm9").table("frames", "original").to_pandas()
    assert md.x.dtype == np.float32 and md.x.shape == (len(frames), 3)
    np.testing.assert_array_equal(md.ids, frames["id"].to_numpy(str))
    # Mollweide bounds, and the poles / equator known answers via the stored lon/lat
    assert np.all((md.x / (2 * np.sqrt(2))) ** 2 + (md.y / np.sqrt(2)) ** 2 <= 1 + 1e-5)
    np.testing.assert_allclose(np.sign(md.y), np.sign(frames[["lat1", "lat2", "lat3"]].to_numpy()), atol=0)
    # draw order is a permutation of all 3n points, identical on reload (seeded)
    assert np.array_equal(np.sort(md.order), np.arange(3 * len(frames)))
    assert load_map_data(qm9_store, "qm9") is md


def test_points_filter_by_axis_and_mask(qm9_store):
    md = load_map_data(qm9_store, "qm9")
    rows, axes = md.points((1, 3))
    assert rows.size == 2 * md.n_molecules and set(np.unique(axes)) == {1, 3}
    mask = np.zeros(md.n_molecules, bool)
    mask[[0, 5]] = True
    rows, axes = md.points((1, 2, 3), mask)
    assert sorted(rows.tolist()) == [0, 0, 0, 5, 5, 5]


def test_reference_axes_project_to_known_points():
    x, y = reference_xy(np.eye(3))
    np.testing.assert_allclose(x, [0, 2 * np.sqrt(2) / 2, 0], atol=1e-5)  # lon 0, lon 90 at the equator, pole
    np.testing.assert_allclose(y, [0, 0, np.sqrt(2)], atol=1e-5)


def test_uniform_points_have_density_near_one():
    rng = np.random.default_rng(1)
    v = rng.normal(size=(200_000, 3))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    from backend.science.sphere import mollweide_xy

    x, y = mollweide_xy(np.degrees(np.arctan2(v[:, 1], v[:, 0])), np.degrees(np.arcsin(v[:, 2])))
    grid = density_grid(x, y, nx=24, ny=12)
    inner = grid.ratio[2:-2, 4:-4]
    assert abs(np.nanmean(grid.ratio) - 1) < 0.05 and np.nanmax(np.abs(inner - 1)) < 0.15
    assert np.isnan(grid.ratio[0, 0])  # corner cell lies outside the ellipse


def test_frame_lines_are_the_mollweide_ellipse_and_a_graticule():
    from backend.services.map_data import frame_lines

    lines = frame_lines()
    ox, oy = lines["outline"]
    np.testing.assert_allclose(ox**2 / 8 + oy**2 / 2, 1.0, atol=1e-12)
    gx, gy = lines["graticule"]
    inside = np.isfinite(gx)
    assert np.isnan(gx).any()  # separate polylines
    assert np.all(gx[inside] ** 2 / 8 + gy[inside] ** 2 / 2 <= 1 + 1e-9)
