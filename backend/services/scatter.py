"""A stored property against a coordinate of one principal axis: "does ZPVE vary with the first axis's latitude?"

x is a coordinate of axis ``axis`` of each molecule's canonical frame as stored (the frames table's
rotation, rows = axes): its longitude or latitude on the sky (degrees, as the map projects them), or one
of its components x, y, z (R[axis][1..3]). y is the property. Like the map, the figure is the points
at or below the point budget (``ORIENTSCOPE_MAP_POINT_BUDGET``), else an aggregated image (datashader).
The points are coloured by the dashboard's Colour-by as the map colours them
(:func:`orientscope.services.map_view.point_colors`), and the image aggregates it as the map's image does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from orientscope.core.settings import map_point_budget
from orientscope.science.nearest_point import nearest_point
from orientscope.science.sphere import axes_lonlat_deg
from orientscope.services.bytecache import map_cache
from orientscope.services.cache import get_view
from orientscope.services.errors import InvalidInput
from orientscope.services.grouping import formulas
from orientscope.services.map_pick import color_value, pixel_neighbourhood, sharing_pixel
from orientscope.services.map_raster import (  # dsh, tf: datashader, imported on first use (not at server start)
    Viewport,
    category_slots,
    dsh,
    png_rgba,
    shade_categories,
    shade_values,
    tf,
)
from orientscope.services.map_view import AXIS_NAMES, MapColors, MapQuery, point_colors

COORDINATES = ("lon", "lat", "x", "y", "z")
COORDINATE_NAMES = {"lon": "longitude (°)", "lat": "latitude (°)", "x": "x component", "y": "y component",
                    "z": "z component"}  # fmt: skip
SCALES = ("linear", "log")
IMAGE_SIZE = (900, 500)  # pixels of the first aggregated image (the plot stretches it until a zoom asks anew)
MAX_IMAGE_SIDE = 4096


@dataclass(frozen=True)
class ScatterQuery:
    """prop : a stored property; axis : 1..3; coord : one of :data:`COORDINATES`; scale : "linear" | "log" (y)."""

    dataset: str
    prop: str
    axis: int = 1
    coord: str = "lat"
    scale: str = "linear"

    def checked(self) -> ScatterQuery:
        """This query, or InvalidInput naming the field that is wrong and what it accepts."""
        if self.axis not in (1, 2, 3):
            raise InvalidInput(f"axis {self.axis!r}: expected 1, 2 or 3", ("query", "axis"))
        if self.coord not in COORDINATES:
            raise InvalidInput(f"unknown coordinate {self.coord!r}; expected one of {COORDINATES}", ("query", "coord"))
        if self.scale not in SCALES:
            raise InvalidInput(f"unknown scale {self.scale!r}; expected one of {SCALES}", ("query", "scale"))
        return self


@dataclass(frozen=True, eq=False)
class ScatterPoints:
    """The plotted molecules: x, y (m,) float64 (molecules with both values finite, and y > 0 on a log
    scale), rows (m,) int64 into the dataset's molecules, ids (m,) str; titles of both axes; ``log``:
    whether y is on a log scale; notes : what was left out and why."""

    query: ScatterQuery
    x: np.ndarray
    y: np.ndarray
    rows: np.ndarray
    ids: np.ndarray
    x_title: str
    y_title: str
    log: bool
    n_molecules: int
    notes: tuple[str, ...] = ()

    def cache_nbytes(self) -> int:
        return sum(int(a.nbytes) for a in (self.x, self.y, self.rows)) + 16 * int(self.ids.size)


def axis_coordinate(rotations: np.ndarray, axis: int, coord: str) -> np.ndarray:
    """(n,) coordinate ``coord`` of axis ``axis`` (1..3) of frames ``rotations`` (n, 3, 3), rows = axes:
    longitude or latitude in degrees (:func:`orientscope.science.sphere.axes_lonlat_deg`), or a component."""
    row = np.asarray(rotations[:, axis - 1, :], np.float64)
    if coord in ("lon", "lat"):
        lon, lat = axes_lonlat_deg(row[:, None, :])
        return (lon if coord == "lon" else lat)[:, 0]
    return row[:, "xyz".index(coord)]


def scatter_points(data_dir: Path, query: ScatterQuery) -> ScatterPoints:
    """The points of a scatter view (cached; InvalidInput for an unknown property, axis or coordinate)."""
    q = query.checked()
    view = get_view(data_dir, q.dataset)
    if q.prop not in view.property_names:
        raise InvalidInput(f"unknown property {q.prop!r}; expected one of {view.property_names}", ("query", "prop"))
    key = (str(data_dir), id(view), q)
    hit = map_cache().get("scatter_points", key)
    if hit is not None and hit[0] is view:  # the id of a dropped view may be reused
        return hit[1]
    x = axis_coordinate(view.rotations, q.axis, q.coord)
    y = np.asarray(view.property_values[:, view.property_names.index(q.prop)], np.float64)
    keep = np.isfinite(x) & np.isfinite(y)
    notes = []
    if not keep.all():
        notes.append(f"{int((~keep).sum()):,} molecules without a value are left out")
    log = q.scale == "log"
    if log and (y[keep] <= 0).any():
        n_bad = int((y[keep] <= 0).sum())
        notes.append(f"a log scale is not possible: {n_bad:,} molecules have {q.prop} ≤ 0; shown on a linear scale")
        log = False
    rows = np.flatnonzero(keep)
    unit = view.property_units.get(q.prop)
    points = ScatterPoints(
        q, x[rows], y[rows], rows, np.asarray(view.ids)[rows].astype(str),
        f"axis {q.axis} {COORDINATE_NAMES[q.coord]}", f"{q.prop} ({unit})" if unit else q.prop, log,
        len(view), tuple(notes),
    )  # fmt: skip
    map_cache().put("scatter_points", key, (view, points), size=points.cache_nbytes())
    return points


def scatter_colors(
    data_dir: Path, points: ScatterPoints, color: str = "axis", grouping: str = "formula"
) -> tuple[MapColors | None, tuple[str, ...]]:
    """(colours of the plotted molecules by ``color`` (the map's Colour-by: axis, group, score, prop:<name>,
    shift:<audit_id>:<property>) and ``grouping``, notes), cached per view. The colours are None where the
    plot has one colour (by axis, or a colour that fell back to it): its image then shades counts.
    InvalidInput for a colour the map would refuse."""
    q = MapQuery(points.query.dataset, color=color, grouping=grouping).checked()
    key = (id(points), color, grouping)
    hit = map_cache().get("scatter_colors", key)
    if hit is not None and hit[0] is points:
        return hit[1]
    notes: list[str] = []
    axis = np.full(points.rows.size, points.query.axis, np.int8)  # one point per molecule: the chosen axis
    colors = point_colors(data_dir, q, points.rows, axis, notes)
    answer = (None if colors.title == "axis" else colors), tuple(notes)
    map_cache().put("scatter_colors", key, (points, answer), size=colors.nbytes + 64)
    return answer


@dataclass(frozen=True)
class ScatterImage:
    """The aggregated image of a scatter view: ``png`` bytes of ``width`` × ``height`` pixels over ``x_range``
    and ``y_range`` (y in log10 units on a log scale), brighter where more molecules lie."""

    png: bytes
    x_range: tuple[float, float]
    y_range: tuple[float, float]
    width: int
    height: int


def scatter_mode(points: ScatterPoints, budget: int | None = None) -> str:
    """The drawing of a view: "points" at or below the point budget (the map's), else "image"."""
    budget = map_point_budget() if budget is None else budget
    return "points" if points.x.size <= budget else "image"


def _span(values: np.ndarray) -> tuple[float, float]:
    lo, hi = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
    pad = (hi - lo) * 0.02 or max(abs(lo) * 0.02, 1e-9)
    return lo - pad, hi + pad


def scatter_image(
    points: ScatterPoints,
    region: tuple[float, float, float, float] | None = None,
    size: tuple[int, int] = IMAGE_SIZE,
    colors: MapColors | None = None,
) -> ScatterImage:
    """The view as an aggregated image of ``region`` (x0, x1, y0, y1; y in log10 units on a log scale; default
    all the points) at ``size`` (width, height) pixels, cached per view and colouring.

    ``colors`` (:func:`scatter_colors`): None shades the counts per pixel (log); categories and values are
    shaded by the map image's rules (:mod:`orientscope.services.map_raster`): the count-weighted mean colour
    of a pixel's categories, or its mean value on Cividis between the colours' ``lo`` and ``hi``."""
    width, height = size
    if not (1 <= width <= MAX_IMAGE_SIDE and 1 <= height <= MAX_IMAGE_SIDE):
        raise InvalidInput(
            f"an image is 1 to {MAX_IMAGE_SIDE} pixels a side, got {width} × {height}", ("query", "width")
        )
    spans = None if region is None else (region[1] - region[0], region[3] - region[2])
    if spans is not None and not (np.all(np.isfinite([*region, *spans])) and min(spans) > 0):
        raise InvalidInput(f"region {region} must be finite with x0 < x1 and y0 < y1", ("query", "x0"))
    key = (id(points), region, size, id(colors))
    hit = map_cache().get("scatter_image", key)
    if hit is not None and hit[0] is points and hit[1] is colors:
        return hit[2]
    y = np.log10(points.y) if points.log else points.y
    x_range, y_range = (_span(points.x), _span(y)) if region is None else (region[:2], region[2:])
    canvas = dsh.Canvas(plot_width=width, plot_height=height, x_range=x_range, y_range=y_range)
    frame = pd.DataFrame({"x": points.x, "y": y})
    if colors is None:
        img = tf.shade(canvas.points(frame, "x", "y", dsh.count()), cmap=["#c6dbef", "#08306b"], how="log",
                       min_alpha=96)  # fmt: skip
        rgba = np.flipud(img.to_numpy().view(np.uint8).reshape(height, width, 4))  # top row first
    elif colors.kind == "categorical":
        frame["c"] = pd.Categorical.from_codes(
            colors.codes.astype(np.int16), categories=range(category_slots(len(colors.colors)))
        )
        rgba = shade_categories(canvas.points(frame, "x", "y", dsh.count_cat("c")).data, colors.colors)[0]
    else:
        frame["v"] = colors.values
        agg = canvas.points(frame, "x", "y", dsh.summary(n=dsh.count(), mean=dsh.mean("v")))
        rgba = shade_values(agg["mean"].data, agg["n"].data.astype(np.uint32), colors.lo, colors.hi)
    image = ScatterImage(png_rgba(np.ascontiguousarray(rgba)), tuple(x_range), tuple(y_range), width, height)
    map_cache().put("scatter_image", key, (points, colors, image), size=len(image.png))
    return image


CLICK_RADIUS_PX = 5.0  # as the map's (orientscope.services.map_raster)


def nearest_molecule(
    data_dir: Path,
    query: ScatterQuery,
    x: float,
    y: float,
    dx: float,
    dy: float,
    shown: Viewport | None = None,
    color: str = "axis",
    grouping: str = "formula",
) -> dict:
    """The molecule a click at (x, y) of a scatter view opens, and what a hover there says of it.

    Its point is the one nearest to the click within 5 pixels, pixels being ``dx`` by ``dy`` (y in log10
    units on a log scale, as plotly.js's log axis measures it); ties: the molecule first in the dataset.
    Answer: {"id", "x", "y", "distance_px", "formula", "color" (the title of ``color``, the map's Colour-by
    with ``grouping``), "value" (what that colour shows for the molecule), "shared"}; ``shared``: the molecules
    in that point's pixel of ``shown`` (the region on screen and its size in pixels), itself included, by
    the map's rule (:func:`orientscope.services.map_pick.sharing_pixel`), or None without ``shown``.
    Every field is None when no point is that near.
    """
    for name, value in (("x", x), ("y", y), ("dx", dx), ("dy", dy)):
        if not np.isfinite(value) or (name.startswith("d") and value <= 0):
            raise InvalidInput(f"{name} must be a finite number{' above 0' if name[0] == 'd' else ''}, got {value}",
                               ("query", name))  # fmt: skip
    if shown is not None and not (
        np.all(np.isfinite([shown.x0, shown.x1, shown.y0, shown.y1, *shown.pixel_size])) and min(shown.pixel_size) > 0
    ):
        raise InvalidInput(f"shown region {shown} must be finite with x0 < x1 and y0 < y1", ("query", "x0"))
    points = scatter_points(data_dir, query)
    colors, _ = scatter_colors(data_dir, points, color, grouping)
    py = np.log10(points.y) if points.log else points.y
    axes = np.ones(points.rows.size, np.int8)  # one point per molecule: the tie rule is the row order
    hit = nearest_point(points.x, py, points.rows, axes, (x, y), (dx, dy), CLICK_RADIUS_PX)
    if hit is None:
        return dict.fromkeys(("id", "x", "y", "distance_px", "formula", "color", "value", "shared"))
    i, distance = hit
    view = get_view(data_dir, query.dataset)
    row = int(points.rows[i])
    return {
        "id": str(points.ids[i]),
        "x": float(points.x[i]),
        "y": float(points.y[i]),
        "distance_px": distance,
        "formula": str(view.value_at(formulas(view), row)),
        "color": "axis" if colors is None else colors.title,
        "value": AXIS_NAMES[query.axis] if colors is None else color_value(colors, i),
        "shared": None if shown is None else _shared(points, py, shown, i),
    }


def _shared(points: ScatterPoints, py: np.ndarray, shown: Viewport, i: int) -> int:
    """Molecules with a point in the pixel of ``shown`` holding point ``i`` (y: ``py``, as plotted)."""
    box = pixel_neighbourhood(shown, float(points.x[i]), float(py[i]))
    if box is None:
        return 1
    x0, x1, y0, y1 = box
    near = np.flatnonzero((points.x >= x0) & (points.x <= x1))  # y compared on those only (~20 ms at 10M)
    near = near[(py[near] >= y0) & (py[near] <= y1)]
    return int(sharing_pixel(shown, points.x, py, points.rows, i, near).size)
