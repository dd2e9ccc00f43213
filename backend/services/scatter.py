"""A stored property against a coordinate of one principal axis: "does ZPVE vary with the first axis's latitude?"

x is a coordinate of axis ``axis`` of each molecule's canonical frame as stored (the frames table's
rotation, rows = axes): its longitude or latitude on the sky (degrees, as the map projects them), or one
of its components x, y, z (R[axis][1..3]). y is the property. Like the map, the figure is the points
at or below the point budget (``ORIENTSCOPE_MAP_POINT_BUDGET``), else an aggregated image (datashader).
The points are coloured by the dashboard's Colour-by as the map colours them
(:func:`orientscope.services.map_view.point_colors`), and the image aggregates it as the map's image does.

The view opens on what suits the data (:func:`suited_scale`, :func:`home_region`): a log scale where the bulk of
a positive property spans decades, and a y range over the bulk of the values when a few outliers would squeeze
the rest into a flat line (QM9's rot_a: 99.8 % of the molecules between 1.7 and 18 GHz, a few up to 620,000).
A hover and a click pick by the map's rule (:func:`pick`): the point nearest to the cursor within 5 pixels,
and the molecules sharing its pixel, which a click lets the user choose among (:func:`shared_molecules`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from orientscope.core.numbers import format_count, format_number
from orientscope.core.settings import map_point_budget
from orientscope.science.nearest_point import nearest_point
from orientscope.science.sphere import axes_lonlat_deg
from orientscope.services.bytecache import map_cache
from orientscope.services.cache import get_view
from orientscope.services.depiction import depiction_svg
from orientscope.services.errors import InvalidInput
from orientscope.services.grouping import formulas
from orientscope.services.map_pick import MAX_PAGE, color_value, pixel_neighbourhood, sharing_pixel, value_text
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
# A log scale suits a positive property whose bulk (BULK of its values) spans this many decades or more.
LOG_DECADES = 2.0
BULK = (0.1, 99.9)  # percentiles (of the values themselves: one outlier of 1,000 moves none): the bulk
# Past this many times the bulk's span, the whole range would squeeze the bulk into a flat line: the view
# opens on the bulk, and says how many molecules lie beyond it.
OUTLIER_SPAN = 3.0
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
    whether y is on a log scale; ``home`` (x0, x1, y0, y1): the region the view opens on (y in log10 units
    on a log scale, :func:`home_region`); notes : what was left out and why."""

    query: ScatterQuery
    x: np.ndarray
    y: np.ndarray
    rows: np.ndarray
    ids: np.ndarray
    x_title: str
    y_title: str
    log: bool
    n_molecules: int
    home: tuple[float, float, float, float] = (0.0, 1.0, 0.0, 1.0)
    notes: tuple[str, ...] = ()

    @property
    def plotted_y(self) -> np.ndarray:
        """(m,) y as plotted: log10 of the property on a log scale, else the property."""
        return np.log10(self.y) if self.log else self.y

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
    refusal = log_refusal(y[keep], q.prop) if q.scale == "log" else None
    if refusal:
        notes.append(f"{refusal}; shown on a linear scale")
    log = q.scale == "log" and refusal is None
    rows = np.flatnonzero(keep)
    unit = view.property_units.get(q.prop)
    home, n_beyond = home_region(x[rows], np.log10(y[rows]) if log else y[rows])
    if n_beyond:
        top = format_number(float(np.max(y[rows])), ".4g")
        notes.append(f"{format_count(n_beyond)} molecules lie beyond the {q.prop} range shown (up to {top}): "
                     "zoom out to see them")  # fmt: skip
    points = ScatterPoints(
        q, x[rows], y[rows], rows, np.asarray(view.ids)[rows].astype(str),
        f"axis {q.axis} {COORDINATE_NAMES[q.coord]}", f"{q.prop} ({unit})" if unit else q.prop, log,
        len(view), home, tuple(notes),
    )  # fmt: skip
    map_cache().put("scatter_points", key, (view, points), size=points.cache_nbytes())
    return points


def log_refusal(values: np.ndarray, prop: str) -> str | None:
    """Why ``values`` (the property ``prop`` of the plotted molecules) cannot go on a log scale, or None."""
    n_bad = int((np.asarray(values) <= 0).sum())
    return f"a log scale is not possible: {format_count(n_bad)} molecules have {prop} ≤ 0" if n_bad else None


def suited_scale(values: np.ndarray) -> str:
    """ "log" for a positive property whose bulk (:data:`BULK`) spans :data:`LOG_DECADES` decades or more,
    else "linear": the scale the view opens on when none is asked for."""
    finite = np.asarray(values, np.float64)
    finite = finite[np.isfinite(finite)]
    if not finite.size or (finite <= 0).any():
        return "linear"
    lo, hi = np.percentile(finite, BULK, method="nearest")
    return "log" if np.log10(hi / lo) >= LOG_DECADES else "linear"


