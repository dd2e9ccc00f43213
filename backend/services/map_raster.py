"""The orientation map at any size: every point of a view aggregated onto the screen's pixel grid.

Above the point budget (:func:`orientscope.core.settings.map_point_budget`) the
points of a view inside the viewport are aggregated by datashader onto a
``width × height`` grid whose pixel edges are ``linspace(x0, x1, width + 1)``
and ``linspace(y0, y1, height + 1)`` (both ends inclusive, as in
``numpy.histogram2d``; a point within rounding error of an inner edge may fall
on either side of it), and shaded into an RGBA image. At or below the budget
the caller gets the real points of the region instead. A wide region of a large
view is summed from the view's cell sums instead, on a grid around the viewport
whose pixel edges fall on cell edges (:mod:`orientscope.services.map_cells`): the
same pixels as binning the points onto that grid.

Shading rules (documented so that a test can check them pixel by pixel):

* **categories** (axes, groups): the colour of a pixel is the count-weighted
  mean of its categories' colours (datashader's categorical shading with
  ``color_baseline=0``, channels truncated to integers); its opacity grows
  with the logarithm of its point count, from ``MIN_ALPHA`` at one point to
  255 at the most crowded pixel of the image
  (``alpha = MIN_ALPHA + (255 - MIN_ALPHA) · ln(count) / ln(max(max_count, 2))``).
* **a property or score**: the mean value of a pixel's points on the Cividis
  scale between the view's 1st and 99th percentile (clipped), opaque; a pixel
  whose points all lack a value is grey.
* **density**: points per pixel divided by the number a uniform sphere would
  put there (Mollweide is equal-area), on Cividis from 0 to the 99.5th
  percentile of the image (at least 2), inside the map's ellipse
  (:mod:`orientscope.science.map_scales`, as the dashboard's density maps).
* **SMARTS highlight**: the image is muted (opacity × ``MUTED``), and grey unless it is a density,
  and the matches are drawn over it in one colour whose opacity grows with the
  share of the pixel's points that match, from ``MIN_ALPHA`` to 255.
* **sparse images** (few non-empty pixels: a small set, a deep zoom, a few SMARTS matches): each non-empty
  pixel of the view's colours, and of the matches over them, is stamped as an outlined marker of the
  diameter :mod:`orientscope.services.map_markers` gives for that many markers; the per-pixel aggregates
  are the points' own.

A view's points are held sorted by x within 32 bands of y
(:func:`orientscope.services.map_data.banded_order`): a viewport reads one run of
rows per band it crosses, and the nearest-point lookup of a click scans the
runs within its radius (compiled with numba): at 30M points a few
milliseconds and no memory, where a k-d tree would hold about a gigabyte.
"""

from __future__ import annotations

import base64
import struct
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numba
import numpy as np
import pandas as pd

from orientscope.core.palette import CIVIDIS, HIGHLIGHT, OKABE_ITO, OTHER_GREY
from orientscope.core.resources import LazyModule
from orientscope.core.settings import map_point_budget
from orientscope.science.cell_sums import CellGrid
from orientscope.science.map_scales import density_ceiling, density_ratio
from orientscope.science.nearest_point import nearest_point as science_nearest_point
from orientscope.science.sphere import SQRT2
from orientscope.services.bytecache import shared_cache
from orientscope.services.errors import InvalidInput
from orientscope.services.map_cells import cell_grid, has_cell_sums, region_counts, view_cell_sums
from orientscope.services.map_cells import warm_up as warm_cell_sums
from orientscope.services.map_data import band_ranges, band_starts, banded_order
from orientscope.services.map_markers import MAX_PX, spread_markers
from orientscope.services.map_markers import warm_up as warm_markers
from orientscope.services.map_view import N_GROUP_COLORS, MapPoints, MapQuery, sorted_by_x, view_points

dsh = LazyModule("datashader")
tf = LazyModule("datashader.transfer_functions")
xr = LazyModule("xarray")

MODES = ("image", "points")
KINDS = ("color", "density")
MIN_ALPHA = 96
MUTED = 0.3
MAX_PIXELS = 4096  # per side
MAX_AREA = 2048 * 2048  # pixels per image: a 9-category aggregate of it holds 150 MB
MAX_COORDINATE = 1000.0  # the map spans ±2√2 × ±√2; anything far beyond is a mistake
MIN_SPAN = 1e-6  # float32 points are 2.4e-7 apart near the map's edge: no finer zoom shows more
CLICK_RADIUS_PX = 5.0
FULL_MAP = (-2 * SQRT2, 2 * SQRT2, -SQRT2, SQRT2)


