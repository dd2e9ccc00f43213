"""Server side of the map at any size on 30M synthetic map points -> section `map` of BENCHMARKS.md.

10M molecules × 3 axes: 70 % uniform on the sphere (uniform in the equal-area Mollweide ellipse) and
30 % in six tight clusters, as an aligned set would put them. Times the datashader aggregation of the
whole map, of zoomed regions above the budget, of a region small enough for points mode, the PNG
encoding and the nearest-point lookup of a click, and counts the bytes the view holds.

Usage: python -m tests.bench.bench_map [N_MOLECULES]   (default 10,000,000; about 2 GB of RAM)

       python -m tests.bench.bench_map store DATA_DIR DATASET   -> section `map-10m`
           the map of a real (sharded) dataset through the services: build time and resident memory of
           its map data and default view, whole map, zoom and click (about 1.3 GB of RAM at 10M molecules).

       python -m tests.bench.bench_map browser DATA_DIR DATASET  -> section `map-10m-browser`
           `orientscope serve --read-only` on DATA_DIR, headless Chromium with a new context per
           navigation: navigation -> the first paint drawn and a click on it answered, the interactive
           map drawn, zoom -> re-aggregated view drawn, click -> molecule shown; the SMARTS highlight
           (its search job once, kept in $ORIENTSCOPE_BENCH_SMARTS_DIR), then its map and zooms.
"""

from __future__ import annotations

import gc
import os
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from tests.bench.common import write_section

SQRT2 = np.sqrt(2.0)
SEED = 0