def resolve_scale(data_dir: Path, dataset: str, prop: str, asked: str | None) -> tuple[str, str | None]:
    """(the scale the view draws property ``prop`` on, why it is not the one ``asked`` or None): ``asked``
    ("linear", "log") when it can be drawn, :func:`suited_scale` when None, "linear" for a log scale that
    cannot be (a value ≤ 0, :func:`log_refusal`). InvalidInput for an unknown property or scale."""
    if asked not in (None, *SCALES):
        raise InvalidInput(f"unknown scale {asked!r}; expected one of {SCALES}", ("query", "scale"))
    view = get_view(data_dir, dataset)
    if prop not in view.property_names:
        raise InvalidInput(f"unknown property {prop!r}; expected one of {view.property_names}", ("query", "prop"))
    values = np.asarray(view.property_values[:, view.property_names.index(prop)], np.float64)
    values = values[np.isfinite(values)]
    if asked is None:
        return suited_scale(values), None
    refusal = log_refusal(values, prop) if asked == "log" else None
    return ("linear", f"{refusal}: shown on a linear scale") if refusal else (asked, None)


def home_region(x: np.ndarray, y: np.ndarray) -> tuple[tuple[float, float, float, float], int]:
    """((x0, x1, y0, y1), molecules beyond it): the region the view opens on, of plotted coordinates x, y (m,)
    (y in log10 units on a log scale). x spans every point; y the bulk (:data:`BULK`) when the whole range is
    more than :data:`OUTLIER_SPAN` times wider, else every point; each padded by 2 %."""
    x0, x1 = _span(x)
    y0, y1 = _span(y)
    if y.size:
        lo, hi = (float(v) for v in np.percentile(y, BULK, method="nearest"))
        if hi > lo and (y1 - y0) > OUTLIER_SPAN * (hi - lo):
            y0, y1 = _span(np.array([lo, hi]))
            return (x0, x1, y0, y1), int(((y < y0) | (y > y1)).sum())
    return (x0, x1, y0, y1), 0


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
    the view's home region) at ``size`` (width, height) pixels, cached per view and colouring.

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
    y = points.plotted_y
    x_range, y_range = (points.home[:2], points.home[2:]) if region is None else (region[:2], region[2:])
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
NOTHING_NEAR = ("id", "x", "y", "distance_px", "formula", "color", "value", "shared")


@dataclass(frozen=True)
class ScatterPick:
    """Where a hover or click on a scatter view is, and how the view is drawn there.

    x, y : the cursor (y in log10 units on a log scale, as plotly.js's log axis measures it); dx, dy : a pixel's
    width and height in those units; shown : the region shown and its pixels, whose pixel the picked molecule
    shares with others (None: no sharing is counted); color, grouping : the view's Colour-by.
    """

    x: float
    y: float
    dx: float
    dy: float
    shown: Viewport | None = None
    color: str = "axis"
    grouping: str = "formula"

    def checked(self) -> ScatterPick:
        """This pick, or InvalidInput naming the value that is wrong."""
        for name in ("x", "y", "dx", "dy"):
            value = getattr(self, name)
            if not np.isfinite(value) or (name.startswith("d") and value <= 0):
                raise InvalidInput(f"{name} must be a finite number{' above 0' if name[0] == 'd' else ''}, got {value}",
                                   ("query", name))  # fmt: skip
        r = self.shown
        if r is not None and not (
            np.all(np.isfinite([r.x0, r.x1, r.y0, r.y1, *r.pixel_size])) and min(r.pixel_size) > 0
        ):
            raise InvalidInput(f"shown region {r} must be finite with x0 < x1 and y0 < y1", ("query", "x0"))
        return self


def pick(points: ScatterPoints, at: ScatterPick) -> np.ndarray:
    """(k,) int64 indices of the plotted molecules a hover or click ``at`` picks: the one nearest within 5
    pixels first (ties: the molecule first in the dataset), then the others in its pixel of ``at.shown`` (only
    the picked one without it), by the map's rule (:func:`orientscope.services.map_pick.sharing_pixel`); empty
    when none is that near."""
    at = at.checked()
    py = points.plotted_y
    axes = np.ones(points.rows.size, np.int8)  # one point per molecule: the tie rule is the row order
    hit = nearest_point(points.x, py, points.rows, axes, (at.x, at.y), (at.dx, at.dy), CLICK_RADIUS_PX)
    if hit is None:
        return np.zeros(0, np.int64)
    i = hit[0]
    box = None if at.shown is None else pixel_neighbourhood(at.shown, float(points.x[i]), float(py[i]))
    if box is None:
        return np.array([i], np.int64)
    x0, x1, y0, y1 = box
    near = np.flatnonzero((points.x >= x0) & (points.x <= x1))  # y compared on those only (~20 ms at 10M)
    near = near[(py[near] >= y0) & (py[near] <= y1)]
    return sharing_pixel(at.shown, points.x, py, points.rows, i, near)


