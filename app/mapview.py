"""From a view state to the arrays the map draws: which points, in which order, in which colour.

The same function serves the figure callback and the click callback, so a
clicked point index always maps back to the molecule that was drawn there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from app import data
from app.figures import AXIS_NAMES, OKABE_ITO, OTHER_GREY, POINTS_START, ColorSpec, PointTraces, split_points
from app.state import ViewState
from backend.services.bytecache import shared_cache
from backend.services.map_data import MapData

SPHERE_MAX_POINTS = 60_000
N_GROUP_COLORS = 7


@dataclass(frozen=True, eq=False)
class MapLayers:
    """Points of the map for one view state; rows/axes are (n_points,) in draw order."""

    md: MapData
    rows: np.ndarray
    axes: np.ndarray
    color: ColorSpec
    highlight_rows: np.ndarray
    highlight_axes: np.ndarray
    n_molecules: int
    n_matches: int | None
    notes: list[str] = field(default_factory=list)

    def cache_nbytes(self) -> int:
        """Bytes of this view's own arrays and point traces (the shared map data is cached on its own)."""
        arrays = [self.rows, self.axes, self.highlight_rows, self.highlight_axes]
        arrays += [self.color.values] if self.color.values is not None else []
        own = sum(int(a.nbytes) for a in arrays)
        return own + 4 * int(self.rows.size)  # the split's int32 member indices, built lazily

    @cached_property
    def split(self) -> PointTraces:
        """The solid-colour point traces of the map (shared by the figure and click lookups)."""
        return split_points(self.color, int(self.rows.size))


def _group_codes(data_dir: Path, dataset_id: str, grouping: str):
    """(colour code per map row, labels, colours) of the largest groups, or None; once per stored result."""

    def build():
        labels = data.group_labels(data_dir, dataset_id, grouping)
        if labels is None:
            return None
        names, inverse, counts = np.unique(labels.astype(str), return_inverse=True, return_counts=True)
        top = np.argsort(-counts, kind="stable")[:N_GROUP_COLORS]
        code_of = np.full(len(names), len(top), np.uint8)
        code_of[top] = np.arange(len(top), dtype=np.uint8)
        lab = [f"{grouping} {names[t]} ({counts[t]})" for t in top]
        cols = OKABE_ITO[: len(top)]
        if len(names) > len(top):
            lab, cols = lab + ["other groups"], cols + [OTHER_GREY]
        return code_of[inverse], lab, cols

    return data.per_result(data_dir, dataset_id, f"map_group_codes:{grouping}", build)


def _color_spec(data_dir: Path, dataset_id: str, color: str, grouping: str, rows, axes, notes) -> ColorSpec:
    if color == "group":
        coded = _group_codes(data_dir, dataset_id, grouping)
        if coded is None:
            notes.append(f"{grouping} groups are not computed for {dataset_id!r}; coloured by axis instead")
        else:
            codes, lab, cols = coded
            return ColorSpec("categorical", codes[rows], lab, cols, title=grouping)
    elif color == "score":
        scores = data.classifier_scores(data_dir, dataset_id)
        if np.isfinite(scores).any():
            return ColorSpec("continuous", scores[rows].astype(np.float32), title="P(stored pose)")
        notes.append("classifier scores are not computed yet; coloured by axis instead")
    elif color.startswith("prop:"):
        name = color[5:]
        try:
            values = data.property_values(data_dir, dataset_id, name)
        except data.OrientScopeError as err:
            notes.append(str(err))
        else:
            unit = data.property_units(data_dir, dataset_id).get(name)
            return ColorSpec("continuous", values[rows].astype(np.float32), title=f"{name} ({unit})" if unit else name)
    elif color.startswith("shift:"):
        audit_id, _, name = color[6:].partition(":")
        try:
            values = data.prediction_shift(data_dir, dataset_id, audit_id, name)
        except data.OrientScopeError as err:
            notes.append(str(err))
        else:
            title = f"prediction shift: {name}"
            return ColorSpec("continuous", values[rows].astype(np.float32), title=title)  # NaN (grey): not audited
    elif color != "axis":
        notes.append(f"unknown colour {color!r}; expected axis, group, score, prop:<name> or shift:<audit>:<name>")
    codes = (axes - 1).astype(np.uint8)
    return ColorSpec("categorical", codes, [AXIS_NAMES[a] for a in (1, 2, 3)], OKABE_ITO[:3], title="axis")


def _compute(data_dir: Path, st: ViewState) -> MapLayers:
    dataset_id = st.dataset
    md = data.load_map_data(data_dir, dataset_id, st.table)
    notes: list[str] = []
    mask = None
    if st.group:
        labels = data.group_labels(data_dir, dataset_id, st.grouping)
        if labels is None:
            notes.append(f"{st.grouping} groups are not computed; the group filter is ignored")
        else:
            mask = labels.astype(str) == str(st.group)
            if not mask.any():
                notes.append(f"no molecule is in {st.grouping} group {st.group!r}")
    rows, axes = md.points(st.axis_numbers, mask)
    if st.view == "sphere" and rows.size > SPHERE_MAX_POINTS:
        notes.append(f"3D view shows a random sample of {SPHERE_MAX_POINTS:,} of {rows.size:,} points")
        rows, axes = rows[:SPHERE_MAX_POINTS], axes[:SPHERE_MAX_POINTS]
    hrows = haxes = np.zeros(0, np.int64)
    n_matches = None
    if st.smarts:
        try:
            match = data.smarts_mask(data_dir, dataset_id, st.smarts)
        except data.OrientScopeError as err:
            notes.append(str(err))
        else:
            n_matches = int(match.sum() if mask is None else (match & mask).sum())
            keep = match[rows]
            hrows, haxes = rows[keep], axes[keep]
    n_mol = md.n_molecules if mask is None else int(mask.sum())
    color = _color_spec(data_dir, dataset_id, st.color, st.grouping, rows, axes, notes)
    return MapLayers(md, rows, axes, color, hrows, haxes, n_mol, n_matches, notes)


def _relevant(st: ViewState) -> ViewState:
    """The parts of a view state that change the layers: views that differ only elsewhere share them."""
    if st.color != "group" and not st.group:
        st = st.with_(grouping=None)  # only colours or filters by group read the grouping
    if st.view == "density":
        st = st.with_(color=None)  # the density view is not coloured by points
    return st.with_(molecule=None)


def map_layers(data_dir: Path, st: ViewState) -> MapLayers:
    """Cached :class:`MapLayers` for a view state (keyed by the state and the map data's identity)."""
    md = data.load_map_data(data_dir, st.dataset, st.table)
    key = (str(data_dir), id(md), _relevant(st))
    layers = shared_cache().get("map_layers", key)
    if layers is not None and layers.md is md:  # the id of a dropped map data object may be reused
        return layers
    layers = _compute(data_dir, st)
    shared_cache().put("map_layers", key, layers)
    return layers


def clicked_row(layers: MapLayers, view: str, curve: int, point: int) -> int | None:
    """Map row of a clicked point (None if the click was not on a molecule's point)."""
    if view == "sphere":
        pool = layers.rows if curve == 1 else None
    else:
        members = layers.split.members
        t = curve - POINTS_START
        if 0 <= t < len(members):
            pool = layers.rows[members[t]]
        else:
            pool = layers.highlight_rows if t == len(members) else None
    if pool is None or not 0 <= point < pool.size:
        return None
    return int(pool[point])