def synthetic_xy(n_points: int, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """(n_points,) float32 Mollweide x, y: uniform in the ellipse plus six clusters."""
    rng = np.random.default_rng(seed)
    x = np.empty(n_points, np.float32)
    y = np.empty(n_points, np.float32)
    n_uniform = int(0.7 * n_points)
    filled = 0
    while filled < n_uniform:  # rejection sampling in the bounding box, in chunks
        k = min(4_000_000, 2 * (n_uniform - filled))
        cx = rng.uniform(-2 * SQRT2, 2 * SQRT2, k)
        cy = rng.uniform(-SQRT2, SQRT2, k)
        keep = (cx / (2 * SQRT2)) ** 2 + (cy / SQRT2) ** 2 <= 1
        take = min(int(keep.sum()), n_uniform - filled)
        x[filled : filled + take] = cx[keep][:take]
        y[filled : filled + take] = cy[keep][:take]
        filled += take
    centres = rng.uniform([-2.0, -1.0], [2.0, 1.0], (6, 2))
    which = rng.integers(0, 6, n_points - n_uniform)
    x[n_uniform:] = centres[which, 0] + rng.normal(0, 0.05, which.size)
    y[n_uniform:] = centres[which, 1] + rng.normal(0, 0.05, which.size)
    order = rng.permutation(n_points)  # mixed, as the map's seeded draw order is
    return x[order], y[order]


def build_points(n_molecules: int):
    from orientscope.core.palette import OKABE_ITO
    from orientscope.services.map_data import MapData
    from orientscope.services.map_view import AXIS_NAMES, MapColors, MapPoints, MapQuery

    x, y = synthetic_xy(3 * n_molecules)
    rows = (np.arange(3 * n_molecules, dtype=np.int32) // 3).astype(np.int32)
    axis = (np.arange(3 * n_molecules) % 3 + 1).astype(np.int8)
    md = MapData(
        "synthetic", "bench", "original", np.arange(n_molecules), x.reshape(-1, 3), y.reshape(-1, 3),
        np.zeros(n_molecules, bool), SEED,
    )  # fmt: skip
    colors = MapColors(
        "categorical", "axis", codes=(axis - 1).astype(np.uint8), labels=tuple(AXIS_NAMES.values()),
        colors=OKABE_ITO[:3],
    )  # fmt: skip
    return MapPoints(MapQuery("synthetic"), md, x, y, rows, axis, colors, None, n_molecules, None)


def _median_s(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for i in range(repeats):
        t0 = time.perf_counter()
        out = fn(i)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> None:
    from orientscope.services import map_raster as mr
    from orientscope.services.map_view import sorted_by_x

    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "store":
        return main_store(Path(argv[1]), argv[2])
    if argv and argv[0] == "browser":
        from tests.bench.bench_map_browser import main_browser

        return main_browser(Path(argv[1]), argv[2])
    n_molecules = int(argv[0]) if argv else 10_000_000
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    mr.warm_up()
    warm_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    points = build_points(n_molecules)
    build_s = time.perf_counter() - t0
    rss_before_mb = _rss_mb()
    t0 = time.perf_counter()
    points = sorted_by_x(points)  # how view_points stores a resolved view
    mr.prepare(points)  # what the server's warm-up does for every ready dataset's default view
    prepare_s = time.perf_counter() - t0
    gc.collect()
    held_mb = _rss_mb() - rss_before_mb
    W, H = 900, 458  # the dashboard's first draw
    full = lambda i: mr.Viewport(-2.95, 2.95, -1.5 - 1e-6 * i, 1.5, W, H)  # noqa: E731  (distinct: no cache hits)
    first_s = _median_s(lambda i: mr.render_map(points, full(100 + i), budget=200_000), 1)[0]
    full_s, render = _median_s(lambda i: mr.render_map(points, full(i), budget=200_000), 3)
    png_s, png = _median_s(lambda i: render.png(), 3)
    zoom = lambda i: mr.Viewport(0.1 * i, 0.1 * i + 0.6, 0.2, 0.5, W, H)  # noqa: E731
    zoom_s, zoomed = _median_s(lambda i: mr.render_map(points, zoom(i), budget=200_000), 3)
    deep = lambda i: mr.Viewport(-0.6 + 0.01 * i, -0.55 + 0.01 * i, 0.1, 0.125, W, H)  # noqa: E731
    deep_s, deep_render = _median_s(lambda i: mr.render_map(points, deep(i), budget=200_000), 3)
    px = (5.9 / W, 3.0 / H)
    rng = np.random.default_rng(1)
    clicks = rng.uniform([-2.5, -1.2], [2.5, 1.2], (10, 2))
    click_s, _ = _median_s(lambda i: mr.nearest_point(points, *clicks[i], px), 10)
    frame = points.memo("sorted", lambda: None).frame
    arrays = [points.x, points.y, points.rows, points.axis, points.colors.codes]
    view_mb = sum(a.nbytes for a in arrays) / 1e6
    own = [frame[k].to_numpy() if k != "c" else frame[k].cat.codes.to_numpy() for k in frame.columns]
    frame_mb = sum(a.nbytes for a in own if not any(np.shares_memory(a, b) for b in arrays)) / 1e6
    rss_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    text = f"""## Map aggregation at 30M points (server side)

{n_molecules:,} synthetic molecules, {points.size:,} map points (70 % uniform, 30 % in six clusters);
`python -m tests.bench.bench_map`; datashader {_version("datashader")}, numba {_version("numba")}; 2 shared CPU
cores (1-min load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after: timings are noisy).

| step | time | target (issue 16, end to end in the browser) |
|---|---|---|
| numba/datashader JIT warm-up at server start (once) | {warm_s:.1f} s | — |
| index of the view: its points sorted by x, whole-map counts (once per view, at server warm-up for the default view) | {prepare_s:.1f} s | — |
| whole map, {W}×{H} px, colour by axis (first aggregation) | {first_s * 1000:.0f} ms | — |
| whole map, {W}×{H} px, colour by axis (median of 3) | {full_s * 1000:.0f} ms | navigation ≤ 1.5 s |
| PNG encoding of that image ({len(png) / 1e3:.0f} kB) | {png_s * 1000:.0f} ms | |
| zoomed region above the budget ({zoomed.n_points:,} points, {zoomed.mode}) | {zoom_s * 1000:.0f} ms | zoom ≤ 400 ms |
| small region below the budget ({deep_render.n_points:,} points, {deep_render.mode}) | {deep_s * 1000:.0f} ms | |
| nearest point within 5 px of a click (scan of the x-slab within 5 px, median of 10) | {click_s * 1000:.0f} ms | click ≤ 300 ms |

Memory of the view: it is stored sorted by x, as the frame datashader reads; its arrays hold {view_mb:.0f} MB
(x, y float32; molecule row int32; axis and colour int8; the draw order is a counter-based key, not stored),
and the frame adds {frame_mb:.0f} MB of its own (it reads the arrays in place). Resident memory grew by
{held_mb:.0f} MB from the synthetic arrays to the indexed view (their x, y stay alive as the map data's coordinates, as in the server); peak RSS
of this process {rss_gb:.2f} GB (including the synthetic generation). Building the synthetic points took {build_s:.1f} s.
The map of a real 10M-molecule store, and the browser at 10M: sections `map-10m` and `map-10m-browser`.
"""
    print(text)
    write_section("map", text)


def main_store(data_dir: Path, dataset_id: str) -> None:
    """The map of a stored dataset through the services, from a cold process: the ≤ 1 GB memory figure."""
    from orientscope.services import map_raster as mr
    from orientscope.services.map_data import load_map_data
    from orientscope.services.map_pick import nearest_molecule
    from orientscope.services.map_view import MapQuery, view_points

    load_before = os.getloadavg()[0]
    mr.warm_up()
    gc.collect()
    rss0 = _rss_mb()
    t0 = time.perf_counter()
    md = load_map_data(data_dir, dataset_id)
    data_s = time.perf_counter() - t0
    gc.collect()
    rss1 = _rss_mb()
    t0 = time.perf_counter()
    points = view_points(data_dir, MapQuery(dataset_id))
    mr.prepare(points)
    view_s = time.perf_counter() - t0
    gc.collect()
    rss2 = _rss_mb()
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    q, W, H = MapQuery(dataset_id), 900, 458
    full = lambda i: mr.Viewport(-2.95, 2.95, -1.5 - 1e-6 * i, 1.5, W, H)  # noqa: E731  (distinct: no cache hits)

    def record(vp):
        return mr.render_record(mr.render_view(data_dir, q, vp))  # what GET /map answers (PNG in base64)

    first_s = _median_s(lambda i: record(full(100 + i)), 1)[0]
    full_s, rec = _median_s(lambda i: record(full(i)), 3)
    zoom = lambda i: mr.Viewport(0.1 * i, 0.1 * i + 0.6, 0.2, 0.5, W, H)  # noqa: E731
    zoom_s, zoomed = _median_s(lambda i: record(zoom(i)), 3)
    deep = lambda i: mr.Viewport(-0.6 + 0.01 * i, -0.55 + 0.01 * i, 0.1, 0.125, W, H)  # noqa: E731
    deep_s, deep_rec = _median_s(lambda i: record(deep(i)), 3)
    rng = np.random.default_rng(1)
    clicks = rng.uniform([-2.5, -1.2], [2.5, 1.2], (10, 2))
    click_s, hit = _median_s(lambda i: nearest_molecule(data_dir, q, full(0), *clicks[i]), 10)
    row_s, _ = _median_s(lambda i: md.row_of(points.ids(np.array([i * 1_000_003 % points.size]))[0]), 5)
    stored = md.default_view is not None  # map arrays stored (store.map_arrays): opened, not built
    anon, file_pages = _rss_parts_mb()
    data_step = (
        "map data: stored map arrays opened, memory-mapped (built once by `orientscope map` or on first use)"
        if stored
        else "map data: frames read and projected shard by shard (once per dataset, at server warm-up)"
    )
    view_step = (
        "default view: its stored x-sorted points and whole-map counts opened (at server warm-up)"
        if stored
        else "default view: points sorted by x, whole-map counts (once, at server warm-up)"
    )
    lookup = "a sorted hash index, memory-mapped" if md.id_index is not None else "an Arrow scan, no index held"
    text = f"""## The map of a {md.n_molecules:,}-molecule store (server side, through the services)

`python -m tests.bench.bench_map store {data_dir} {dataset_id}`: {md.n_molecules:,} molecules,
{points.size:,} map points, read from the stored frames ({"one table per shard" if md.n_molecules > 250_000 else "one table"}),
colour by axis; 2 shared CPU cores (1-min load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after:
timings are noisy).

| step | time | target (issue 16) |
|---|---|---|
| {data_step} | {data_s:.1f} s | — |
| {view_step} | {view_s:.1f} s | — |
| whole map {W}×{H} px, as `GET /map` answers it (first) | {first_s * 1000:.0f} ms | — |
| whole map (median of 3) | {full_s * 1000:.0f} ms | navigation ≤ 1.5 s in the browser |
| zoomed region ({zoomed["n_points"]:,} points, {zoomed["mode"]}) | {zoom_s * 1000:.0f} ms | zoom ≤ 400 ms in the browser |
| small region ({deep_rec["n_points"]:,} points, {deep_rec["mode"]}, with ids) | {deep_s * 1000:.0f} ms | |
| click → nearest molecule within 5 px (`GET /map/nearest`, median of 10) | {click_s * 1000:.0f} ms | click ≤ 300 ms in the browser |
| molecule id → map row (the selection ring; {lookup}) | {row_s * 1000:.1f} ms | |

**Memory** (resident, after the build's temporaries are returned): map data +{rss1 - rss0:.0f} MB
(its arrays on the heap {md.cache_nbytes() / 1e6:.0f} MB: x, y float32 (n, 3), ids as one Arrow string column,
degenerate flags), default view +{rss2 - rss1:.0f} MB ({points.geometry.cache_nbytes() / 1e6:.0f} MB of x-sorted
x, y, rows, axes, {points.colors.nbytes / 1e6:.0f} MB of colours); together **{rss2 - rss0:.0f} MB** against the
target of ≤ 1 GB. Peak resident memory of the process {peak_gb:.2f} GB (including {rss0:.0f} MB of Python,
numba and datashader before the map){"" if stored else ": building the view holds its unsorted arrays for a moment"}.
Resident memory after the measurements: {anon:.0f} MB anonymous + {file_pages:.0f} MB file pages (memory maps
the OS may drop).
"""
    print(text)
    write_section("map-10m", text)


def _rss_mb() -> float:
    """Resident memory of this process now, MB."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1e3


def _rss_parts_mb() -> tuple[float, float]:
    """(anonymous, file-backed) resident memory of this process now, MB."""
    with open("/proc/self/status") as f:
        fields = dict(line.split(":", 1) for line in f if line.startswith(("RssAnon", "RssFile")))
    return int(fields["RssAnon"].split()[0]) / 1e3, int(fields["RssFile"].split()[0]) / 1e3


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    main()