@dataclass(frozen=True)
class Viewport:
    """A region of the Mollweide plane drawn onto ``width × height`` pixels (x to the right, y up)."""

    x0: float
    x1: float
    y0: float
    y1: float
    width: int
    height: int

    def checked(self) -> Viewport:
        """This viewport, or InvalidInput naming the bound that is wrong."""
        for name in ("x0", "x1", "y0", "y1"):
            value = getattr(self, name)
            if not (np.isfinite(value) and abs(value) <= MAX_COORDINATE):
                raise InvalidInput(
                    f"{name} must be a number within ±{MAX_COORDINATE:g}, got {value!r}", ("query", name)
                )
        for lo, hi in (("x0", "x1"), ("y0", "y1")):
            if not getattr(self, hi) - getattr(self, lo) >= MIN_SPAN:
                raise InvalidInput(
                    f"{hi} ({getattr(self, hi)}) must exceed {lo} ({getattr(self, lo)}) by at least {MIN_SPAN:g}",
                    ("query", hi),
                )
        for name in ("width", "height"):
            value = getattr(self, name)
            if not 1 <= value <= MAX_PIXELS:
                raise InvalidInput(f"{name} must be 1 to {MAX_PIXELS} pixels, got {value}", ("query", name))
        if self.width * self.height > MAX_AREA:
            raise InvalidInput(
                f"{self.width} × {self.height} pixels is more than the {MAX_AREA:,} an image may have",
                ("query", "height"),
            )
        return self

    @property
    def pixel_size(self) -> tuple[float, float]:
        """(width, height) of one pixel in map units."""
        return (self.x1 - self.x0) / self.width, (self.y1 - self.y0) / self.height

    def pixel_of(self, x: float, y: float) -> tuple[int, int] | None:
        """(column, row from the bottom) of the pixel holding map point (x, y); None outside."""
        if not (self.x0 <= x <= self.x1 and self.y0 <= y <= self.y1):
            return None
        dx, dy = self.pixel_size
        return min(int((x - self.x0) / dx), self.width - 1), min(int((y - self.y0) / dy), self.height - 1)


@dataclass(frozen=True, eq=False)
class MapRender:
    """What the map draws for one view and viewport.

    mode : "image" or "points"; n_points : shown points in the region; n_drawn : distinct molecules among them.
    Image mode: ``rgba`` (height, width, 4) uint8 with the top row first, and per-pixel aggregates indexed
    ``[row from the bottom, column]``: ``counts`` (uint32), ``dominant`` (int16 category, -1 where empty) or
    ``mean`` (float32, NaN where empty), ``matches`` (uint32 SMARTS matches, or None), ``ratio`` (density).
    ``grid``: the image's own region and pixel grid, the viewport's or, for a wide region of many points, a
    cell-aligned one around it (:mod:`orientscope.services.map_cells`); n_points, n_drawn and the per-pixel
    arrays are of that grid.
    Points mode: ``index`` (k,) int64 indices of the region's points into the view, in draw order.
    ``scale`` describes the colours: {"kind": "categorical", "labels", "colors"} or
    {"kind": "continuous", "title", "colors", "cmin", "cmax"}.
    """

    points: MapPoints
    viewport: Viewport
    kind: str
    mode: str
    n_points: int
    n_drawn: int
    scale: dict
    rgba: np.ndarray | None = None
    counts: np.ndarray | None = None
    dominant: np.ndarray | None = None
    mean: np.ndarray | None = None
    matches: np.ndarray | None = None
    ratio: np.ndarray | None = None
    index: np.ndarray | None = None
    grid: Viewport | None = None

    @property
    def image_viewport(self) -> Viewport:
        """The region and pixel grid the image covers (image mode): ``grid``, else the viewport."""
        return self.grid or self.viewport

    def cache_nbytes(self) -> int:
        """Bytes of the image and aggregates (the view's points are cached on their own)."""
        arrays = (self.rgba, self.counts, self.dominant, self.mean, self.matches, self.ratio, self.index)
        return sum(a.nbytes for a in arrays if a is not None)

    def png(self) -> bytes:
        """The image as PNG bytes (image mode only)."""
        if self.rgba is None:
            raise ValueError("a points-mode render has no image")
        return png_rgba(self.rgba)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_rgba(rgba: np.ndarray) -> bytes:
    """(h, w, 4) uint8 RGBA, top row first, as a PNG: no row filter, zlib level 1.

    A map image is half transparent and speckled: PIL's per-row filter search cost three times
    as long (45 ms against 14 ms for 900 × 458 pixels) and gave a larger file (470 against 300 kB).
    """
    h, w, _ = rgba.shape
    raw = np.zeros((h, 4 * w + 1), np.uint8)  # each row: filter type 0 (none), then its pixels
    raw[:, 1:] = rgba.reshape(h, 4 * w)
    header = struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)  # 8 bits per channel, RGBA, no interlace
    idat = _deflate(raw.tobytes())
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")


# A larger image is deflated as two halves on two threads (zlib releases the GIL), as pigz does: each
# half ends on a byte boundary (a sync flush), and the stream's header and Adler-32 are the whole's.
# A dense 10M-molecule map (990 × 496 pixels, 1.3 MB) took 46 ms in one piece.
PARALLEL_DEFLATE_BYTES = 512 * 1024


def _deflate(raw: bytes) -> bytes:
    """The zlib stream (level 1) of ``raw``."""
    if len(raw) < PARALLEL_DEFLATE_BYTES:
        return zlib.compress(raw, 1)
    view, half = memoryview(raw), len(raw) // 2

    def part(last: bool) -> bytes:
        z = zlib.compressobj(1, zlib.DEFLATED, -15)  # raw deflate: no header or checksum of its own
        return z.compress(view[half:] if last else view[:half]) + z.flush(zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH)

    first, second = _AGG_POOL.map(part, (False, True))
    return b"\x78\x01" + first + second + struct.pack(">I", zlib.adler32(raw))


