"""Map data: projected axes of every molecule, draw order and density binning."""

from __future__ import annotations

import numpy as np
import pytest

from orientscope.core.orientations_schema import R_COLUMNS
from orientscope.services.map_data import density_grid, density_grids, load_map_data, reference_points
from orientscope.services.results import open_result


def test_every_axis_of_every_molecule_is_projected(qm9_store):
    md = load_map_data(qm9_store, "qm9")
    frames = open_result(qm9_store, "qm9").table("frames", "original").to_pandas()
    assert md.x.dtype == np.float32 and md.x.shape == (len(frames), 3)
    np.testing.assert_array_equal(md.ids, frames["id"].to_numpy(str))
    # An axis the molecule's symmetry leaves undefined is NaN: methane (none), one oblate top (axis 3 only).
    undefined = np.isnan(md.x)
    np.testing.assert_array_equal(undefined, np.isnan(md.y))
    none, axis = (frames["orientation"] == "none").to_numpy(), (frames["orientation"] == "axis").to_numpy()
    assert undefined[none].all() and undefined[axis].sum() == 2 * axis.sum() and not undefined[~(none | axis)].any()
    assert not undefined[axis, frames["defined_axis"][axis].to_numpy() - 1].any()
    # Mollweide bounds, and the poles / equator known answers via the stored lon/lat
    x, y = md.x[~undefined], md.y[~undefined]
    assert np.all((x / (2 * np.sqrt(2))) ** 2 + (y / np.sqrt(2)) ** 2 <= 1 + 1e-5)
    np.testing.assert_allclose(np.sign(y), np.sign(frames[["lat1", "lat2", "lat3"]].to_numpy()[~undefined]), atol=0)
    assert md.axis_counts.tolist() == [none.sum(), axis.sum(), 0, len(frames) - none.sum() - axis.sum()]
    assert "are not drawn" in md.symmetry_note or "is not drawn" in md.symmetry_note
    assert load_map_data(qm9_store, "qm9") is md


