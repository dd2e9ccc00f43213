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
from orientscope.services.errors import InvalidInput
from orientscope.services.grouping import formulas
from orientscope.services.map_raster import Viewport, nearest_point, points_in_box
from orientscope.services.map_view import MapPoints, MapQuery, view_points

MAX_PAGE = 100


def pick(points: MapPoints, vp: Viewport, x: float, y: float) -> np.ndarray:
    """(k,) int64 point indices, one per molecule sharing the picked point's pixel: the picked point first,
    then the others' first points in the view's order; empty if no point is within 5 px of (x, y)."""
    vp = vp.checked()
    i = nearest_point(points, x, y, vp.pixel_size)
    if i is None:
        return np.zeros(0, np.int64)
    cell = vp.pixel_of(float(points.x[i]), float(points.y[i]))
    if cell is None:  # within 5 px of the viewport but outside it: no pixel to share
        return np.array([i], np.int64)
    col, row = cell
    dx, dy = vp.pixel_size
    near = points_in_box(points, vp.x0 + (col - 1) * dx, vp.x0 + (col + 2) * dx,
                         vp.y0 + (row - 1) * dy, vp.y0 + (row + 2) * dy)  # fmt: skip
    near = np.sort(near)
    cells = [vp.pixel_of(float(points.x[j]), float(points.y[j])) for j in near]
    near = near[np.array([c == cell for c in cells], bool)] if len(near) else near
    rows = points.rows[near]
    _, first = np.unique(rows, return_index=True)  # each molecule's first point in the view's order
    others = near[np.sort(first)]
    return np.concatenate([[i], others[points.rows[others] != points.rows[i]]]).astype(np.int64)


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
    c = pts.colors
    if c.kind == "categorical":
        value = c.labels[int(c.codes[i])]
    else:
        v = float(c.values[i])
        value = v if np.isfinite(v) else None
    row = int(pts.rows[i])
    return {"id": str(pts.md.ids[row]), "formula": str(formula[row]), "value": value}


def molecule_caption(data_dir: Path, query: MapQuery, mol_id: str) -> dict:
    """What the hover preview writes under molecule ``mol_id``'s depiction in a view of the map:
    {"id", "formula", "value", "color"}, ``value`` what its colour shows (its first shown point's, as
    the chooser lists it; None when the view does not show it). NotFoundError if the id is unknown."""
    view = get_view(data_dir, query.dataset)
    i = view.row_of(mol_id)
    pts = view_points(data_dir, query)
    shown = np.flatnonzero(pts.rows == pts.md.row_of(mol_id))
    if len(shown):
        return {**_entry(pts, formulas(view), int(shown[0])), "color": pts.colors.title}
    record = {"id": str(view.cell("ids", i)), "formula": str(view.value_at(formulas(view), i)), "value": None}
    return {**record, "color": pts.colors.title}
