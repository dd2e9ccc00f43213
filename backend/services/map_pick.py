"""What a hover or a click on the flat map picks: one rule for both, so that the molecule a hover names
is the one a click opens, and one pixel grid for every count a hover shows.

The rule is :func:`orientscope.services.map_raster.nearest_point`'s: the shown point nearest to the cursor
within 5 pixels of the viewport's pixel grid, the first in the view's order on a tie. The shown points in
the same pixel of that grid as the picked point are its pixel's members (:func:`pick`); the molecules among
them share the pixel: a hover says how many, and a click lets the user choose among them
(:func:`shared_molecules`, paged), the picked one first. A hover's counts, dominant category, mean and
density (:func:`pixel_summary`) are read from the same members, so "28 molecules share this pixel" and
"30 points" are two counts of one pixel. The browser sends the grid it shows: the image's own grid
(``image_viewport``) over an aggregated image, the plot's pixels over real points.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from orientscope.core.numbers import format_count, format_number
from orientscope.science.map_scales import ELLIPSE_AREA
from orientscope.services.cache import get_view
from orientscope.services.depiction import depiction_svg
from orientscope.services.errors import InvalidInput
from orientscope.services.grouping import formulas
from orientscope.services.map_data import AXES
from orientscope.services.map_raster import KINDS, Viewport, nearest_point, points_in_box
from orientscope.services.map_view import MapColors, MapPoints, MapQuery, view_points

MAX_PAGE = 100


@dataclass(frozen=True)
class Pick:
    """What a hover or a click at one spot picks.

    molecules : (k,) int64 point indices, one per molecule sharing the picked point's pixel, the picked point
    first, then the others' first points in the view's order; empty when no point is within 5 px.
    members : (m,) int64 ascending indices of every shown point in that pixel (m >= k; a molecule may have
    two axes there).
    """

    molecules: np.ndarray
    members: np.ndarray

    @property
    def index(self) -> int | None:
        """The picked point, or None."""
        return int(self.molecules[0]) if self.molecules.size else None


NOTHING = Pick(np.zeros(0, np.int64), np.zeros(0, np.int64))


def pick(points: MapPoints, vp: Viewport, x: float, y: float) -> Pick:
    """The shown point nearest to map point (x, y) within 5 px of ``vp``'s pixels, and its pixel's points."""
    vp = vp.checked()
    i = nearest_point(points, x, y, vp.pixel_size)
    if i is None:
        return NOTHING
    box = pixel_neighbourhood(vp, float(points.x[i]), float(points.y[i]))
    near = np.zeros(0, np.int64) if box is None else points_in_box(points, *box)
    members = pixel_members(vp, points.x, points.y, i, near)
    return Pick(one_per_molecule(points.rows, i, members), members)


def pixel_neighbourhood(vp: Viewport, x: float, y: float) -> tuple[float, float, float, float] | None:
    """(x0, x1, y0, y1) of the 3 × 3 pixels of ``vp`` around the pixel holding (x, y), which hold every
    point of that pixel with room for rounding; None when (x, y) is outside ``vp``."""
    cell = vp.pixel_of(x, y)
    if cell is None:
        return None
    (col, row), (dx, dy) = cell, vp.pixel_size
    return vp.x0 + (col - 1) * dx, vp.x0 + (col + 2) * dx, vp.y0 + (row - 1) * dy, vp.y0 + (row + 2) * dy


def pixel_members(vp: Viewport, xs: np.ndarray, ys: np.ndarray, i: int, near: np.ndarray) -> np.ndarray:
    """(m,) int64 ascending indices of the points in the pixel of ``vp`` holding point ``i``, ``i`` among them.

    xs, ys : (n,) the points' positions; near : indices of the points that can share the pixel (those in
    :func:`pixel_neighbourhood`). Only ``i`` when it is outside ``vp``.
    """
    cell = vp.pixel_of(float(xs[i]), float(ys[i]))
    near = np.sort(np.asarray(near, np.int64))
    if cell is None or not near.size:
        return np.array([i], np.int64)
    return np.union1d(near[_in_pixel(vp, cell, xs[near], ys[near])], [i]).astype(np.int64)


def one_per_molecule(rows: np.ndarray, i: int, members: np.ndarray) -> np.ndarray:
    """(k,) int64: point ``i`` first, then each other molecule's first point (lowest index) among ``members``
    (ascending point indices; rows : (n,) the points' molecule rows)."""
    members = np.asarray(members, np.int64)
    _, first = np.unique(rows[members], return_index=True)  # each molecule's first point
    others = members[np.sort(first)]
    return np.concatenate([[i], others[rows[others] != rows[i]]]).astype(np.int64)


def sharing_pixel(
    vp: Viewport, xs: np.ndarray, ys: np.ndarray, rows: np.ndarray, i: int, near: np.ndarray
) -> np.ndarray:
    """(k,) int64 point indices of the molecules with a point in the pixel of ``vp`` holding picked point ``i``:
    ``i`` first, then each other molecule's first point (lowest index) among the candidates ``near``
    (:func:`pixel_members`, :func:`one_per_molecule`)."""
    return one_per_molecule(rows, i, pixel_members(vp, xs, ys, i, near))


def _in_pixel(vp: Viewport, cell: tuple[int, int], xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """(k,) bool: whether each point is in pixel ``cell`` of ``vp``, as :meth:`Viewport.pixel_of` places one
    (in float64, truncating; the last column and row hold the far edge), for all points at once: a shared
    pixel of a 10M-molecule map has thousands of candidates."""
    xs, ys = np.asarray(xs, np.float64), np.asarray(ys, np.float64)
    dx, dy = vp.pixel_size
    inside = (xs >= vp.x0) & (xs <= vp.x1) & (ys >= vp.y0) & (ys <= vp.y1)
    with np.errstate(invalid="ignore"):
        col = np.minimum(((xs - vp.x0) / dx).astype(np.int64), vp.width - 1)
        row = np.minimum(((ys - vp.y0) / dy).astype(np.int64), vp.height - 1)
    return inside & (col == cell[0]) & (row == cell[1])


def pixel_summary(points: MapPoints, vp: Viewport, members: np.ndarray, kind: str = "color") -> dict:
    """What the picked pixel holds, from its ``members`` (:func:`pick`): {"count" (points), "molecules",
    "dominant" (the most frequent category, the first on a tie, as the image's shading takes it) or "mean"
    (of the values, None without any), "matches" (SMARTS, with a pattern), "ratio" (kind "density": points
    over what a uniform sphere puts in a pixel of ``vp``, :func:`orientscope.science.map_scales.density_ratio`'s
    rule)}."""
    if kind not in KINDS:
        raise InvalidInput(f"unknown map kind {kind!r}; expected one of {KINDS}", ("query", "kind"))
    members = np.asarray(members, np.int64)
    info: dict = {"count": int(members.size), "molecules": int(np.unique(points.rows[members]).size)}
    c = points.colors
    if c.kind == "categorical":
        codes = np.bincount(c.codes[members].astype(np.int64), minlength=len(c.labels))
        info["dominant"] = c.labels[int(np.argmax(codes))] if members.size else None
    else:
        values = c.values[members]
        values = values[np.isfinite(values)]
        info["mean"] = float(values.mean()) if values.size else None
    if points.highlight is not None:
        info["matches"] = int(points.highlight[members].sum())
    if kind == "density":
        dx, dy = vp.pixel_size
        expected = max(points.size, 1) * dx * dy / ELLIPSE_AREA
        info["ratio"] = members.size / expected
    return info


def nearest_molecule(data_dir: Path, query: MapQuery, viewport: Viewport, x: float, y: float) -> dict:
    """The molecule a click at map point (x, y) opens: {"id", "axis", "x", "y", "distance_px", "shared"}
    (molecules in that point's pixel, itself included), or all None when no shown point is within 5 px."""
    pts = view_points(data_dir, query)
    return _nearest(pts, viewport, x, y, pick(pts, viewport, x, y))


def _nearest(pts: MapPoints, viewport: Viewport, x: float, y: float, picked: Pick) -> dict:
    if picked.index is None:
        return {"id": None, "axis": None, "x": None, "y": None, "distance_px": None, "shared": None}
    i = picked.index
    sx, sy = viewport.pixel_size
    px, py = float(pts.x[i]), float(pts.y[i])
    return {
        "id": str(pts.md.ids[pts.rows[i]]),
        "axis": int(pts.axis[i]),
        "x": px,
        "y": py,
        "distance_px": float(np.hypot((px - x) / sx, (py - y) / sy)),
        "shared": int(picked.molecules.size),
    }


def hover_preview(data_dir: Path, query: MapQuery, viewport: Viewport, x: float, y: float, kind: str = "color") -> dict:
    """What a hover at map point (x, y) shows, in one answer: :func:`nearest_molecule`'s fields, the preview
    card of the picked point ("caption", :func:`point_caption`, and "depiction", its molecule's SVG text,
    :func:`orientscope.services.depiction.depiction_svg`), "pixel" (:func:`pixel_summary` of its pixel, the
    same grid as "shared") and "text", the hover's words (:func:`hover_text`); all None when no point is near.

    One round trip after the hover's rest, where the molecule's name, then its card, then the pixel took three."""
    pts = view_points(data_dir, query)
    picked = pick(pts, viewport, x, y)
    hit = _nearest(pts, viewport, x, y, picked)
    if picked.index is None:
        return {**hit, "caption": None, "depiction": None, "pixel": None, "text": None}
    pixel = pixel_summary(pts, viewport.checked(), picked.members, kind)
    caption = point_caption(data_dir, query, pts, picked.index)
    depiction = depiction_svg(data_dir, query.dataset, hit["id"])
    return {**hit, "caption": caption, "depiction": depiction, "pixel": pixel, "text": hover_text(hit, pixel)}


def hover_text(hit: dict, pixel: dict) -> str:
    """The words a hover shows beside the cursor, e.g. "molecule 17 · axis 1 · 28 molecules share this pixel
    (click to choose) · 30 points here · mostly axis 1": the picked point, then its pixel (:func:`pixel_summary`)."""
    words = [f"molecule {hit['id']}", f"axis {hit['axis']}"]
    if pixel["molecules"] > 1:
        words.append(f"{format_count(pixel['molecules'])} molecules share this pixel (click to choose)")
    if pixel["count"] > 1:
        words.append(f"{format_count(pixel['count'])} points here")
        if pixel.get("dominant"):
            words.append(f"mostly {pixel['dominant']}")
    if pixel.get("mean") is not None and pixel["count"] > 1:
        words.append(f"mean {format_number(pixel['mean'], '.4g')}")
    if pixel.get("ratio") is not None:
        words.append(f"{format_number(pixel['ratio'], '.2f')}× uniform")
    if pixel.get("matches"):
        words.append(f"{format_count(pixel['matches'])} SMARTS {'match' if pixel['matches'] == 1 else 'matches'}")
    return " · ".join(words)


def shared_molecules(
    data_dir: Path, query: MapQuery, viewport: Viewport, x: float, y: float, offset: int = 0, limit: int = 10
) -> dict:
    """A page of the molecules sharing the pixel a click at (x, y) picks, the picked one first:
    {"total", "offset", "limit", "color" (the colouring's title), "molecules": [{"id", "formula", "value"}]},
    ``value`` the colour the map shows for the molecule there (a category's label or a number)."""
    if offset < 0:
        raise InvalidInput(f"offset must be >= 0, got {offset}", ("query", "offset"))
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(f"limit must be 1 to {MAX_PAGE}, got {limit}", ("query", "limit"))
    pts = view_points(data_dir, query)
    picked = pick(pts, viewport, x, y).molecules
    molecules = molecule_records(data_dir, query, pts, picked[offset : offset + limit])
    return {"total": int(picked.size), "offset": offset, "limit": limit, "color": pts.colors.title,
            "molecules": molecules}  # fmt: skip


def molecule_records(data_dir: Path, query: MapQuery, points: MapPoints, idx: np.ndarray) -> list[dict]:
    """{"id", "formula", "value", "value_text"} of the molecule of each point ``idx``; ``value``: the colour the map shows
    at that point (a category's label, a number, or None for no value)."""
    formula = formulas(get_view(data_dir, query.dataset))
    return [_entry(points, formula, int(i)) for i in idx]


def _entry(pts: MapPoints, formula, i: int) -> dict:
    """{"id", "formula", "value", "value_text"} of shown point ``i``: ``value`` the colour the map shows for it
    there, ``value_text`` as a person reads it (:func:`value_text`)."""
    row, value = int(pts.rows[i]), color_value(pts.colors, i)
    return {"id": str(pts.md.ids[row]), "formula": str(formula[row]), "value": value, "value_text": value_text(value)}


def color_value(colors: MapColors, i: int) -> str | float | None:
    """What colours ``colors`` show for point ``i``: a category's label, a number, or None for no value."""
    if colors.kind == "categorical":
        return colors.labels[int(colors.codes[i])]
    v = float(colors.values[i])
    return v if np.isfinite(v) else None


def point_caption(data_dir: Path, query: MapQuery, points: MapPoints, i: int) -> dict:
    """What the hover preview writes under the depiction of shown point ``i``'s molecule: {"id", "formula",
    "axis" (the point's), "value" (what its colour shows at that point), "value_text" (the value as a person
    reads it), "color" (the colouring's title)}."""
    entry = _entry(points, formulas(get_view(data_dir, query.dataset)), int(i))
    return {**entry, "axis": int(points.axis[i]), "color": points.colors.title}


def value_text(value: str | float | None) -> str:
    """A colour's value as the card and the chooser write it: a category's label, 4 significant digits, or
    "no value"."""
    if value is None:
        return "no value"
    return value if isinstance(value, str) else format_number(value, ".4g")


def molecule_caption(data_dir: Path, query: MapQuery, mol_id: str, axis: int | None = None) -> dict:
    """What the hover preview writes under molecule ``mol_id``'s depiction in a view of the map: its shown point
    of ``axis`` (default its first shown point, as the chooser lists it), as :func:`point_caption`; "axis" and
    "value" None when the view does not show it. NotFoundError if the id is unknown; InvalidInput for an axis
    other than 1, 2, 3."""
    if axis is not None and axis not in AXES:
        raise InvalidInput(f"axis {axis!r}: expected 1, 2 or 3", ("query", "axis"))
    view = get_view(data_dir, query.dataset)
    i = view.row_of(mol_id)
    pts = view_points(data_dir, query)
    shown = shown_points_of(pts, pts.md.row_of(mol_id))
    if axis is not None:
        shown = shown[pts.axis[shown] == axis]
    if len(shown):
        return point_caption(data_dir, query, pts, int(shown[0]))
    record = {"id": str(view.cell("ids", i)), "formula": str(view.value_at(formulas(view), i)), "axis": None}
    return {**record, "value": None, "value_text": value_text(None), "color": pts.colors.title}


def shown_points_of(points: MapPoints, row: int) -> np.ndarray:
    """(k,) int64 ascending indices (into the view's points) of molecule ``row``'s shown points with a position.

    Each is looked up at its own coordinates in the view's spatially sorted geometry: a few binary searches,
    where comparing every point's row costs 16-30 ms on a 10M-molecule view's 30M points.
    """
    axes = np.array(AXES, np.int8)
    xs, ys = points.md.xy(np.full(axes.size, row, np.int32), axes)
    found = [points_in_box(points, x, x, y, y) for x, y in zip(xs.tolist(), ys.tolist(), strict=True)
             if np.isfinite(x) and np.isfinite(y)]  # fmt: skip
    near = np.unique(np.concatenate(found)) if found else np.zeros(0, np.int64)
    return near[points.rows[near] == row].astype(np.int64)