def nearest_molecule(data_dir: Path, query: ScatterQuery, at: ScatterPick) -> dict:
    """The molecule a click ``at`` a scatter view opens (:func:`pick`), and what a hover there says of it.

    Answer: {"id", "x", "y", "distance_px", "formula", "color" (the title of the view's Colour-by), "value"
    (what that colour shows for the molecule), "shared"}; ``shared``: the molecules in that point's pixel of
    ``at.shown``, itself included, or None without it. Every field is None when no point is that near.
    """
    points = scatter_points(data_dir, query)
    picked = pick(points, at)
    if not picked.size:
        return dict.fromkeys(NOTHING_NEAR)
    colors, _ = scatter_colors(data_dir, points, at.color, at.grouping)
    i = int(picked[0])
    py = points.plotted_y
    view = get_view(data_dir, query.dataset)
    return {
        "id": str(points.ids[i]),
        "x": float(points.x[i]),
        "y": float(points.y[i]),
        "distance_px": float(np.hypot((points.x[i] - at.x) / at.dx, (py[i] - at.y) / at.dy)),
        "formula": str(view.value_at(formulas(view), int(points.rows[i]))),
        "color": "axis" if colors is None else colors.title,
        "value": _value(points, colors, i),
        "shared": None if at.shown is None else int(picked.size),
    }


def _value(points: ScatterPoints, colors: MapColors | None, i: int) -> str | float | None:
    """What the view's colour shows for plotted molecule ``i`` (its axis's name when coloured by axis)."""
    return AXIS_NAMES[points.query.axis] if colors is None else color_value(colors, i)


def hover_preview(data_dir: Path, query: ScatterQuery, at: ScatterPick) -> dict:
    """What a hover ``at`` a scatter view shows, in one answer: :func:`nearest_molecule`'s fields, the preview
    card ("caption" {"id", "formula", "axis", "value", "value_text", "color"}, and "depiction", the molecule's
    SVG text), and "text", the hover's words; "caption", "depiction" and "text" None when no point is near.
    The map's hover answer (:func:`orientscope.services.map_pick.hover_preview`), for this view."""
    hit = nearest_molecule(data_dir, query, at)
    if hit["id"] is None:
        return {**hit, "caption": None, "depiction": None, "text": None}
    shown_value = value_text(hit["value"])
    caption = {"id": hit["id"], "formula": hit["formula"], "axis": query.axis, "value": hit["value"],
               "value_text": shown_value, "color": hit["color"]}  # fmt: skip
    words = [f"molecule {hit['id']}", hit["formula"], f"{hit['color']}: {shown_value}"]
    if hit["shared"] and hit["shared"] > 1:
        words.append(f"{format_count(hit['shared'])} molecules share this pixel (click to choose)")
    depiction = depiction_svg(data_dir, query.dataset, hit["id"])
    return {**hit, "caption": caption, "depiction": depiction, "text": " · ".join(w for w in words if w)}


def shared_molecules(data_dir: Path, query: ScatterQuery, at: ScatterPick, offset: int = 0, limit: int = 10) -> dict:
    """A page of the molecules sharing the pixel a click ``at`` picks (:func:`pick`), the picked one first:
    {"total", "offset", "limit", "color", "molecules": [{"id", "formula", "value", "value_text"}]}, as the
    map's chooser lists them (:func:`orientscope.services.map_pick.shared_molecules`). ``at.shown`` is needed:
    the pixel is of the region shown."""
    if at.shown is None:
        raise InvalidInput(
            "give the region shown (x0, x1, y0, y1, width, height): its pixels are shared", ("query", "x0")
        )
    if offset < 0:
        raise InvalidInput(f"offset must be >= 0, got {offset}", ("query", "offset"))
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(f"limit must be 1 to {MAX_PAGE}, got {limit}", ("query", "limit"))
    points = scatter_points(data_dir, query)
    picked = pick(points, at)
    colors, _ = scatter_colors(data_dir, points, at.color, at.grouping)
    view = get_view(data_dir, query.dataset)
    formula = formulas(view)
    molecules = []
    for i in picked[offset : offset + limit].tolist():
        value = _value(points, colors, i)
        molecules.append({"id": str(points.ids[i]), "formula": str(view.value_at(formula, int(points.rows[i]))),
                          "value": value, "value_text": value_text(value)})  # fmt: skip
    return {"total": int(picked.size), "offset": offset, "limit": limit,
            "color": "axis" if colors is None else colors.title, "molecules": molecules}  # fmt: skip
