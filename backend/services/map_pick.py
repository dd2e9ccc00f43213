"""What a hover or a click on the flat map picks: one rule for both, so that the molecule a hover names
is the one a click opens.

The rule is :func:`orientscope.services.map_raster.nearest_point`'s: the shown point nearest to the cursor
within 5 pixels of the viewport's pixel grid, the first in the view's order on a tie. The molecules
with a shown point in the same pixel as that point share it: a hover says how many, and a click lets
the user choose among them (:func:`shared_molecules`, paged), the picked one first.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from orientscope.services.cache import get_view
from orientscope.services.depiction import depiction_svg
from orientscope.services.errors import InvalidInput
from orientscope.services.grouping import formulas
from orientscope.services.map_data import AXES
from orientscope.services.map_raster import Viewport, nearest_point, points_in_box
from orientscope.services.map_view import MapColors, MapPoints, MapQuery, view_points

MAX_PAGE = 100


def pick(points: MapPoints, vp: Viewport, x: float, y: float) -> np.ndarray:
    """(k,) int64 point indices, one per molecule sharing the picked point's pixel: the picked point first,
    then the others' first points in the view's order; empty if no point is within 5 px of (x, y)."""
    vp = vp.checked()
    i = nearest_point(points, x, y, vp.pixel_size)
    if i is None:
        return np.zeros(0, np.int64)
    box = pixel_neighbourhood(vp, float(points.x[i]), float(points.y[i]))
    near = np.zeros(0, np.int64) if box is None else points_in_box(points, *box)
    return sharing_pixel(vp, points.x, points.y, points.rows, i, near)


def pixel_neighbourhood(vp: Viewport, x: float, y: float) -> tuple[float, float, float, float] | None:
    """(x0, x1, y0, y1) of the 3 × 3 pixels of ``vp`` around the pixel holding (x, y), which hold every
    point of that pixel with room for rounding; None when (x, y) is outside ``vp``."""
    cell = vp.pixel_of(x, y)
    if cell is None:
        return None
    (col, row), (dx, dy) = cell, vp.pixel_size
    return vp.x0 + (col - 1) * dx, vp.x0 + (col + 2) * dx, vp.y0 + (row - 1) * dy, vp.y0 + (row + 2) * dy


def sharing_pixel(
    vp: Viewport, xs: np.ndarray, ys: np.ndarray, rows: np.ndarray, i: int, near: np.ndarray
) -> np.ndarray:
    """(k,) int64 point indices of the molecules with a point in the pixel of ``vp`` holding picked point ``i``:
    ``i`` first, then each other molecule's first point (lowest index) among the candidates ``near``.

    xs, ys, rows : (m,) the points' positions and molecule rows; near : indices of the points that can
    share the pixel (those in :func:`pixel_neighbourhood`). Only ``i`` when it is outside ``vp``.
    """
    cell = vp.pixel_of(float(xs[i]), float(ys[i]))
    near = np.sort(np.asarray(near, np.int64))
    if cell is None or not near.size:
        return np.array([i], np.int64)
    near = near[_in_pixel(vp, cell, xs[near], ys[near])]
    _, first = np.unique(rows[near], return_index=True)  # each molecule's first point
    others = near[np.sort(first)]
    return np.concatenate([[i], others[rows[others] != rows[i]]]).astype(np.int64)


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


def nearest_molecule(data_dir: Path, query: MapQuery, viewport: Viewport, x: float, y: float) -> dict:
    """The molecule a click at map point (x, y) opens: {"id", "axis", "x", "y", "distance_px", "shared"}
    (molecules in that point's pixel, itself included), or all None when no shown point is within 5 px."""
    pts = view_points(data_dir, query)
    picked = pick(pts, viewport, x, y)
    if not picked.size:
        return {"id": None, "axis": None, "x": None, "y": None, "distance_px": None, "shared": None}
    i = int(picked[0])
    sx, sy = viewport.pixel_size
    px, py = float(pts.x[i]), float(pts.y[i])
    return {
        "id": str(pts.md.ids[pts.rows[i]]),
        "axis": int(pts.axis[i]),
        "x": px,
        "y": py,
        "distance_px": float(np.hypot((px - x) / sx, (py - y) / sy)),
        "shared": int(picked.size),
    }


def hover_preview(data_dir: Path, query: MapQuery, viewport: Viewport, x: float, y: float) -> dict:
    """What a hover at map point (x, y) shows, in one answer: :func:`nearest_molecule`'s fields, with the
    preview card of its molecule: "caption" (:func:`molecule_caption`) and "depiction" (its SVG text,
    :func:`orientscope.services.depiction.depiction_svg`); both None when no point is near.

    One round trip after the hover's rest, where the molecule's name, then its card, took two."""
    hit = nearest_molecule(data_dir, query, viewport, x, y)
    if hit["id"] is None:
        return {**hit, "caption": None, "depiction": None}
    caption = molecule_caption(data_dir, query, hit["id"])
    return {**hit, "caption": caption, "depiction": depiction_svg(data_dir, query.dataset, hit["id"])}


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
    picked = pick(pts, viewport, x, y)
    molecules = molecule_records(data_dir, query, pts, picked[offset : offset + limit])
    return {"total": int(picked.size), "offset": offset, "limit": limit, "color": pts.colors.title,
            "molecules": molecules}  # fmt: skip


def molecule_records(data_dir: Path, query: MapQuery, points: MapPoints, idx: np.ndarray) -> list[dict]:
    """{"id", "formula", "value"} of the molecule of each point ``idx``; ``value``: the colour the map shows
    at that point (a category's label, a number, or None for no value)."""
    formula = formulas(get_view(data_dir, query.dataset))
    return [_entry(points, formula, int(i)) for i in idx]


def _entry(pts: MapPoints, formula, i: int) -> dict:
    """{"id", "formula", "value"} of shown point ``i``: ``value`` the colour the map shows for it there."""
    row = int(pts.rows[i])
    return {"id": str(pts.md.ids[row]), "formula": str(formula[row]), "value": color_value(pts.colors, i)}


def color_value(colors: MapColors, i: int) -> str | float | None:
    """What colours ``colors`` show for point ``i``: a category's label, a number, or None for no value."""
    if colors.kind == "categorical":
        return colors.labels[int(colors.codes[i])]
    v = float(colors.values[i])
    return v if np.isfinite(v) else None


def molecule_caption(data_dir: Path, query: MapQuery, mol_id: str) -> dict:
    """What the hover preview writes under molecule ``mol_id``'s depiction in a view of the map:
    {"id", "formula", "value", "color"}, ``value`` what its colour shows (its first shown point's, as
    the chooser lists it; None when the view does not show it). NotFoundError if the id is unknown."""
    view = get_view(data_dir, query.dataset)
    i = view.row_of(mol_id)
    pts = view_points(data_dir, query)
    shown = shown_points_of(pts, pts.md.row_of(mol_id))
    if len(shown):
        return {**_entry(pts, formulas(view), int(shown[0])), "color": pts.colors.title}
    record = {"id": str(view.cell("ids", i)), "formula": str(view.value_at(formulas(view), i)), "value": None}
    return {**record, "color": pts.colors.title}


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