@numba.njit(cache=True, nogil=True)
def _region_stats(x, y, rows, x0, x1, y0, y1, seen):  # pragma: no cover - compiled
    """(points in [x0, x1] × [y0, y1], distinct rows among them not yet in ``seen``) in one pass;
    marks those rows in ``seen`` ((n_molecules,) bool), so runs of one region share it."""
    n_points = 0
    n_rows_seen = 0
    for i in range(x.size):
        if x0 <= x[i] <= x1 and y0 <= y[i] <= y1:
            n_points += 1
            r = rows[i]
            if not seen[r]:
                seen[r] = True
                n_rows_seen += 1
    return n_points, n_rows_seen


@numba.njit(cache=True, nogil=True)
def _shade_categories(per_cat, rgb, min_alpha):  # pragma: no cover - compiled
    """The categorical shading rule (module docstring) in two passes over the aggregate.

    per_cat : (h, w, k) counts, rows from the bottom; rgb : (k, 3) float64 category colours.
    Returns rgba (h, w, 4) uint8 top row first, counts (h, w) uint32 and dominant (h, w) int16
    (the first most frequent category, -1 where empty), rows from the bottom.
    """
    h, w, k = per_cat.shape
    counts = np.zeros((h, w), np.uint32)
    dominant = np.full((h, w), -1, np.int16)
    top = 2
    for i in range(h):
        for j in range(w):
            total, best, best_n = 0, -1, 0
            for c in range(k):
                n = per_cat[i, j, c]
                total += n
                if n > best_n:
                    best, best_n = c, n
            counts[i, j] = total
            dominant[i, j] = best
            top = max(top, total)
    rgba = np.zeros((h, w, 4), np.uint8)
    scale = (255.0 - min_alpha) / np.log(top)
    for i in range(h):
        for j in range(w):
            total = counts[i, j]
            if total == 0:
                continue
            out = rgba[h - 1 - i, j]
            for ch in range(3):
                acc = 0.0
                for c in range(k):
                    acc += per_cat[i, j, c] * rgb[c, ch]
                out[ch] = min(int(acc / total), 255)
            out[3] = min(int(min_alpha + scale * np.log(total)), 255)
    return rgba, counts, dominant


_BAND_RANGES = band_ranges()


@dataclass(frozen=True, eq=False)
class _SortedView:
    """A view's points sorted by x within bands of y (:func:`orientscope.services.map_data.banded_order`), as
    the DataFrame datashader reads: a region is then one run of rows per band it crosses.

    frame columns: x, y (float32), c (category) or v (float32 value), r (int32 molecule row), and
    i (int32 index of the point in the view's arrays) unless the view is stored in this order.
    """

    frame: pd.DataFrame
    x: np.ndarray  # (m,) float32, ascending within each band
    starts: np.ndarray  # (N_BANDS + 1,) int64 first row of each band, and the end

    def runs(self, x0: float, x1: float, y0: float = -np.inf, y1: float = np.inf) -> list[tuple[int, int]]:
        """[a, b) runs, in row order, of the rows with x0 <= x <= x1 in every band that can hold a y in
        [y0, y1] (adjacent runs merged, empty ones left out)."""
        # Bounds in the array's own dtype: a float64 bound would make numpy convert all of x first.
        lo, hi = self.x.dtype.type(x0), self.x.dtype.type(x1)
        if float(lo) < x0:  # rounded down (compared as Python floats: numpy would compare in float32)
            lo = np.nextafter(lo, self.x.dtype.type(np.inf))
        if float(hi) > x1:
            hi = np.nextafter(hi, self.x.dtype.type(-np.inf))
        out: list[tuple[int, int]] = []
        for band in np.flatnonzero((_BAND_RANGES[:, 0] <= y1) & (_BAND_RANGES[:, 1] >= y0)):
            start, stop = int(self.starts[band]), int(self.starts[band + 1])
            xs = self.x[start:stop]
            a, b = start + int(np.searchsorted(xs, lo, "left")), start + int(np.searchsorted(xs, hi, "right"))
            if a >= b:
                continue
            if out and out[-1][1] == a:
                out[-1] = (out[-1][0], b)
            else:
                out.append((a, b))
        return out

    def slab(self, x0: float, x1: float, y0: float = -np.inf, y1: float = np.inf) -> pd.DataFrame:
        """The rows of :meth:`runs` for datashader, which leaves out points beyond the viewport itself: a
        view of the frame from the first run to the last when the runs fill at least half of it (reading
        the rows between them costs less than copying the runs), else a copy of the runs' rows."""
        runs = self.runs(x0, x1, y0, y1)
        if not runs:
            return self.frame.iloc[0:0]
        a, b = runs[0][0], runs[-1][1]
        if 2 * sum(stop - start for start, stop in runs) >= b - a:
            return self.frame.iloc[a:b]
        return self.frame.take(run_rows(runs))


def run_rows(runs: list[tuple[int, int]]) -> np.ndarray:
    """(k,) int64 rows of [a, b) runs, in order."""
    if not runs:
        return np.zeros(0, np.int64)
    return np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in runs])


