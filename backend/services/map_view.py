"""From a map view (axes, colour-by, group filter, SMARTS) to the points it shows and their colours.

The map, its server-side image (:mod:`orientscope.services.map_raster`) and the
nearest-point lookup all resolve a view through :func:`view_points`, so a
pixel, a click and a drawn point always refer to the same set of points.
Resolved views are kept in the process's byte-bounded map cache
(:func:`orientscope.services.bytecache.map_cache`). A view's points, sorted by x within bands of y, are shared by all
its colourings (at 30M points they hold about 390 MB; a colouring adds 30-120 MB).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from orientscope.core.errors import NotFoundError
from orientscope.core.groups import UNGROUPED
from orientscope.core.palette import AXIS_COLORS, GROUP_COLORS, UNGROUPED_GREY
from orientscope.science.map_scales import robust_range
from orientscope.services import grouping
from orientscope.services.bytecache import map_cache, release_freed_memory
from orientscope.services.cache import get_view
from orientscope.services.errors import InvalidInput
from orientscope.services.map_data import (
    AXES,
    TABLES,
    MapData,
    SortedPoints,
    banded_order,
    load_map_data,
    sorted_points,
)
from orientscope.services.model_audits import prediction_shift
from orientscope.services.molecules import match_smarts

AXIS_NAMES = {1: "axis 1 (largest spread)", 2: "axis 2", 3: "axis 3 (smallest spread)"}
N_GROUP_COLORS = len(GROUP_COLORS)
COLOR_KINDS = ("axis", "group", "score", "prop:<name>", "shift:<audit_id>:<property>")


@dataclass(frozen=True)
class MapQuery:
    """What a map view shows; every field is validated by :meth:`checked`.

    axes : digits of the shown axes ("123", "1", "13", ...); color : axis | group | score | prop:<name> |
    shift:<audit_id>:<property> (a model audit's prediction shift; molecules outside the audit have none);
    grouping : scaffold | formula | cluster (for colour by group and the group filter);
    group : keep only this group's molecules (its code or label); smarts : highlight the molecules matching it.
    """

    dataset: str
    table: str = "original"
    axes: str = "123"
    color: str = "axis"
    grouping: str = "formula"
    group: str | None = None
    smarts: str | None = None

    def checked(self) -> MapQuery:
        """This query, or InvalidInput naming the field that is wrong and what it accepts."""
        if self.table not in TABLES:
            raise InvalidInput(f"unknown table {self.table!r}; expected one of {TABLES}", ("query", "table"))
        if not self.axes or any(c not in "123" for c in self.axes):
            raise InvalidInput(f"axes {self.axes!r}: expected digits from 1, 2, 3, e.g. '123'", ("query", "axes"))
        shift = self.color.startswith("shift:") and all(self.color[6:].partition(":")[::2])
        if (
            self.color not in ("axis", "group", "score")
            and not (self.color.startswith("prop:") and self.color[5:])
            and not shift
        ):
            raise InvalidInput(f"unknown colour {self.color!r}; expected one of {COLOR_KINDS}", ("query", "color"))
        grouping.check_group_kind(self.grouping, "grouping")
        return self

    @property
    def shown_axes(self) -> tuple[int, ...]:
        return tuple(sorted({int(c) for c in self.axes}))


@dataclass(frozen=True)
class MapColors:
    """Colour of each point of a view.

    kind : "categorical" (``codes`` index ``labels``/``colors``) or "continuous" (``values``, NaN = no value,
    shown between ``lo`` and ``hi``: the 1st and 99th percentile of the view's values).
    """

    kind: str
    title: str
    codes: np.ndarray | None = None  # (m,) uint8
    labels: tuple[str, ...] = ()
    colors: tuple[str, ...] = ()
    values: np.ndarray | None = None  # (m,) float32
    lo: float = 0.0
    hi: float = 1.0

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.codes, self.values) if a is not None)


@dataclass(frozen=True, eq=False)
class MapPoints:
    """The points one view shows.

    x, y : (m,) float32 Mollweide coordinates; rows : (m,) int32 molecule row (into ``md.ids``);
    axis : (m,) int8 axis 1..3; highlight : (m,) bool SMARTS match, or None without a pattern.
    n_molecules : molecules that pass the group filter; n_matches : of them, matching the SMARTS.
    x_sorted : the arrays are sorted by x within bands of y (:func:`orientscope.services.map_data.banded_order`,
    as :func:`view_points` stores a view); the draw order is
    the map data's seeded key order either way (:meth:`in_draw_order`).
    """

    query: MapQuery
    md: MapData
    x: np.ndarray
    y: np.ndarray
    rows: np.ndarray
    axis: np.ndarray
    colors: MapColors
    highlight: np.ndarray | None
    n_molecules: int
    n_matches: int | None
    notes: tuple[str, ...] = ()
    x_sorted: bool = False
    geometry: Any = None  # the banded points shared with the view's other colourings (cached on their own)
    _memo: dict = field(default_factory=dict, repr=False)
    _memo_lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def memo(self, name: str, build: Callable[[], Any]) -> Any:
        """``build()`` once per resolved view (derived arrays such as the aggregation frame)."""
        with self._memo_lock:
            if name not in self._memo:
                self._memo[name] = build()
            return self._memo[name]

    @property
    def size(self) -> int:
        return int(self.x.size)

    def cache_nbytes(self) -> int:
        """Bytes of this view's own arrays and derived frames (the shared map data is cached on its own)."""
        extra = self.highlight.nbytes if self.highlight is not None else 0
        if self.geometry is not None:  # its arrays are cached on their own; the frame adds category codes
            return self.colors.nbytes + extra + self.size
        own = self.x.nbytes + self.y.nbytes + self.rows.nbytes + self.axis.nbytes + self.colors.nbytes + extra
        if self.x_sorted:  # the aggregation frame reads these arrays in place
            return own
        return 2 * own  # the aggregation frame (sorted copies) built from them on first use

    @cached_property
    def bounds(self) -> tuple[float, float, float, float]:
        """(x0, x1, y0, y1) of every shown point; a region holding these holds them all."""
        if self.geometry is not None and self.geometry.bounds is not None:  # stored: no pass over the points
            return self.geometry.bounds
        if not self.size:
            return (0.0, 0.0, 0.0, 0.0)
        return (float(self.x.min()), float(self.x.max()), float(self.y.min()), float(self.y.max()))

    def in_draw_order(self, idx: np.ndarray) -> np.ndarray:
        """The point indices ``idx`` reordered as the seeded draw order draws them."""
        idx = np.asarray(idx, np.int64)
        return idx[self.md.in_draw_order(self.rows[idx], self.axis[idx])]

    def ids(self, idx: np.ndarray) -> np.ndarray:
        """Molecule ids of the points ``idx``."""
        return self.md.ids[self.rows[idx]]


def group_colors(data_dir: Path, dataset_id: str, by: str):
    """(colour code per molecule, labels, colours) of the groups, or None; once per stored result.

    The colours cycle down the groups by size: the :data:`N_GROUP_COLORS` largest groups are told
    apart, and every smaller group shares the colour of one of them, so that a set of many small
    groups (QM9's formulas) is not drawn almost all in one grey. Each colour's label names its
    largest group and how many smaller ones share it. Molecules in no group (e.g. unclustered) get
    their own muted class, never a group colour. Labels are what a person reads (formula, scaffold
    SMILES, representative's SMILES), never the groups' codes. The map image, the dashboard's
    points and the legend all read this one table.
    """
    view = get_view(data_dir, dataset_id)

    def build():
        codes = grouping.group_ids(view).get(by)
        if codes is None:
            return None
        label_of = grouping.group_label_map(view, by)
        outside = np.array([c is None for c in codes], bool)
        names, inverse, counts = np.unique(
            np.where(outside, "", codes.astype(str)), return_inverse=True, return_counts=True
        )
        grouped = np.flatnonzero(names != "") if outside.any() else np.arange(len(names))
        by_size = grouped[np.argsort(-counts[grouped], kind="stable")]
        k = min(N_GROUP_COLORS, len(by_size))
        code_of = np.full(len(names), k, np.uint8)  # k: in no group
        code_of[by_size] = np.arange(len(by_size)) % max(k, 1)
        labels = []
        for c in range(k):
            head, n_more = by_size[c], len(by_size[c::k]) - 1
            labels.append(
                f"{label_of.get(str(names[head]), str(names[head]))} ({counts[head]:,})"
                + (f" + {n_more:,} smaller groups" if n_more else "")
            )
        colors = GROUP_COLORS[:k]
        if outside.any():
            labels += [f"{UNGROUPED[by]} ({int(outside.sum()):,}, not a group)"]
            colors += [UNGROUPED_GREY]
        return code_of[inverse], tuple(labels), tuple(colors)

    return view.extra(f"map_group_codes:{by}", build)


def color_range(values: np.ndarray) -> tuple[float, float]:
    """(lo, hi) that a continuous colour scale spans over ``values`` (m,): their 1st and 99th percentile
    (:func:`orientscope.science.map_scales.robust_range`), for the map image and the dashboard's figures alike."""
    return robust_range(values)


def continuous_colors(values: np.ndarray, title: str) -> MapColors:
    """Colours by value, shown between the 1st and 99th percentile of ``values`` (NaN: no value)."""
    values = np.asarray(values, np.float32)
    lo, hi = color_range(values)
    return MapColors("continuous", title, values=values, lo=lo, hi=hi)


def point_colors(data_dir: Path, q: MapQuery, rows: np.ndarray, axis: np.ndarray, notes: list[str]) -> MapColors:
    """The colours of points (molecule ``rows`` (m,), ``axis`` (m,) 1..3) by ``q.color``: the map's and the
    scatter view's one colouring rule. Appends to ``notes`` why a colour fell back to the axes."""
    if q.color == "axis":
        return MapColors(
            "categorical", "axis", codes=(axis - 1).astype(np.uint8), labels=tuple(AXIS_NAMES[a] for a in AXES),
            colors=tuple(AXIS_COLORS[a] for a in AXES),
        )  # fmt: skip
    view = get_view(data_dir, q.dataset)
    if q.color == "group":
        coded = group_colors(data_dir, q.dataset, q.grouping)
        if coded is not None:
            codes, labels, colors = coded
            return MapColors("categorical", q.grouping, codes=codes[rows], labels=labels, colors=colors)
        notes.append(f"{q.grouping} groups are not computed for {q.dataset!r}; coloured by axis instead")
    elif q.color == "score":
        if np.isfinite(view.scores).any():
            return continuous_colors(view.scores[rows], "P(stored pose)")
        notes.append("classifier scores are not computed yet; coloured by axis instead")
    elif q.color.startswith("prop:"):
        name = q.color[5:]
        if name not in view.property_names:
            raise InvalidInput(f"unknown property {name!r}; expected one of {view.property_names}", ("query", "color"))
        unit = view.property_units.get(name)
        values = view.property_values[rows, view.property_names.index(name)]
        return continuous_colors(values, f"{name} ({unit})" if unit else name)
    elif q.color.startswith("shift:"):
        audit_id, _, name = q.color[6:].partition(":")
        try:
            shift = prediction_shift(data_dir, q.dataset, audit_id, name, view.ids)
        except NotFoundError as err:
            raise InvalidInput(str(err), ("query", "color")) from None
        return continuous_colors(shift[rows], f"prediction shift: {name}")
    return point_colors(data_dir, replace(q, color="axis"), rows, axis, notes)


def _needs_view(q: MapQuery) -> bool:
    """Whether a view reads the dataset's molecules (groups, SMARTS, values): the default map does not,
    so a 10M-molecule map is drawn from its frames alone."""
    return bool(q.group or q.smarts) or q.color != "axis"


# Geometries still held by a cached view after their own cache entry went: found again, never built twice.
_live_geometries: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_geometry_lock = threading.Lock()


def _geometry(md: MapData, axes: tuple[int, ...], mask: np.ndarray | None, mask_key: Hashable) -> SortedPoints:
    """The banded, x-sorted points of ``axes`` of the molecules in ``mask`` (cached per map data, axes and
    filter), whatever their colour: shared by every colouring of the view.

    A recolour (colour, grouping) reuses it: only the colours are gathered, in its order, instead
    of sorting the view's points again (about 50 ms and 8 MB per QM9 view).
    """
    key = (id(md), axes, mask_key)
    with _geometry_lock:
        hit = map_cache().get("map_geometry", key) or _live_geometries.get(key)
    if hit is not None and hit.md is md:  # the id of a dropped MapData may be reused
        return hit
    stored = md.default_view
    if stored is not None and mask is None and tuple(axes) == AXES:  # memory-mapped: nothing to sort
        geo = replace(stored, md=md)
    else:
        geo = SortedPoints(*sorted_points(md, axes, mask), md=md, axes=tuple(axes), mask=mask)
        release_freed_memory()  # the unsorted copies (about 600 MB at 30M points)
    with _geometry_lock:
        _live_geometries[key] = geo
    map_cache().put("map_geometry", key, geo)
    return geo


def _resolve(data_dir: Path, q: MapQuery) -> MapPoints:
    md = load_map_data(data_dir, q.dataset, q.table)
    notes: list[str] = [md.symmetry_note] if md.symmetry_note else []
    mask = None
    view = get_view(data_dir, q.dataset) if _needs_view(q) else None
    if q.group:
        if q.grouping not in grouping.group_ids(view):
            notes.append(f"{q.grouping} groups are not computed; the group filter is ignored")
        else:
            mask = np.asarray(grouping.group_rows(view, q.grouping, q.group), bool)
    geo = _geometry(md, q.shown_axes, mask, None if mask is None else (q.grouping, q.group))
    rows, axis = geo.rows, geo.axis
    highlight, n_matches = None, None
    if q.smarts:
        found = match_smarts(view, q.smarts)
        if not found.complete:
            notes.append(f"the SMARTS search stopped after {found.n_scanned:,} of {len(view):,} molecules")
        match = found.mask
        n_matches = int(match.sum() if mask is None else (match & mask).sum())
        highlight = match[rows]
    n_molecules = md.n_molecules if mask is None else int(mask.sum())
    colors = point_colors(data_dir, q, rows, axis, notes)  # gathered in the geometry's x order: no sort per colour
    return MapPoints(
        q, md, geo.x, geo.y, rows, axis, colors, highlight, n_molecules, n_matches, tuple(notes), x_sorted=True,
        geometry=geo,
    )  # fmt: skip


def sorted_by_x(points: MapPoints) -> MapPoints:
    """The same view stored sorted by x within bands of y (:func:`orientscope.services.map_data.banded_order`).

    The aggregation reads a region as a few runs of rows (an x-span in each band it crosses); stored
    this way, the view is that frame itself (at 30M points 420 MB, against 420 MB of arrays plus a 510 MB sorted copy), and
    the draw order needs no array of its own (it is the map data's key order).
    """
    if points.x_sorted:
        return points
    order = banded_order(points.x, points.y)
    c = points.colors
    colors = MapColors(
        c.kind, c.title, codes=None if c.codes is None else c.codes[order], labels=c.labels, colors=c.colors,
        values=None if c.values is None else c.values[order], lo=c.lo, hi=c.hi,
    )  # fmt: skip
    return MapPoints(
        points.query, points.md, points.x[order], points.y[order], points.rows[order].astype(np.int32, copy=False),
        points.axis[order], colors, None if points.highlight is None else points.highlight[order],
        points.n_molecules, points.n_matches, points.notes, x_sorted=True,
    )  # fmt: skip


def view_points(data_dir: Path, query: MapQuery) -> MapPoints:
    """The points of a view (cached; InvalidInput for a malformed query, NotFoundError for an unknown dataset)."""
    q = query.checked()
    md = load_map_data(data_dir, q.dataset, q.table)
    key = (str(data_dir), id(md), q)
    hit = map_cache().get("map_points", key)
    if hit is not None and hit.md is md:  # the id of a dropped MapData may be reused
        return hit
    points = _resolve(data_dir, q)
    map_cache().put("map_points", key, points)
    return points
