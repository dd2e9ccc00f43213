"""The aggregated map is faithful: datashader's image against independent numpy histograms."""

from __future__ import annotations

import numpy as np
import pytest

from orientscope.core.palette import OKABE_ITO
from orientscope.services import map_raster as mr
from orientscope.services.bytecache import shared_cache
from orientscope.services.errors import InvalidInput
from orientscope.services.map_data import MapData, band_of
from orientscope.services.map_view import N_GROUP_COLORS, MapColors, MapPoints, MapQuery, sorted_by_x

N = 2000
VP = mr.Viewport(-2.0, 2.0, -1.0, 1.0, 40, 20)


def _points(colors: str = "categorical", highlight: bool = False, seed: int = 0) -> MapPoints:
    """N molecules with three points each, spread over and beyond VP (so some fall outside it)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.4, 2.4, (N, 3)).astype(np.float32)
    y = rng.normal(0, 0.6, (N, 3)).astype(np.float32)
    x[0] = [VP.x0, VP.x1, 0.05]  # both ends of the range are inside, as in numpy.histogram2d
    y[0] = [VP.y0, VP.y1, VP.y1]
    ids = np.array([f"m{i}" for i in range(N)])
    md = MapData("syn", "r", "original", ids, x, y, np.zeros(N, bool), 0)
    rows, axes = md.points()
    px, py = md.xy(rows, axes)
    if colors == "categorical":
        # five categories, unevenly used, so that pixels mix colours in different proportions
        codes = np.minimum(rng.geometric(0.45, rows.size) - 1, 4).astype(np.uint8)
        spec = MapColors("categorical", "cat", codes=codes, labels=tuple("abcde"), colors=OKABE_ITO[:5])
    else:
        values = rng.uniform(-1, 3, rows.size).astype(np.float32)
        values[rng.uniform(size=rows.size) < 0.2] = np.nan
        spec = MapColors("continuous", "v", values=values, lo=0.0, hi=2.0)
    match = rng.uniform(size=N) < 0.1 if highlight else None
    return MapPoints(
        MapQuery("syn"), md, px, py, rows.astype(np.int32), axes, spec,
        None if match is None else match[rows], N, None if match is None else int(match.sum()),
    )  # fmt: skip


def _hist(points: MapPoints, vp: mr.Viewport, keep=None) -> np.ndarray:
    """Independent counts: numpy.histogram2d with the documented pixel edges, rows from the bottom."""
    x, y = points.x, points.y
    if keep is not None:
        x, y = x[keep], y[keep]
    ye = np.linspace(vp.y0, vp.y1, vp.height + 1)
    xe = np.linspace(vp.x0, vp.x1, vp.width + 1)
    return np.histogram2d(y.astype(np.float64), x.astype(np.float64), bins=[ye, xe])[0]


def _rgb(color: str) -> np.ndarray:
    return np.array([int(color[i : i + 2], 16) for i in (1, 3, 5)], float)


def test_counts_match_numpy_histogram_exactly_and_colours_follow_the_mixing_rule():
    pts = _points()
    render = mr.render_map(pts, VP, budget=100)
    assert render.mode == "image" and render.rgba.shape == (VP.height, VP.width, 4)
    per_cat = np.stack([_hist(pts, VP, pts.colors.codes == k) for k in range(5)], axis=-1)
    total = per_cat.sum(axis=-1)
    np.testing.assert_array_equal(render.counts, total)
    assert render.n_points == int(total.sum()) < pts.size  # some points lie outside the viewport
    palette = np.stack([_rgb(c) for c in pts.colors.colors])
    filled = total > 0
    # count-weighted mean of the category colours (channels truncated; float32 rounding allows 1 unit)
    expected_rgb = np.floor(per_cat[filled] @ palette / total[filled][:, None])
    image = render.rgba[::-1].astype(float)  # back to rows from the bottom
    assert np.abs(image[filled][:, :3] - expected_rgb).max() <= 1
    expected_alpha = mr.MIN_ALPHA + (255 - mr.MIN_ALPHA) * np.log(total[filled]) / np.log(max(total.max(), 2))
    assert np.abs(image[filled][:, 3] - np.floor(expected_alpha)).max() <= 1
    assert (image[~filled][:, 3] == 0).all()
    # the dominant category is the most frequent one of each pixel
    np.testing.assert_array_equal(render.dominant[filled], per_cat[filled].argmax(axis=-1))
    assert (render.dominant[~filled] == -1).all()


def test_a_one_colour_pixel_has_exactly_that_colour():
    pts = _points()
    render = mr.render_map(pts, VP, budget=0)
    per_cat = np.stack([_hist(pts, VP, pts.colors.codes == k) for k in range(5)], axis=-1)
    single = (per_cat > 0).sum(axis=-1) == 1
    assert single.any()
    image = render.rgba[::-1]
    for k in range(5):
        where = single & (per_cat[..., k] > 0)
        assert (image[where][:, :3] == _rgb(pts.colors.colors[k])).all()


def test_property_mean_per_pixel_with_grey_for_pixels_without_values():
    pts = _points("continuous")
    render = mr.render_map(pts, VP, budget=0)
    v = pts.colors.values
    finite = np.isfinite(v)
    sums = np.histogram2d(
        pts.y[finite].astype(float), pts.x[finite].astype(float), bins=_edges(VP), weights=v[finite].astype(float)
    )[0]
    n_val = _hist(pts, VP, finite)
    np.testing.assert_array_equal(render.counts, _hist(pts, VP))
    has = n_val > 0
    np.testing.assert_allclose(render.mean[has], sums[has] / n_val[has], rtol=1e-5, atol=1e-5)
    assert np.isnan(render.mean[~has]).all()
    grey = (render.counts > 0) & ~has
    assert grey.any() and (render.rgba[::-1][grey] == [0xBB, 0xBB, 0xBB, 255]).all()
    assert render.scale == {"kind": "continuous", "title": "v", "colors": list(mr.CIVIDIS), "cmin": 0.0, "cmax": 2.0}
    # the lowest and highest means take the two ends of the colour scale (values are clipped to the range)
    low, high = has & (render.mean <= 0.0), has & (render.mean >= 2.0)
    assert (render.rgba[::-1][low][:, :3] == _rgb(mr.CIVIDIS[0])).all()
    assert (render.rgba[::-1][high][:, :3] == _rgb(mr.CIVIDIS[-1])).all()


def _edges(vp: mr.Viewport):
    return [np.linspace(vp.y0, vp.y1, vp.height + 1), np.linspace(vp.x0, vp.x1, vp.width + 1)]


def test_density_is_count_relative_to_a_uniform_sphere():
    pts = _points()
    vp = mr.Viewport(*mr.FULL_MAP, 30, 15)
    render = mr.render_map(pts, vp, kind="density", budget=0)
    dx, dy = vp.pixel_size
    expected = _hist(pts, vp) / (pts.size * dx * dy / (np.pi * 4))  # the Mollweide ellipse has area 4π
    inside = np.isfinite(render.ratio)
    assert inside.sum() > 0.7 * inside.size and not inside[0, 0]  # corners lie outside the ellipse
    np.testing.assert_allclose(render.ratio[inside], expected[inside], rtol=1e-5)
    assert render.scale["title"] == "density / uniform" and render.scale["cmax"] >= 1.0


def test_smarts_matches_are_counted_and_drawn_over_a_muted_base():
    pts = _points(highlight=True)
    plain = mr.render_map(_points(), VP, budget=0)
    render = mr.render_map(pts, VP, budget=0)
    matches = _hist(pts, VP, pts.highlight)
    np.testing.assert_array_equal(render.matches, matches)
    image, base = render.rgba[::-1], plain.rgba[::-1]
    only_base = (matches == 0) & (render.counts > 0)
    np.testing.assert_array_equal(image[only_base][:, 3], (base[only_base][:, 3] * mr.MUTED).astype(np.uint8))
    hit = matches > 0
    orange = _rgb("#D55E00")
    # where matches sit, the highlight colour dominates: nearer to it than the muted base pixel was
    assert (np.abs(image[hit][:, :3] - orange).sum(axis=1) < np.abs(base[hit][:, :3] - orange).sum(axis=1) + 1).all()
    assert mr.pixel_info(render, *_centre_of(np.argwhere(hit)[0], VP))["matches"] >= 1


def test_matches_show_their_share_of_each_pixel_over_a_grey_base():
    render = mr.render_map(_points(highlight=True), VP, budget=0)
    image = render.rgba[::-1].astype(int)  # rows from the bottom, as counts and matches
    only_base = (render.matches == 0) & (render.counts > 0)
    assert only_base.any() and (np.ptp(image[only_base][:, :3], axis=1) <= 1).all()  # the view's colours set aside
    every = (render.matches == render.counts) & (render.counts > 0)  # every point of the pixel matches: opaque
    assert every.any() and (image[every][:, 3] == 255).all()
    np.testing.assert_array_equal(image[every][:, :3], np.broadcast_to(_rgb("#D55E00"), (int(every.sum()), 3)))
    some = (render.matches > 0) & (render.matches < render.counts)  # a share: the grey shows through
    assert not some.any() or (np.abs(image[some][:, :3] - _rgb("#D55E00")).sum(axis=1) > 0).all()


def _centre_of(cell, vp: mr.Viewport) -> tuple[float, float]:
    row, col = cell
    dx, dy = vp.pixel_size
    return vp.x0 + (col + 0.5) * dx, vp.y0 + (row + 0.5) * dy


def test_budget_switches_between_image_and_the_real_points_of_the_region():
    pts = _points()
    small = mr.Viewport(-0.3, 0.2, -0.1, 0.3, 50, 40)
    inside = (pts.x >= small.x0) & (pts.x <= small.x1) & (pts.y >= small.y0) & (pts.y <= small.y1)
    n = int(inside.sum())
    as_points = mr.render_map(pts, small, budget=n)
    assert as_points.mode == "points" and as_points.rgba is None
    region = np.flatnonzero(inside)
    keys = pts.md.draw_keys(pts.rows[region], pts.axis[region])
    np.testing.assert_array_equal(as_points.index, region[np.argsort(keys)])  # in the seeded draw order
    assert as_points.n_points == n and as_points.n_drawn == np.unique(pts.rows[inside]).size
    as_image = mr.render_map(pts, small, budget=n - 1)
    assert as_image.mode == "image" and as_image.n_points == n and as_image.n_drawn == as_points.n_drawn
    assert mr.render_map(pts, small, budget=0) is as_image  # one cached image for every budget that draws it
    assert mr.render_map(pts, small, budget=n).mode == "points"  # never the image where points fit
    whole = mr.render_map(pts, mr.Viewport(-3, 3, -3, 3, 10, 10), budget=0)
    assert whole.n_points == pts.size and whole.n_drawn == N


def test_budget_defaults_to_the_environment(monkeypatch):
    pts = _points()
    monkeypatch.setenv("ORIENTSCOPE_MAP_POINT_BUDGET", str(pts.size))
    assert mr.render_map(pts, mr.Viewport(-3, 3, -3, 3, 12, 6)).mode == "points"
    monkeypatch.setenv("ORIENTSCOPE_MAP_POINT_BUDGET", str(pts.size - 1))
    assert mr.render_map(pts, mr.Viewport(-3, 3, -3, 3, 12, 6)).mode == "image"
    monkeypatch.setenv("ORIENTSCOPE_MAP_POINT_BUDGET", "many")
    with pytest.raises(ValueError, match="ORIENTSCOPE_MAP_POINT_BUDGET"):
        mr.render_map(pts, mr.Viewport(-3, 3, -3, 3, 12, 7))


def test_hover_reports_count_and_dominant_category_of_the_pixel():
    pts = _points()
    render = mr.render_map(pts, VP, budget=0)
    per_cat = np.stack([_hist(pts, VP, pts.colors.codes == k) for k in range(5)], axis=-1)
    for cell in np.argwhere(per_cat.sum(axis=-1) > 3)[:20]:
        info = mr.pixel_info(render, *_centre_of(cell, VP))
        assert info["count"] == per_cat[tuple(cell)].sum()
        assert info["dominant"] == "abcde"[per_cat[tuple(cell)].argmax()]
    assert mr.pixel_info(render, 5.0, 0.0) is None


def test_nearest_point_agrees_with_brute_force():
    pts = _points()
    rng = np.random.default_rng(3)
    sx, sy = 0.01, 0.02  # map units per pixel
    hits = 0
    for cx, cy in rng.uniform([-2.5, -1.5], [2.5, 1.5], (300, 2)):
        d2 = ((pts.x.astype(float) - cx) / sx) ** 2 + ((pts.y.astype(float) - cy) / sy) ** 2
        best = int(np.argmin(d2))
        want = best if d2[best] <= 25 else None
        got = mr.nearest_point(pts, cx, cy, (sx, sy))
        if want is None:
            assert got is None
        else:
            hits += 1
            assert got is not None and d2[got] == pytest.approx(d2[want], rel=1e-6)
    assert 30 < hits < 300  # both outcomes were exercised
    # a click exactly on a point finds it, and its id
    i = 1234
    assert (
        pts.ids(np.array([mr.nearest_point(pts, float(pts.x[i]), float(pts.y[i]), (sx, sy))]))[0]
        == pts.ids(np.array([i]))[0]
    )


def test_equally_near_points_go_to_the_lowest_molecule_then_axis_in_any_storage_order():
    pts = _points(seed=6)
    # molecules 900, 40 and 41 and two axes of molecule 7 all at one spot, over a band edge's neighbourhood
    spot = (0.3, float(np.linspace(-np.sqrt(2), np.sqrt(2), 33)[16]))
    md = pts.md
    for row, axis in ((900, 1), (40, 3), (41, 1), (7, 3), (7, 2)):
        md.x[row, axis - 1], md.y[row, axis - 1] = spot
    rows, axes = md.points()
    px, py = md.xy(rows, axes)
    moved = MapPoints(pts.query, md, px, py, rows.astype(np.int32), axes, pts.colors, None, N, None)
    for view in (moved, sorted_by_x(moved)):
        for click in (spot, (spot[0] + 0.001, spot[1] - 0.001)):
            i = mr.nearest_point(view, *click, (0.01, 0.01))
            assert (view.rows[i], view.axis[i]) == (7, 2)


@pytest.mark.parametrize(
    ("vp", "field"),
    [
        (mr.Viewport(1, 0, 0, 1, 10, 10), "x1"),
        (mr.Viewport(0, 1, 0, 0, 10, 10), "y1"),
        (mr.Viewport(0, float("nan"), 0, 1, 10, 10), "x1"),
        (mr.Viewport(0, 1, 0, 1, 0, 10), "width"),
        (mr.Viewport(0, 1, 0, 1, 10, 5000), "height"),
    ],
)
def test_a_bad_viewport_names_the_bound(vp, field):
    with pytest.raises(InvalidInput) as err:
        mr.render_map(_points(), vp)
    assert err.value.loc == ("query", field)


def test_unknown_kind_and_bad_click_are_invalid_input():
    with pytest.raises(InvalidInput, match="kind"):
        mr.render_map(_points(), VP, kind="heat")
    with pytest.raises(InvalidInput):
        mr.nearest_point(_points(), 0.0, 0.0, (0.0, 1.0))


def test_png_is_the_rgba_image():
    from io import BytesIO

    from PIL import Image

    render = mr.render_map(_points(), VP, budget=0)
    decoded = np.asarray(Image.open(BytesIO(render.png())))
    np.testing.assert_array_equal(decoded, render.rgba)


def test_region_bounds_hold_exactly_for_float32_points():
    pts = _points()
    # points on both sides of bounds that float32 cannot represent exactly (float32(0.3) is above 0.3)
    below, above = np.nextafter(np.float32(0.1), np.float32(-1)), np.nextafter(np.float32(0.1), np.float32(1))
    x = pts.x.copy()
    x[:4] = [below, np.float32(0.1), above, np.float32(0.3)]
    y = pts.y.copy()
    y[:4] = 0.0
    moved = MapPoints(pts.query, pts.md, x, y, pts.rows, pts.axis, pts.colors, None, pts.n_molecules, None)
    vp = mr.Viewport(0.1, 0.3, -0.5, 0.5, 20, 10)
    inside = (x.astype(float) >= 0.1) & (x.astype(float) <= 0.3) & (y >= -0.5) & (y <= 0.5)
    render = mr.render_map(moved, vp, budget=10**6)
    np.testing.assert_array_equal(np.sort(render.index), np.flatnonzero(inside))
    assert mr.render_map(moved, vp, budget=0).n_points == inside.sum()


@pytest.mark.parametrize("colors", ["categorical", "continuous"])
def test_a_view_stored_sorted_by_x_draws_clicks_and_counts_as_the_draw_ordered_one(colors):
    """sorted_by_x (how view_points stores a view, without a second sorted copy) changes no answer."""
    plain = _points(colors, highlight=True, seed=3)
    stored = sorted_by_x(plain)
    bands = band_of(stored.y)
    assert np.all(np.diff(bands) >= 0) and stored.x_sorted and not plain.x_sorted
    assert all(np.all(np.diff(stored.x[bands == b]) >= 0) for b in np.unique(bands))  # by x within a band
    image_a, image_b = mr.render_map(plain, VP, budget=0), mr.render_map(stored, VP, budget=0)
    np.testing.assert_array_equal(image_a.rgba, image_b.rgba)
    np.testing.assert_array_equal(image_a.counts, image_b.counts)
    small = mr.Viewport(-0.3, 0.2, -0.2, 0.3, 40, 20)
    pts_a, pts_b = mr.render_map(plain, small, budget=10**6), mr.render_map(stored, small, budget=10**6)
    assert pts_a.mode == pts_b.mode == "points" and pts_a.index.size > 10
    np.testing.assert_array_equal(plain.rows[pts_a.index], stored.rows[pts_b.index])  # same points, same order
    np.testing.assert_array_equal(plain.x[pts_a.index], stored.x[pts_b.index])
    rng = np.random.default_rng(4)
    for cx, cy in rng.uniform([-2, -1], [2, 1], (30, 2)):
        a = mr.nearest_point(plain, cx, cy, VP.pixel_size)
        b = mr.nearest_point(stored, cx, cy, VP.pixel_size)
        assert (a is None) == (b is None)
        if a is not None:  # one tie rule: the same molecule and axis whatever the storage order
            assert (plain.rows[a], plain.axis[a]) == (stored.rows[b], stored.axis[b])


def _compiled() -> set[tuple[int, str]]:
    """Every (dispatcher, signature) numba has compiled in this process (datashader's kernels and ours)."""
    import gc

    found = set()
    for obj in gc.get_objects():
        try:
            if "Dispatcher" in type(obj).__name__:
                found |= {(id(obj), str(sig)) for sig in obj.signatures}
        except Exception:  # dead weak proxies and other objects that refuse inspection
            continue
    return found


def test_after_warm_up_no_request_compiles_anything():
    mr.warm_up()
    before = _compiled()
    for n_colors in (1, 3, 5, N_GROUP_COLORS + 2):  # axes, small and full group colourings
        pts = sorted_by_x(_points(highlight=True))
        codes = (pts.colors.codes % n_colors).astype(np.uint8)
        spec = MapColors("categorical", "c", codes=codes, labels=tuple("abcdefgh"[:n_colors]),
                            colors=OKABE_ITO[:n_colors])  # fmt: skip
        pts = MapPoints(pts.query, pts.md, pts.x, pts.y, pts.rows, pts.axis, spec, pts.highlight, N, 1, x_sorted=True)
        for kind in mr.KINDS:
            mr.render_map(pts, mr.Viewport(-1.7, 1.3, -0.9, 0.8, 33, 21), kind, budget=0)
        mr.render_map(pts, mr.Viewport(-0.3, 0.2, -0.1, 0.3, 50, 40), budget=10**6)
        mr.nearest_point(pts, 0.1, 0.2, (0.01, 0.01))
    for pts in (_points("continuous"), sorted_by_x(_points("continuous", highlight=True))):
        for kind in mr.KINDS:
            mr.render_map(pts, mr.Viewport(-1.7, 1.3, -0.9, 0.8, 33, 21), kind, budget=0)
    assert _compiled() == before


def test_regions_and_clicks_across_bands_match_a_scan_of_every_point():
    """The banded storage (x sorted within bands of y) finds exactly the points a brute-force scan finds,
    for regions and clicks that straddle band edges."""
    pts = sorted_by_x(_points("categorical", seed=11))
    edges = np.linspace(-np.sqrt(2), np.sqrt(2), 33)
    rng = np.random.default_rng(12)
    for k in range(12):
        y0 = edges[8 + k] - 0.01 * k  # just below a band edge
        vp = mr.Viewport(-0.8 + 0.1 * k, 0.3 + 0.1 * k, y0, y0 + 0.05 + 0.03 * k, 50, 30)
        inside = (pts.x >= vp.x0) & (pts.x <= vp.x1) & (pts.y >= vp.y0) & (pts.y <= vp.y1)
        assert mr.region_stats(pts, vp) == (inside.sum(), np.unique(pts.rows[inside]).size)
        render = mr.render_map(pts, vp, budget=10**6)
        np.testing.assert_array_equal(np.sort(render.index), np.flatnonzero(inside))
        assert mr.render_map(pts, vp, budget=0).counts.sum() == inside.sum()
    px = (0.02, 0.015)
    found = 0
    for cx, cy in np.column_stack([rng.uniform(-2, 2, 60), rng.choice(edges[4:-4], 60) + rng.normal(0, 0.01, 60)]):
        d = np.hypot((pts.x - cx) / px[0], (pts.y - cy) / px[1])
        i = mr.nearest_point(pts, cx, cy, px)
        if d.min() > mr.CLICK_RADIUS_PX:
            assert i is None
        else:
            found += 1
            assert i is not None and d[i] == d.min()
    assert found > 20


@pytest.mark.parametrize("kind", ["color", "density"])
def test_counts_aggregated_in_two_halves_on_two_threads_give_the_same_image(kind, monkeypatch):
    pts = sorted_by_x(_points("categorical", highlight=True, seed=5))
    whole = mr.render_map(pts, VP, kind, budget=0)
    shared_cache().clear("map_render")
    monkeypatch.setattr(mr, "PARALLEL_ROWS", 10)  # every region of more than 10 rows is split
    split = mr.render_map(pts, VP, kind, budget=0)
    assert split is not whole and whole.n_points > 1000
    np.testing.assert_array_equal(split.counts, whole.counts)
    np.testing.assert_array_equal(split.rgba, whole.rgba)


def test_a_large_png_deflated_in_two_halves_decodes_to_the_image():
    from io import BytesIO

    from PIL import Image

    rng = np.random.default_rng(4)
    rgba = rng.integers(0, 256, (500, 700, 4), dtype=np.uint8)
    rgba[:200, :300] = 0  # some runs, as outside the map's ellipse
    assert rgba.nbytes > mr.PARALLEL_DEFLATE_BYTES
    decoded = np.asarray(Image.open(BytesIO(mr.png_rgba(rgba))))
    np.testing.assert_array_equal(decoded, rgba)