def _sorted(points: MapPoints) -> _SortedView:
    """The view's frame in banded order (built once per view unless stored so: one sort of its points)."""

    def build():
        c = points.colors
        geo = points.geometry
        if points.x_sorted:  # stored in order (as view_points stores a view): the frame reads its arrays
            order, columns = None, {"x": points.x, "y": points.y}
            starts = geo.starts if geo is not None and geo.x is points.x else band_starts(points.y)
        else:
            order = banded_order(points.x, points.y)
            columns = {"x": points.x[order], "y": points.y[order]}
            starts = band_starts(columns["y"])
        take = (lambda a: a) if order is None else (lambda a: a[order])
        if c.kind == "categorical":
            codes = take(c.codes).view(np.int8) if len(c.colors) < 128 else take(c.codes).astype(np.int16)
            columns["c"] = pd.Categorical.from_codes(codes, categories=range(category_slots(len(c.colors))))
        else:
            columns["v"] = take(c.values)
        columns["r"] = take(points.rows).astype(np.int32, copy=False)
        if order is not None:
            columns["i"] = order
        frame = pd.DataFrame(columns, copy=False)
        return _SortedView(frame, frame["x"].to_numpy(), np.asarray(starts, np.int64))

    return points.memo("sorted", build)


def category_slots(n: int) -> int:
    """Categories of a view's frame for ``n`` colours: 3 (axes) or room for every group colour.

    datashader compiles its aggregation once per frame schema, and the number of categories is part
    of it: a worker met a new one with each group colouring (0.5 s of compiling, inside a request).
    Padded to two sizes, :func:`warm_up` compiles both before the first request.
    """
    return n if n > N_GROUP_COLORS + 2 else (3 if n <= 3 else N_GROUP_COLORS + 2)


def _frame(points: MapPoints, vp: Viewport) -> pd.DataFrame:
    """The rows datashader aggregates for a viewport: the view's points whose x falls inside it, in the
    bands its y crosses (datashader leaves out the few beyond y0, y1)."""
    return _sorted(points).slab(vp.x0, vp.x1, vp.y0, vp.y1)


def _matches(points: MapPoints) -> _SortedView:
    def build():
        view = _sorted(points)
        frame = view.frame
        keep = points.highlight if points.x_sorted else points.highlight[frame["i"].to_numpy()]
        sub = frame[keep].reset_index(drop=True)  # still in banded order
        kept_before = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])
        return _SortedView(sub, sub["x"].to_numpy(), kept_before[view.starts])

    return points.memo("matches", build)


def _rgba(img) -> np.ndarray:
    """datashader Image (rows from the bottom) → (h, w, 4) uint8 with the top row first."""
    return np.ascontiguousarray(np.asarray(img.data, np.uint32).view(np.uint8).reshape(*img.shape, 4)[::-1])


def _canvas(vp: Viewport) -> dsh.Canvas:
    # Ranges always as floats: numba compiles datashader's kernels per argument type, and an integer
    # bound (a test's or the warm-up's viewport) would compile them again at a request's float bounds.
    x_range, y_range = (float(vp.x0), float(vp.x1)), (float(vp.y0), float(vp.y1))
    return dsh.Canvas(plot_width=vp.width, plot_height=vp.height, x_range=x_range, y_range=y_range)


def _image_color(points: MapPoints, vp: Viewport, out: dict, cells: CellGrid | None = None) -> np.ndarray:
    """The view's colours in ``vp``: binned by datashader, or summed from the view's cell sums on ``cells``
    (``vp``'s own cell-aligned grid)."""
    c = points.colors
    if c.kind == "categorical":
        if cells is not None:
            per_cat = view_cell_sums(points).block_sums(cells)[0]
        else:  # (h, w, k) from the bottom row
            per_cat = _counts(_canvas(vp), _frame(points, vp), lambda: dsh.count_cat("c")).data
        # datashader's own categorical shading took 75 ms of a QM9 map's 100 ms; this one pass takes ~3 ms
        rgba, counts, dominant = shade_categories(per_cat, c.colors)
        out.update(counts=counts, dominant=dominant)
        return rgba
    if cells is not None:
        per_cell, sums = view_cell_sums(points).block_sums(cells)
        counts, valid = np.ascontiguousarray(per_cell[..., 0]), per_cell[..., 1]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(valid > 0, sums / valid, np.nan)
    else:
        agg = _canvas(vp).points(_frame(points, vp), "x", "y", dsh.summary(n=dsh.count(), mean=dsh.mean("v")))
        counts, mean = agg["n"].data.astype(np.uint32), agg["mean"].data
    out.update(counts=counts, mean=mean.astype(np.float32))
    return shade_values(mean, counts, c.lo, c.hi)


