"""From a view state to the arrays the map draws: which points, in which order, in which colour.

The same layers feed the vector points, the server's aggregated image of the map
(through the services' resolved view, :func:`shown_points`) and the
sphere's click callback, so a clicked sphere point maps back to the molecule drawn there.
The flat map's clicks go to the server's nearest shown point (``/api/.../map/nearest``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import numpy as np

from orientscope.core.errors import OrientScopeError
from orientscope.core.palette import AXIS_COLORS
from orientscope.figures import data
from orientscope.figures.plots import ColorSpec, PointTraces, split_points
from orientscope.figures.state import SCATTER_FIELDS, ViewState
from orientscope.services.bytecache import shared_cache
from orientscope.services.errors import SearchPending
from orientscope.services.map_data import MapData, load_map_data
from orientscope.services.map_view import (
    AXIS_NAMES,
    MapColors,
    MapPoints,
    MapQuery,
    continuous_colors,
    group_colors,
    view_points,
)

# A stated sample the 3D view draws within the flat map's time budget (software WebGL pays for
# every 3D marker on each frame of a rotation).
SPHERE_MAX_POINTS = 5_000


@dataclass(frozen=True)
class ColorSource:
    """Colours of a view per molecule (``per_row``, indexed by map row) or, with None, by axis."""

    kind: str
    per_row: np.ndarray | None = None
    labels: tuple[str, ...] = ()
    colors: tuple[str, ...] = ()
    title: str = ""

    def spec(self, rows: np.ndarray, axes: np.ndarray) -> ColorSpec:
        if self.per_row is None:
            return ColorSpec("categorical", (axes - 1).astype(np.uint8), list(self.labels), list(self.colors), "axis")
        values = self.per_row[rows]
        values = values.astype(np.float32) if self.kind == "continuous" else values
        return ColorSpec(self.kind, values, list(self.labels), list(self.colors), title=self.title)


AXIS_SOURCE = ColorSource(
    "categorical", None, tuple(AXIS_NAMES[a] for a in (1, 2, 3)), tuple(AXIS_COLORS[a] for a in (1, 2, 3)), "axis"
)


@dataclass(frozen=True, eq=False)
class MapLayers:
    """What the map of one view state shows: its molecules, colours and SMARTS matches.

    The points themselves (``rows``, ``axes``: (n_points,) map rows and axes 1..3; ``color``;
    ``highlight_rows``/``highlight_axes``) are built on first use: the flat map draws the
    services' resolved view (:func:`shown_points`) and reads only the counts and notes here,
    so a 10M-molecule map holds no second copy of its 30M points. The sphere's stated sample is
    the first :data:`SPHERE_MAX_POINTS` points of the seeded draw order, in that order.
    """

    md: MapData
    n_molecules: int
    n_matches: int | None
    notes: list[str] = field(default_factory=list)
    shown: tuple[int, ...] = (1, 2, 3)  # the axes the view shows
    errors: list[str] = field(default_factory=list)  # what the user asked for and cannot have (a bad SMARTS)
    mask: np.ndarray | None = None  # (n,) bool molecules the group filter keeps; None: all
    match: np.ndarray | None = None  # (n,) bool SMARTS matches; None without a pattern
    source: ColorSource = AXIS_SOURCE
    sample: int | None = None  # draw only this many points (the sphere's stated sample)
    only_matches: bool = False
    pending: bool = False  # its SMARTS search still runs in the background: drawn without it, never cached

    @property
    def n_points(self) -> int:
        """Points the view shows (counted without building them)."""
        keep = self.mask
        if self.only_matches:
            keep = self.match if keep is None else keep & self.match
        n = self.md.n_defined(self.shown, keep)  # the axes the molecules' symmetry defines
        return n if self.sample is None else min(n, self.sample)

    def matches(self) -> MapLayers:
        """The same view with only its SMARTS matches (for their density)."""
        return replace(self, only_matches=True)

    def cache_nbytes(self, with_points: bool = True) -> int:
        """Bytes of this view's own arrays, with its points as if built unless not ``with_points``
        (the map data and the per-molecule colours are cached on their own)."""
        per_mol = sum(int(a.nbytes) for a in (self.mask, self.match) if a is not None)
        return per_mol + (9 * self.n_points if with_points else 0)  # rows int32, axes int8, colour float32

    @cached_property
    def _points(self) -> tuple[np.ndarray, np.ndarray]:
        keep = self.mask
        if self.only_matches:
            keep = self.match if keep is None else keep & self.match
        rows, axes = self.md.points(self.shown, keep)
        if self.sample is not None and rows.size > self.sample:
            first = self.md.first_in_draw_order(rows, axes, self.sample)
            rows, axes = rows[first], axes[first]
        return rows, axes

    @property
    def rows(self) -> np.ndarray:
        return self._points[0]

    @property
    def axes(self) -> np.ndarray:
        return self._points[1]

    @cached_property
    def color(self) -> ColorSpec:
        return self.source.spec(self.rows, self.axes)

    @cached_property
    def _highlight(self) -> tuple[np.ndarray, np.ndarray]:
        if self.match is None:
            return np.zeros(0, np.int32), np.zeros(0, np.int8)
        keep = self.match[self.rows]
        return self.rows[keep], self.axes[keep]

    @property
    def sphere_highlight(self) -> np.ndarray | None:
        """(n_points,) bool: which of the points match the SMARTS; None without a pattern."""
        return None if self.match is None else self.match[self.rows]

    @property
    def highlight_rows(self) -> np.ndarray:
        return self._highlight[0]

    @property
    def highlight_axes(self) -> np.ndarray:
        return self._highlight[1]

    @cached_property
    def split(self) -> PointTraces:
        """The solid-colour point traces of the map (shared by the figure and click lookups)."""
        return split_points(self.color, int(self.rows.size))

    @cached_property
    def raster_points(self) -> MapPoints:
        """These layers as the points the server aggregates into the map's image (same colours)."""
        x, y = self.md.xy(self.rows, self.axes)
        c = self.color
        if c.kind == "categorical":
            colors = MapColors(
                "categorical", c.title, codes=np.asarray(c.values, np.uint8), labels=tuple(c.labels),
                colors=tuple(c.colors),
            )  # fmt: skip
        else:
            colors = continuous_colors(c.values, c.title)
        highlight = None if self.match is None else self.match[self.rows]
        query = MapQuery(self.md.dataset_id, self.md.table)
        return MapPoints(
            query, self.md, x, y, self.rows.astype(np.int32, copy=False), self.axes.astype(np.int8, copy=False),
            colors, highlight, self.n_molecules, self.n_matches, tuple(self.notes),
        )  # fmt: skip