def test_the_draw_order_is_a_seeded_shuffle_that_any_subset_keeps(qm9_store):
    md = load_map_data(qm9_store, "qm9")
    rows, axes = md.points()
    order = md.in_draw_order(rows, axes)
    assert not np.array_equal(order, np.arange(rows.size))  # shuffled: no colour group drawn last
    assert np.bincount(axes[order[: rows.size // 3]], minlength=4)[1:].min() > rows.size / 9 * 0.8
    sub = np.flatnonzero(rows % 7 == 0)  # a subset sorts into the same relative order
    np.testing.assert_array_equal(sub[md.in_draw_order(rows[sub], axes[sub])], order[np.isin(order, sub)])
    first = md.first_in_draw_order(rows, axes, 50, chunk=64)  # in small chunks: the same first points
    np.testing.assert_array_equal(first, order[:50])


def test_ids_and_the_row_of_an_id(qm9_store):
    md = load_map_data(qm9_store, "qm9")
    ids = np.asarray(md.ids)
    assert md.ids[3] == ids[3] and isinstance(md.ids[3], str)
    np.testing.assert_array_equal(md.ids[np.array([5, 1])], ids[[5, 1]])
    np.testing.assert_array_equal(md.ids[ids == ids[7]], ids[[7]])
    assert md.row_of(ids[42]) == 42 and md.ids.tolist() == ids.tolist()
    with pytest.raises(KeyError, match="no-such-id"):
        md.row_of("no-such-id")


def test_axis_vectors_come_back_from_their_map_position(qm9_store):
    md = load_map_data(qm9_store, "qm9")
    rot = open_result(qm9_store, "qm9").table("frames", "original").to_pandas()[R_COLUMNS].to_numpy()
    rows, axes = md.points()
    np.testing.assert_allclose(md.vectors(rows, axes), rot.reshape(-1, 3, 3)[rows, axes - 1], atol=2e-3)


def test_points_filter_by_axis_and_mask(qm9_store):
    md = load_map_data(qm9_store, "qm9")
    rows, axes = md.points((1, 3))
    # Every molecule's axes 1 and 3 but the undefined ones (methane's two, and axis 1 of an oblate top).
    assert rows.size == 2 * md.n_molecules - int(np.isnan(md.x[:, [0, 2]]).sum()) and set(np.unique(axes)) == {1, 3}
    assert not np.isnan(md.xy(rows, axes)[0]).any()
    mask = np.zeros(md.n_molecules, bool)
    mask[[0, 1, 5]] = True  # molecule 0 is methane: no orientation, no point
    rows, axes = md.points((1, 2, 3), mask)
    assert sorted(rows.tolist()) == [1, 1, 1, 5, 5, 5]


def test_reference_axes_project_to_known_points():
    ref = reference_points(np.eye(3))
    x, y = ref["x"], ref["y"]
    np.testing.assert_allclose(x, [0, 2 * np.sqrt(2) / 2, 0], atol=1e-5)  # lon 0, lon 90 at the equator, pole
    np.testing.assert_allclose(y, [0, 0, np.sqrt(2)], atol=1e-5)


def test_uniform_points_have_density_near_one():
    rng = np.random.default_rng(1)
    v = rng.normal(size=(200_000, 3))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    from orientscope.science.sphere import mollweide_xy

    x, y = mollweide_xy(np.degrees(np.arctan2(v[:, 1], v[:, 0])), np.degrees(np.arcsin(v[:, 2])))
    grid = density_grid(x, y, nx=24, ny=12)
    inner = grid.ratio[2:-2, 4:-4]
    assert abs(np.nanmean(grid.ratio) - 1) < 0.05 and np.nanmax(np.abs(inner - 1)) < 0.15
    assert np.isnan(grid.ratio[0, 0])  # corner cell lies outside the ellipse


def test_density_counts_equal_numpy_histogram2d_on_the_edges_too():
    rng = np.random.default_rng(4)
    x = rng.uniform(-3.0, 3.0, 50_000)
    y = rng.uniform(-1.5, 1.5, 50_000)
    xe, ye = np.linspace(-2 * np.sqrt(2), 2 * np.sqrt(2), 25), np.linspace(-np.sqrt(2), np.sqrt(2), 13)
    # points exactly on every edge, outside, and NaN: each lands where numpy puts it (or nowhere)
    x[: xe.size], y[: xe.size] = xe, 0.3
    y[100 : 100 + ye.size], x[100 : 100 + ye.size] = ye, -0.7
    x[200], y[201] = np.nan, np.nan
    grid = density_grid(x, y, nx=24, ny=12)
    counts = np.histogram2d(y, x, bins=[ye, xe])[0]
    inside = np.isfinite(grid.ratio)
    expected = counts / (grid.n_points * (xe[1] - xe[0]) * (ye[1] - ye[0]) / (np.pi * 4))
    # ~200 points a cell: one point in the wrong cell would move its ratio by 0.5 %
    np.testing.assert_allclose(grid.ratio[inside], expected[inside], rtol=1e-5)


def test_frame_lines_are_the_mollweide_ellipse_and_a_graticule():
    from orientscope.services.map_data import frame_lines

    lines = frame_lines()
    ox, oy = lines["outline"]
    np.testing.assert_allclose(ox**2 / 8 + oy**2 / 2, 1.0, atol=1e-12)
    gx, gy = lines["graticule"]
    inside = np.isfinite(gx)
    assert np.isnan(gx).any()  # separate polylines
    assert np.all(gx[inside] ** 2 / 8 + gy[inside] ** 2 / 2 <= 1 + 1e-9)


def test_density_grids_share_the_larger_sets_grid_and_one_colour_ceiling():
    from orientscope.science.map_scales import density_ceiling

    rng = np.random.default_rng(2)
    aligned = rng.normal(0, 0.2, (2, 1_000))  # concentrated near the centre
    uniform = rng.uniform([-1.5, -0.7], [1.5, 0.7], (20_000, 2)).T  # flat over a third of the map
    (alone,), top_alone = density_grids([aligned])
    assert alone.ratio.shape == (12, 24)  # 1,000 points: the coarsest grid (sqrt(2 * 1000 / 5) = 20 < 24)
    grids, top = density_grids([aligned, uniform])
    assert [g.ratio.shape for g in grids] == [(44, 88)] * 2  # sqrt(2 * 20,000 / 5) = 89.4, even
    assert top == density_ceiling(grids[0].ratio, grids[1].ratio) > density_ceiling(grids[1].ratio) > 2


def test_a_zoomed_density_bins_its_region_anew_on_finer_cells_counted_as_numpy_counts_them():
    """A region's cells are square, sized for five expected points each (finer than the whole map's 144 across
    for a large set), and hold numpy's counts on the region's own edges, over a uniform sphere of all the points."""
    from orientscope.services.map_data import MAX_DENSITY_CELLS, MIN_REGION_CELLS, density_cells

    rng = np.random.default_rng(5)
    x, y = rng.uniform(-2.0, 2.0, 400_000), rng.uniform(-1.0, 1.0, 400_000)
    region = (-0.5, 0.5, -0.25, 0.25)
    nx, ny = density_cells(x.size, region)
    side = np.sqrt(5 * 4 * np.pi / x.size)  # five points a cell under uniform: the Mollweide ellipse has area 4π
    assert (nx, ny) == (round(1.0 / side), round(0.5 / side)) and nx > MAX_DENSITY_CELLS * 1.0 / (4 * np.sqrt(2))
    (grid,), _ = density_grids([(x, y)], region)
    xe, ye = np.linspace(-0.5, 0.5, nx + 1), np.linspace(-0.25, 0.25, ny + 1)
    counts = np.histogram2d(y, x, bins=[ye, xe])[0]
    expected = counts / (x.size * (xe[1] - xe[0]) * (ye[1] - ye[0]) / (4 * np.pi))
    np.testing.assert_allclose(grid.ratio, expected, rtol=1e-5)
    assert density_cells(1_000, (0.0, 0.01, 0.0, 0.01)) == (MIN_REGION_CELLS, MIN_REGION_CELLS)  # small: coarse
    assert density_cells(10**9, (-2.8, 2.8, -1.4, 1.4)) == (MAX_DENSITY_CELLS, MAX_DENSITY_CELLS // 2)  # square
    assert density_cells(10**9, (0.0, 0.1, 0.0, 1.0)) == (MAX_DENSITY_CELLS // 10, MAX_DENSITY_CELLS)  # a tall one


def test_a_set_too_small_for_a_density_has_none():
    """Under DENSITY_MIN_POINTS the coarsest cells expect under one point each: no cell gets a ratio (three
    molecules showed blocks at 40x uniform)."""
    from orientscope.services.map_data import DENSITY_MIN_POINTS

    cell = (4 * np.sqrt(2) / 24) ** 2
    assert DENSITY_MIN_POINTS == int(np.ceil(4 * np.pi / cell)) == 227
    rng = np.random.default_rng(6)
    few, enough = rng.uniform(-1, 1, (2, DENSITY_MIN_POINTS - 1)), rng.uniform(-1, 1, (2, DENSITY_MIN_POINTS))
    (small,), _ = density_grids([few])
    (large,), _ = density_grids([enough])
    assert small.too_few and np.isnan(small.ratio).all()
    assert not large.too_few and np.isfinite(large.ratio).any()