def shade_categories(per_cat: np.ndarray, colors) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The categorical rule (module docstring) of per-category counts ``per_cat`` (h, w, k), rows from the
    bottom, whose first categories have ``colors`` (padded ones, :func:`category_slots`, hold no points).

    Returns rgba (h, w, 4) uint8 top row first, counts (h, w) uint32 and dominant (h, w) int16, rows from the
    bottom. The map's and the scatter view's images share it.
    """
    rgb = np.zeros((per_cat.shape[2], 3))
    rgb[: len(colors)] = [_hex_rgba(col)[:3] for col in colors]
    return _shade_categories(per_cat, rgb, float(MIN_ALPHA))


# A count over more rows than this runs as two halves on two threads (datashader's kernels release the
# GIL); counts add exactly, so the image is the same. The whole map of 10M molecules reads 30M rows.
PARALLEL_ROWS = 4_000_000
_AGG_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="map-agg")


def _counts(canvas, frame: pd.DataFrame, reduction):
    """datashader's count-type aggregate (``reduction()``: count or count_cat) of ``frame`` (an xarray
    DataArray, rows from the bottom)."""
    n = len(frame)
    if n <= PARALLEL_ROWS:
        return canvas.points(frame, "x", "y", reduction())
    halves = (frame.iloc[: n // 2], frame.iloc[n // 2 :])
    first, second = _AGG_POOL.map(lambda part: canvas.points(part, "x", "y", reduction()), halves)
    return first.copy(data=first.data + second.data)


def shade_values(mean: np.ndarray, counts: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """The property rule (module docstring): Cividis interpolated linearly between ``lo`` and ``hi``
    (clipped, channels truncated), opaque; grey where a pixel's points have no value.

    mean, counts : (h, w) rows from the bottom → rgba (h, w, 4) top row first; the same pixels as
    datashader's ``shade(how="linear")`` in a tenth of its time (it copies the whole grid several times).
    """
    stops = np.linspace(0.0, hi - lo, len(CIVIDIS))
    palette = np.stack([_hex_rgba(c)[:3] for c in CIVIDIS]).astype(np.float64)
    return _shade_kernel(mean, counts, float(lo), float(hi), stops, palette, _hex_rgba(OTHER_GREY))


@numba.njit(cache=True, nogil=True)
def _shade_kernel(mean, counts, lo, hi, stops, palette, grey):  # pragma: no cover - compiled
    h, w = mean.shape
    rgba = np.zeros((h, w, 4), np.uint8)
    last = stops.size - 1
    for i in range(h):
        r = h - 1 - i
        for j in range(w):
            m = mean[i, j]
            if np.isnan(m):
                if counts[i, j] > 0:
                    for ch in range(4):
                        rgba[r, j, ch] = grey[ch]
                continue
            v = min(max(m, lo), hi) - lo
            k = np.searchsorted(stops, v, side="right") - 1  # stops[k] <= v < stops[k + 1], as numpy.interp
            for ch in range(3):
                if k >= last:
                    c = palette[last, ch]
                else:
                    slope = (palette[k + 1, ch] - palette[k, ch]) / (stops[k + 1] - stops[k])
                    c = slope * (v - stops[k]) + palette[k, ch]
                rgba[r, j, ch] = np.uint8(c)
            rgba[r, j, 3] = 255
    return rgba


def _image_density(points: MapPoints, vp: Viewport, out: dict, cells: CellGrid | None = None) -> np.ndarray:
    if cells is not None:
        per_cell = view_cell_sums(points).block_sums(cells)[0]
        counts = per_cell.sum(axis=2, dtype=np.uint32) if points.colors.kind == "categorical" else per_cell[..., 0]
        agg = xr.DataArray(np.ascontiguousarray(counts), dims=["y", "x"])
    else:
        agg = _counts(_canvas(vp), _frame(points, vp), dsh.count)
    counts = agg.data.astype(np.uint32)
    dx, dy = vp.pixel_size
    xc = vp.x0 + (np.arange(vp.width) + 0.5) * dx
    yc = vp.y0 + (np.arange(vp.height) + 0.5) * dy
    ratio = density_ratio(counts, xc, yc, dx * dy, points.size)
    top = density_ceiling(ratio)
    out.update(counts=counts, ratio=ratio, density_max=top)
    shaded = agg.copy(data=np.clip(ratio, 0, top))
    return _rgba(tf.shade(shaded, cmap=list(CIVIDIS), how="linear", span=(0, top)))


@cache
def _hex_rgba(color: str) -> np.ndarray:
    h = color.lstrip("#")
    return np.array([int(h[i : i + 2], 16) for i in (0, 2, 4)] + [255], np.uint8)


def _with_matches(points: MapPoints, vp: Viewport, base: np.ndarray, out: dict, kind: str) -> np.ndarray:
    agg = _canvas(vp).points(_matches(points).slab(vp.x0, vp.x1, vp.y0, vp.y1), "x", "y", dsh.count())
    matches = agg.data.astype(np.uint32)
    out["matches"] = matches
    base = base.copy()
    if kind == "color":  # the view's colours are set aside while matches are shown (the map drops its scale)
        grey = base[..., :3].astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)
        base[..., :3] = grey[..., None].astype(np.uint8)
    base[..., 3] = (base[..., 3] * MUTED).astype(np.uint8)
    if not matches.any():
        return base
    # a few matches over a full map are stamped as outlined markers (map_markers), so that they show
    over = spread_markers(_match_share(matches, out["counts"]), matches)
    return _rgba(tf.stack(_as_image(base), _as_image(over)))


def _match_share(matches: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The highlight colour with its opacity growing with the share of a pixel's points that match
    (``MIN_ALPHA`` for a few, opaque for all): a match of a third of the set shows where it is denser,
    not a map all in the highlight colour. matches, counts : (h, w), rows from the bottom."""
    share = np.minimum(matches / np.maximum(counts, 1), 1.0)
    over = np.zeros(matches.shape + (4,), np.uint8)
    over[..., :3] = _hex_rgba(HIGHLIGHT)[:3]
    over[..., 3] = np.where(matches > 0, MIN_ALPHA + (255 - MIN_ALPHA) * share, 0).astype(np.uint8)
    return np.ascontiguousarray(over[::-1])