def _color_source(data_dir: Path, dataset_id: str, color: str, grouping: str, notes) -> ColorSource:
    if color == "group":
        coded = group_colors(data_dir, dataset_id, grouping)
        if coded is None:
            notes.append(f"{grouping} groups are not computed for {dataset_id!r}; coloured by axis instead")
        else:
            codes, lab, cols = coded
            return ColorSource("categorical", codes, tuple(lab), tuple(cols), title=grouping)
    elif color == "score":
        scores = data.classifier_scores(data_dir, dataset_id)
        if np.isfinite(scores).any():
            return ColorSource("continuous", scores, title="P(stored pose)")
        notes.append("classifier scores are not computed yet; coloured by axis instead")
    elif color.startswith("prop:"):
        name = color[5:]
        try:
            values = data.property_values(data_dir, dataset_id, name)
        except OrientScopeError as err:
            notes.append(str(err))
        else:
            unit = data.property_units(data_dir, dataset_id).get(name)
            return ColorSource("continuous", values, title=f"{name} ({unit})" if unit else name)
    elif color.startswith("shift:"):
        audit_id, _, name = color[6:].partition(":")
        try:
            values = data.prediction_shift(data_dir, dataset_id, audit_id, name)
        except OrientScopeError as err:
            notes.append(str(err))
        else:
            return ColorSource("continuous", values, title=f"prediction shift: {name}")  # NaN (grey): not audited
    elif color != "axis":
        notes.append(f"unknown colour {color!r}; expected axis, group, score, prop:<name> or shift:<audit>:<name>")
    return AXIS_SOURCE