def _as_image(rgba: np.ndarray) -> tf.Image:
    """(h, w, 4) uint8 top row first → datashader Image (rows from the bottom)."""
    flat = np.ascontiguousarray(rgba[::-1]).view(np.uint32).reshape(rgba.shape[:2])
    return tf.Image(flat, dims=["y", "x"])


HIGHLIGHT_LABELS = ("no SMARTS match (grey)", "SMARTS match")  # the highlight scale's classes, in code order


def highlight_scale(points: MapPoints) -> dict:
    """The colours of a highlighted view (the view's own set aside): its other molecules grey, its matches in
    the highlight colour; codes 0 and 1 into ``labels``."""
    return {"kind": "highlight", "title": f"SMARTS {points.query.smarts or ''}".strip(),
            "labels": list(HIGHLIGHT_LABELS), "colors": [OTHER_GREY, HIGHLIGHT]}  # fmt: skip


def _scale(points: MapPoints, kind: str, out: dict) -> dict:
    """What the drawn colours mean: a density's scale, the highlight's while SMARTS matches are shown over the
    view's colours (which are then grey), else the view's colour scale."""
    c = points.colors
    if kind == "color" and points.highlight is not None:
        return highlight_scale(points)
    if kind == "density":
        return {
            "kind": "continuous",
            "title": "density / uniform",
            "colors": list(CIVIDIS),
            "cmin": 0.0,
            "cmax": out.get("density_max", 1.0),
        }
    if c.kind == "categorical":
        return {"kind": "categorical", "title": c.title, "labels": list(c.labels), "colors": list(c.colors)}
    return {"kind": "continuous", "title": c.title, "colors": list(CIVIDIS), "cmin": c.lo, "cmax": c.hi}


# Counting a region's molecules over its x-sorted runs costs a scattered write per candidate point; one pass
# over the whole map in molecule order (map_cells.region_counts) costs about the same whatever the region.
# Measured at 10M molecules: 200k candidates 3 against 35 ms, 1.7M 34 against 34 ms, 11M 280 against 46 ms.
# Regions with fewer candidates than an eighth of the molecules take the runs.
SCATTER_COST = 8


def region_stats(points: MapPoints, vp: Viewport) -> tuple[int, int]:
    """(shown points inside the viewport, distinct molecules among them)."""
    x0, x1, y0, y1 = points.bounds
    if vp.x0 <= x0 and x1 <= vp.x1 and vp.y0 <= y0 and y1 <= vp.y1:  # the whole view: counted once
        everything = (-np.inf, np.inf, -np.inf, np.inf)
        geo = points.geometry
        if geo is not None and geo.whole is not None and geo.x is points.x:  # stored with the view
            return geo.whole
        return points.memo(
            "whole",
            lambda: _region_stats(points.x, points.y, points.rows, *everything, np.zeros(points.md.n_molecules, bool)),
        )
    n_rows = points.md.n_molecules
    # A view stored in x order has its runs at no cost; any other would be sorted first, which the pass spares.
    view = _sorted(points) if points.x_sorted else None
    runs = None if view is None else view.runs(vp.x0, vp.x1, vp.y0, vp.y1)
    if runs is None or sum(b - a for a, b in runs) * SCATTER_COST > n_rows:
        counted = region_counts(points, vp.x0, vp.x1, vp.y0, vp.y1)
        if counted is not None:  # a view resolved from its map data: one pass in molecule order
            return counted
    if view is None:
        view = _sorted(points)
        runs = view.runs(vp.x0, vp.x1, vp.y0, vp.y1)
    x, y, r = (view.frame[k].to_numpy() for k in ("x", "y", "r"))
    bounds = (float(vp.x0), float(vp.x1), float(vp.y0), float(vp.y1))  # one signature
    seen, n_points, n_drawn = np.zeros(n_rows, np.bool_), 0, 0
    for a, b in runs:
        n, d = _region_stats(x[a:b], y[a:b], r[a:b], *bounds, seen)
        n_points, n_drawn = n_points + n, n_drawn + d
    return n_points, n_drawn


def render_map(points: MapPoints, viewport: Viewport, kind: str = "color", budget: int | None = None) -> MapRender:
    """The map of a view in a viewport: an aggregated image above ``budget`` points in the region, else its points.

    kind : "color" (the view's colours) or "density"; budget : default :func:`map_point_budget`.
    """
    if kind not in KINDS:
        raise InvalidInput(f"unknown map kind {kind!r}; expected one of {KINDS}", ("query", "kind"))
    vp = viewport.checked()
    budget = map_point_budget() if budget is None else budget
    # One entry per view, viewport and kind: a cached render serves every budget that draws it the
    # same way (the dashboard's figure and the hover, which asks with budget 0, share one image).
    key = (id(points), vp, kind)
    hit = shared_cache().get("map_render", key)
    if hit is not None and hit.points is points and (hit.mode == "image") == (hit.n_points > budget):
        return hit
    grid, cells = _image_grid(points, vp, budget)  # a wide region of a large view: its image from cell sums
    n_points, n_drawn = region_stats(points, grid)
    out: dict = {}
    if cells is None and n_points <= budget:
        index = points.in_draw_order(points_in_box(points, vp.x0, vp.x1, vp.y0, vp.y1))  # in draw order
        render = MapRender(points, vp, kind, "points", n_points, n_drawn, _scale(points, kind, out), index=index)
    else:
        rgba = (_image_density if kind == "density" else _image_color)(points, grid, out, cells)
        if kind == "color":  # a sparse image's points as markers that show (map_markers); a density is cells
            rgba = spread_markers(rgba, out["counts"])
        if points.highlight is not None:
            rgba = _with_matches(points, grid, rgba, out, kind)
        scale = _scale(points, kind, out)
        out.pop("density_max", None)
        render = MapRender(points, vp, kind, "image", n_points, n_drawn, scale, rgba=rgba, grid=grid, **out)
    shared_cache().put("map_render", key, render)
    return render


def _image_grid(points: MapPoints, vp: Viewport, budget: int) -> tuple[Viewport, CellGrid | None]:
    """The cell-aligned grid an image of ``vp`` is summed on from the view's cell sums, and its cells
    (:func:`orientscope.services.map_cells.cell_grid`); else ``vp`` itself and None."""
    cells = cell_grid(points, (vp.x0, vp.x1, vp.y0, vp.y1), vp.width, vp.height, budget)
    if cells is None or max(cells.width, cells.height) > MAX_PIXELS or cells.width * cells.height > MAX_AREA:
        return vp, None
    return Viewport(*cells.extent, cells.width, cells.height), cells


def whole_map_viewport(width: int, height: int) -> Viewport:
    """The whole map on ``width × height`` pixels with a margin of a marker's radius (plus a pixel) on every side,
    so that the markers a sparse image stamps at the poles and at the outline are drawn whole, not cut in half."""
    pad = MAX_PX / 2 + 1
    if width <= 2 * pad or height <= 2 * pad:
        raise ValueError(f"a whole-map image needs more than {2 * pad:g} pixels a side, got {width} × {height}")
    x0, x1, y0, y1 = FULL_MAP
    dx, dy = pad * (x1 - x0) / (width - 2 * pad), pad * (y1 - y0) / (height - 2 * pad)
    return Viewport(x0 - dx, x1 + dx, y0 - dy, y1 + dy, width, height)


def pixel_info(render: MapRender, x: float, y: float) -> dict | None:
    """What the image shows at map point (x, y): {"count", "dominant" label or "mean", "matches", "ratio"};
    None outside the viewport (image mode only)."""
    if render.counts is None:
        raise ValueError("a points-mode render has no pixels; hover shows the points themselves")
    cell = render.image_viewport.pixel_of(x, y)
    if cell is None:
        return None
    col, row = cell
    info: dict = {"count": int(render.counts[row, col])}
    if render.dominant is not None:  # a category of the view's colours, even while a highlight greys them
        k = int(render.dominant[row, col])
        info["dominant"] = render.points.colors.labels[k] if k >= 0 else None
    if render.mean is not None:
        m = float(render.mean[row, col])
        info["mean"] = m if np.isfinite(m) else None
    if render.ratio is not None:
        r = float(render.ratio[row, col])
        info["ratio"] = r if np.isfinite(r) else None
    if render.matches is not None:
        info["matches"] = int(render.matches[row, col])
    return info


def nearest_point(
    points: MapPoints, x: float, y: float, pixel_size: tuple[float, float], radius_px: float = CLICK_RADIUS_PX
) -> int | None:
    """Index (into the view's points) of the shown point nearest to map point (x, y) within ``radius_px``
    pixels of ``pixel_size`` = (width, height) map units; None if there is none. Equally near points:
    the lowest molecule index, then axis (:mod:`orientscope.science.nearest_point`)."""
    sx, sy = (float(v) for v in pixel_size)
    if not (np.isfinite(x) and np.isfinite(y)):
        raise InvalidInput(f"click position ({x}, {y}) must be finite", ("query", "x"))
    if not (sx > 0 and sy > 0 and np.isfinite(sx) and np.isfinite(sy)):
        raise InvalidInput(f"pixel size ({sx}, {sy}) must be positive", ("query", "width"))
    view = _sorted(points)
    fx, fy = view.frame["x"].to_numpy(), view.frame["y"].to_numpy()
    rx, ry = radius_px * sx, radius_px * sy  # only points that close in x and y can be
    runs = view.runs(x - rx, x + rx, y - ry, y + ry)
    if not runs:
        return None
    order = None if points.x_sorted else view.frame["i"].to_numpy()
    hit = science_nearest_point(fx, fy, points.rows, points.axis, (x, y), (sx, sy), radius_px, np.array(runs), order)
    return None if hit is None else hit[0]