def _compute(data_dir: Path, st: ViewState) -> MapLayers:
    dataset_id = st.dataset
    md = load_map_data(data_dir, dataset_id, st.table)
    notes: list[str] = [md.symmetry_note] if md.symmetry_note else []  # the legend's caption: what symmetry hides
    mask = None
    errors: list[str] = []
    if st.group:
        if data.group_labels(data_dir, dataset_id, st.grouping) is None:
            notes.append(f"{st.grouping} groups are not computed; the group filter is ignored")
        else:
            try:
                mask = data.group_mask(data_dir, dataset_id, st.grouping, st.group)
            except OrientScopeError as err:
                errors.append(str(err))
                mask = np.zeros(md.n_molecules, bool)
    n_mol = md.n_molecules if mask is None else int(np.count_nonzero(mask))
    n_points = md.n_defined(st.axis_numbers, mask)
    sample = None
    if st.view == "sphere" and n_points > SPHERE_MAX_POINTS:
        notes.append(f"3D view shows a random sample of {SPHERE_MAX_POINTS:,} of {n_points:,} points")
        sample = SPHERE_MAX_POINTS
    match, n_matches, pending = None, None, False
    if st.smarts:
        try:
            match = np.asarray(data.smarts_mask(data_dir, dataset_id, st.smarts), bool)
        except SearchPending:
            pending = True
            notes.append(f"the SMARTS search for {st.smarts} runs in the background (its progress shows under the "
                         "SMARTS box); the matches are highlighted when it is done")  # fmt: skip
        except OrientScopeError as err:
            errors.append(f"SMARTS pattern not used: {err}")
        else:
            if data.graphs_from_3d(data_dir, dataset_id):
                notes.append("this set has no SMILES: SMARTS matched bonds perceived from the 3D coordinates")
            n_matches = int(match.sum() if mask is None else (match & mask).sum())
    source = _color_source(data_dir, dataset_id, st.color, st.grouping, notes)
    return MapLayers(md, n_mol, n_matches, notes, st.axis_numbers, errors, mask, match, source, sample, pending=pending)


def relevant_state(st: ViewState) -> ViewState:
    """The parts of a view state that change the layers: views that differ only elsewhere share them."""
    if st.view == "density":
        st = st.with_(color=None)  # the density view is not coloured by points
    if st.color != "group" and not st.group:
        st = st.with_(grouping=None)  # only colours or filters by group read the grouping (not a density)
    if st.view != "scatter":  # its controls change nothing else
        st = st.with_(**{name: getattr(ViewState(), name) for name in SCATTER_FIELDS})
    return st.with_(molecule=None, zoom=None, compare=None, sel=None)


def map_layers(data_dir: Path, st: ViewState) -> MapLayers:
    """Cached :class:`MapLayers` for a view state (keyed by the state and the map data's identity)."""
    md = load_map_data(data_dir, st.dataset, st.table)
    key = (str(data_dir), id(md), relevant_state(st))
    layers = shared_cache().get("map_layers", key)
    if layers is not None and layers.md is md:  # the id of a dropped map data object may be reused
        return layers
    layers = _compute(data_dir, st)
    if layers.pending:  # drawn again when the search is done
        return layers
    # the flat map draws the services' view and never builds these points (see MapLayers)
    shared_cache().put("map_layers", key, layers, size=layers.cache_nbytes(with_points=st.view != "map"))
    return layers


def map_query(st: ViewState, color: str = "axis") -> MapQuery:
    """The services' description of the points a view state shows, coloured by ``color``."""
    return MapQuery(st.dataset, st.table, st.axes, color, st.grouping or "formula", st.group, st.smarts)


def shown_query(st: ViewState, layers: MapLayers) -> MapQuery:
    """The services' query of the points a view state's flat map shows: a SMARTS the layers could not use
    is left out, as the layers leave it out (and say why)."""
    query = map_query(st, st.color)
    return query if layers.n_matches is not None else replace(query, smarts=None)


def shown_points(data_dir: Path, st: ViewState, layers: MapLayers) -> MapPoints:
    """The points the server aggregates for a view state's flat map.

    The services' resolved view, the one the REST clicks and hover read (indexed at server start
    for the default view): both colour from ``orientscope.core.palette`` and the services' group
    table, so the dashboard keeps no second copy of a view's points (:func:`shown_query`).
    """
    try:
        return view_points(data_dir, shown_query(st, layers))
    except OrientScopeError:  # e.g. an unknown group or property: the layers say why
        return layers.raster_points