def points_in_box(points: MapPoints, x0: float, x1: float, y0: float, y1: float) -> np.ndarray:
    """(k,) int64 indices (into the view's points) of the points with x0 <= x <= x1 and y0 <= y <= y1."""
    view = _sorted(points)
    rows = run_rows(view.runs(x0, x1, y0, y1))
    fx, fy = view.frame["x"].to_numpy()[rows], view.frame["y"].to_numpy()[rows]
    rows = rows[(fx >= x0) & (fx <= x1) & (fy >= y0) & (fy <= y1)]
    return rows if points.x_sorted else view.frame["i"].to_numpy()[rows].astype(np.int64)


def prepare(points: MapPoints) -> None:
    """Build a view's sorted frame, whole-map counts and (when a wide zoom would read them) cell sums ahead of
    its first request (seconds at 30M points)."""
    _sorted(points)
    region_stats(points, Viewport(*FULL_MAP, 1, 1))
    if has_cell_sums(points):
        view_cell_sums(points)


def warm_up() -> None:
    """Compile the numba kernels and datashader's aggregation paths on a tiny view (a few seconds, once),
    through the same code a request runs, so that every specialisation is compiled."""
    from orientscope.services.map_data import MapData
    from orientscope.services.map_view import MapColors, MapQuery

    rng = np.random.default_rng(0)
    n = 64
    x, y = rng.uniform(-1, 1, (2, n, 3)).astype(np.float32)
    ids = np.arange(n).astype(str)
    md = MapData("warm-up", "", "original", ids, x, y, np.zeros(n, bool), 0)
    rows, axes = md.points()
    px, py = md.xy(rows, axes)
    codes = (axes - 1).astype(np.uint8)
    schemas = [MapColors("continuous", "v", values=rng.uniform(size=rows.size).astype(np.float32))]
    for k in sorted({category_slots(n) for n in range(1, N_GROUP_COLORS + 3)}):  # every padded size a view has
        palette = tuple(OKABE_ITO[i % len(OKABE_ITO)] for i in range(k))
        schemas.append(MapColors("categorical", "c", codes=codes, labels=tuple(map(str, range(k))), colors=palette))
    match = rng.uniform(size=rows.size) < 0.3
    vp, small = Viewport(-1.0, 1.0, -1.0, 1.0, 16, 8), Viewport(-0.2, 0.2, -0.2, 0.2, 16, 8)
    for colors in schemas:
        for highlight in (None, match):
            drawn = MapPoints(MapQuery("warm-up"), md, px, py, rows.astype(np.int32), axes, colors, highlight, n, None)
            for pts in (drawn, sorted_by_x(drawn)):  # the frame of a resolved view, and of a dashboard-only one
                for kind in KINDS:
                    render_map(pts, vp, kind, budget=0)
                render_map(pts, small, budget=10**6)
                nearest_point(pts, 0.0, 0.0, vp.pixel_size)
    warm_cell_sums()
    warm_markers()
    shared_cache().clear("map_render")


# ---------------------------------------------------------------- reads by dataset
def render_view(
    data_dir: Path, query: MapQuery, viewport: Viewport, kind: str = "color", budget: int | None = None
) -> MapRender:
    """:func:`render_map` of a stored dataset's view (NotFoundError, InvalidInput as :func:`view_points`)."""
    return render_map(view_points(data_dir, query), viewport, kind, budget)


def render_record(render: MapRender) -> dict:
    """A render as plain JSON-ready values: counts, colour scale, notes, and the PNG (base64) or the points."""
    pts = render.points
    vp = render.viewport
    record = {
        "mode": render.mode,
        "kind": render.kind,
        "n_points": render.n_points,
        "n_drawn": render.n_drawn,
        "n_molecules": pts.n_molecules,
        "n_matches": pts.n_matches,
        "viewport": _viewport_record(vp),
        "image_viewport": _viewport_record(render.image_viewport) if render.mode == "image" else None,
        "scale": render.scale,
        "notes": list(pts.notes),
        "image": None,
        "points": None,
    }
    if render.mode == "image":
        record["image"] = "data:image/png;base64," + base64.b64encode(render.png()).decode()
    else:
        idx = render.index
        c = pts.colors
        if render.scale["kind"] == "highlight":
            color = pts.highlight[idx].astype(np.uint8)  # codes into the highlight scale
        else:
            color = c.codes[idx] if c.kind == "categorical" else c.values[idx]
        record["points"] = {
            "id": pts.ids(idx).tolist(),
            "x": pts.x[idx].tolist(),
            "y": pts.y[idx].tolist(),
            "axis": pts.axis[idx].tolist(),
            "color": color.tolist(),
            "match": None if pts.highlight is None else pts.highlight[idx].tolist(),
        }
    return record


def _viewport_record(vp: Viewport) -> dict:
    return {"x0": vp.x0, "x1": vp.x1, "y0": vp.y0, "y1": vp.y1, "width": vp.width, "height": vp.height}


def hover_info(data_dir: Path, query: MapQuery, viewport: Viewport, x: float, y: float, kind: str = "color") -> dict:
    """What the aggregated image of a view shows under map point (x, y): see :func:`pixel_info`
    ({"count": 0} outside the viewport)."""
    render = render_view(data_dir, query, viewport, kind, budget=0)
    return pixel_info(render, x, y) or {"count": 0}
