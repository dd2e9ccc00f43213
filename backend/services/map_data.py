"""Orientation-map data: every molecule's canonical axes on the sphere, ready to draw.

A molecule shows only the axes its symmetry defines (``science.frames``): all
three for a full frame, its one defined axis for a linear molecule or a
symmetric top, none for a single atom or a spherical top. An undefined axis is
stored as NaN and is never a point (:meth:`MapData.points`).

Only reads: the pipeline's map stage (``pipeline.map_stage``) projects the stored
frames to the equal-area Mollweide plane as float32 and stores them with the
default view's points in banded order; this module memory-maps them (a result
stored before that stage has them written on first open). Points are drawn in
one seeded order so that no colour group hides another (``science.map_order``).
Maps are kept in the process's byte-bounded cache
(``orientscope.services.bytecache``) per (data dir, dataset, result, table), and a
changed manifest makes a new key.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from orientscope.pipeline.map_stage import TABLES, map_signature, write_map
from orientscope.science.map_order import (  # noqa: F401  (band_of, band_ranges, band_starts: read here by the map's services)
    AXES,
    DRAW_STREAM,
    band_of,
    band_ranges,
    band_starts,
    banded_order,
    banded_points,
    defined_points,
    draw_keys,
)
from orientscope.science.map_scales import ELLIPSE_AREA, density_ceiling, density_ratio, grid_counts
from orientscope.science.nearest_point import point_keys
from orientscope.science.rotations import derived_seed
from orientscope.science.sphere import (
    SQRT2,
    axes_lonlat_deg,
    mollweide_graticule,
    mollweide_outline,
    mollweide_vectors,
    mollweide_xy,
)
from orientscope.services.bytecache import map_cache, nbytes, release_freed_memory
from orientscope.services.results import open_result
from orientscope.store import map_arrays
from orientscope.store.results import MANIFEST
from orientscope.store.shards import hash_ids

log = logging.getLogger(__name__)


class IdColumn:
    """Molecule ids of a map as one Arrow string column (about 12 bytes an id, against 40+ as a NumPy
    str array); indexed like a NumPy array, answering ``str`` for one row and a str array otherwise."""

    def __init__(self, ids, mapped: bool = False):
        arr = ids if isinstance(ids, pa.Array | pa.ChunkedArray) else pa.array(np.asarray(ids).astype(str))
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
        wanted = pa.large_string() if arr.nbytes > 2**31 - 1 else pa.string()
        self._arr = arr if arr.type == wanted or arr.type == pa.large_string() else arr.cast(wanted)
        self.mapped = mapped  # the buffers are a memory-mapped file's pages (store.map_arrays), not the heap's

    @property
    def nbytes(self) -> int:
        return int(self._arr.nbytes)

    @property
    def arrow(self) -> pa.Array:
        return self._arr

    @property
    def size(self) -> int:
        return len(self._arr)

    def __len__(self) -> int:
        return len(self._arr)

    def __getitem__(self, key):
        if isinstance(key, int | np.integer):
            return self._arr[int(key)].as_py()
        if isinstance(key, slice):
            return self._arr[key].to_numpy(zero_copy_only=False).astype(str)
        idx = np.asarray(key)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        return self._arr.take(pa.array(idx.astype(np.int64, copy=False))).to_numpy(zero_copy_only=False).astype(str)

    def __array__(self, dtype=None, copy=None):
        out = self._arr.to_numpy(zero_copy_only=False).astype(str)
        return out if dtype is None else out.astype(dtype)

    def tolist(self) -> list[str]:
        return self._arr.to_pylist()

    def index_of(self, mol_id: str) -> int:
        """First row holding ``mol_id``, else -1 (a scan in Arrow's C++: about 40 ms at 10M ids, no index held)."""
        return int(pc.index(self._arr, pa.scalar(str(mol_id), self._arr.type)).as_py())


@dataclass(frozen=True, eq=False)
class SortedPoints:
    """Points of a view in banded order (sorted by x within bands of y, :func:`banded_order`), as a
    stored default view holds them.

    x, y : (m,) float32; rows : (m,) int32 molecule row; axis : (m,) int8 axis 1..3;
    starts : (N_BANDS + 1,) int64 first row of each band;
    whole : (points, distinct molecules) of the whole view, bounds : (x0, x1, y0, y1) of its points,
    both known without a pass over the points (None when not stored);
    md : the map data they are points of, as a view's cached geometry (None in :attr:`MapData.default_view`);
    axes, mask : the shown axes and the (n,) bool molecule filter (None: every molecule) they are the points of.
    """

    x: np.ndarray
    y: np.ndarray
    rows: np.ndarray
    axis: np.ndarray
    starts: np.ndarray
    whole: tuple[int, int] | None = None
    bounds: tuple[float, float, float, float] | None = None
    md: MapData | None = field(default=None, repr=False)
    axes: tuple[int, ...] = AXES
    mask: np.ndarray | None = field(default=None, repr=False)

    def cache_nbytes(self) -> int:
        return sum(nbytes(a) for a in (self.x, self.y, self.rows, self.axis, self.mask) if a is not None)  # maps: 0


@dataclass(frozen=True, eq=False)
class MapData:
    """Projected axes of every molecule of one result table.

    Attributes
    ----------
    ids : (n,) molecule ids in dataset row order (:class:`IdColumn`; a str array or list is converted)
    x, y : (n, 3) float32 Mollweide coordinates of axes 1..3 (x in [-2√2, 2√2], y in [-√2, √2])
    degenerate : (n,) bool frames flagged as degenerate
    seed : key of the draw order (:meth:`draw_keys`)
    id_index : (sorted id hashes, row of each) for :meth:`row_of` without a scan, or None
    default_view : the stored x-sorted points of axes 1, 2, 3 without a filter, or None
    (both come with map arrays stored by :mod:`orientscope.store.map_arrays`)
    """

    dataset_id: str
    result_key: str
    table: str
    ids: IdColumn
    x: np.ndarray
    y: np.ndarray
    degenerate: np.ndarray
    seed: int
    id_index: tuple[np.ndarray, np.ndarray] | None = None
    default_view: SortedPoints | None = None

    def __post_init__(self):
        if not isinstance(self.ids, IdColumn):
            object.__setattr__(self, "ids", IdColumn(self.ids))

    @property
    def n_molecules(self) -> int:
        return int(self.ids.size)

    def cache_nbytes(self) -> int:
        """Bytes held on the heap: coordinates, ids and flags (memory-mapped arrays are file pages, not counted)."""
        ids = 0 if self.ids.mapped else self.ids.nbytes
        return int(sum(nbytes(a) for a in (self.x, self.y, self.degenerate)) + ids)

    def row_of(self, mol_id: str) -> int:
        """Row of a molecule id (the first, if repeated); KeyError naming it otherwise."""
        row = self.ids.index_of(mol_id) if self.id_index is None else self._indexed_row(str(mol_id))
        if row < 0:
            raise KeyError(f"unknown molecule id {mol_id!r} in dataset {self.dataset_id!r}")
        return row

    def _indexed_row(self, mol_id: str) -> int:
        """The first row holding ``mol_id`` through the sorted hash index (microseconds, not a scan), else -1."""
        hashes, order = self.id_index
        h = hash_ids(np.array([mol_id]))[0]
        lo, hi = np.searchsorted(hashes, h, "left"), np.searchsorted(hashes, h, "right")
        rows = sorted(int(r) for r in order[lo:hi] if self.ids[int(r)] == mol_id)
        return rows[0] if rows else -1

    @cached_property
    def axis_counts(self) -> np.ndarray:
        """(4,) molecules with 0, 1, 2 and 3 defined axes (NaN map positions are undefined axes)."""
        defined = (~np.isnan(np.asarray(self.x))).sum(axis=1) if self.n_molecules else np.zeros(0, np.int64)
        return np.bincount(defined, minlength=4)

    def n_defined(self, axes=AXES, mask: np.ndarray | None = None) -> int:
        """How many points :meth:`points` gives for ``axes`` and ``mask``, counted without building them."""
        cols = [int(a) - 1 for a in sorted({int(a) for a in axes})]
        if not self.axis_counts[:3].any():  # every axis of every molecule is defined
            return len(cols) * (self.n_molecules if mask is None else int(np.count_nonzero(mask)))
        if mask is None:
            return int(self._defined_per_axis[cols].sum())
        return int((~np.isnan(np.asarray(self.x)[np.asarray(mask, bool)][:, cols])).sum())

    @cached_property
    def _defined_per_axis(self) -> np.ndarray:
        return (~np.isnan(np.asarray(self.x))).sum(axis=0)

    @property
    def symmetry_note(self) -> str | None:
        """What the map leaves out by symmetry (the legend's caption), or None if every molecule has a full frame."""
        none, one = int(self.axis_counts[0]), int(self.axis_counts[1])
        if not (none or one):
            return None
        parts = []
        if one:
            parts.append(
                f"{one:,} molecules with only one defined axis (linear molecules, symmetric tops) show that axis"
            )
        if none:
            parts.append(
                f"{none:,} with no orientation (single atoms, spherical tops) {'are' if none != 1 else 'is'} not drawn"
            )
        return "; ".join(parts)

    def points(self, axes=AXES, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(rows, axes) of the shown points, (m,) int32 and (m,) int8, in row order (axes ascending within a row).

        axes : subset of (1, 2, 3); mask : optional (n,) bool keep-molecule mask.
        An axis the molecule's symmetry leaves undefined (NaN on the map) is no point.
        Sort them by :meth:`draw_keys` to draw them.
        """
        flat_x = self._flat_xy[0]
        return defined_points(flat_x, self.n_molecules, axes, mask, partial=bool(self.axis_counts[:3].any()))

    def draw_keys(self, rows: np.ndarray, axes: np.ndarray) -> np.ndarray:
        """(m,) uint64 draw key of each point: points are drawn in ascending key order.

        A counter-based hash of (seed, row * 3 + axis - 1): a seeded shuffle of all points
        that is never stored, and any subset of points sorts into the same relative order.
        """
        return draw_keys(self.seed, rows, axes)

    def in_draw_order(self, rows: np.ndarray, axes: np.ndarray) -> np.ndarray:
        """(m,) int64 permutation that puts the points (rows, axes) in the seeded draw order."""
        return np.argsort(self.draw_keys(rows, axes), kind="stable")

    def first_in_draw_order(self, rows: np.ndarray, axes: np.ndarray, k: int, chunk: int = 1 << 22) -> np.ndarray:
        """(min(k, m),) int64 indices of the first ``k`` points (rows, axes) in the draw order, in that order;
        the keys are drawn in chunks, so a sample of 30M points never holds all their keys at once."""
        m = int(np.size(rows))
        k = min(int(k), m)
        if k <= 0:
            return np.zeros(0, np.int64)
        cand_idx, cand_key = [], []
        for a in range(0, m, chunk):
            keys = self.draw_keys(rows[a : a + chunk], axes[a : a + chunk])
            top = np.argpartition(keys, k - 1)[:k] if keys.size > k else np.arange(keys.size)
            cand_idx.append(top + a)
            cand_key.append(keys[top])
        if not cand_idx:
            return np.zeros(0, np.int64)
        idx, keys = np.concatenate(cand_idx), np.concatenate(cand_key)
        return idx[np.argsort(keys, kind="stable")[:k]].astype(np.int64)

    def vectors(self, rows: np.ndarray, axes: np.ndarray) -> np.ndarray:
        """(m, 3) float32 unit axis vectors of the points (rows, axes), back from their map position
        (for the 3D sphere view: a sample, so nothing is stored)."""
        x, y = self.xy(rows, axes)
        return mollweide_vectors(x, y).astype(np.float32)

    @cached_property
    def _flat_xy(self) -> tuple[np.ndarray, np.ndarray]:
        return np.ascontiguousarray(self.x).reshape(-1), np.ascontiguousarray(self.y).reshape(-1)

    def xy(self, rows: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """float32 Mollweide coordinates of the given (row, axis) points."""
        flat = self.point_keys(rows, axes)  # one 1-D take, not 2-D fancy indexing
        fx, fy = self._flat_xy
        return fx.take(flat), fy.take(flat)

    def point_keys(self, rows: np.ndarray, axes: np.ndarray) -> np.ndarray:
        """(m,) int64 index of each (row, axis) point into the flattened (n, 3) map arrays: also the key
        that breaks a tie between equally near points of a click (:mod:`orientscope.science.nearest_point`)."""
        return point_keys(rows, axes)


def load_map_data(data_dir: Path, dataset_id: str, table: str = "original", params: dict | None = None) -> MapData:
    """Map data of a dataset's active (or given) result; ``table`` is "original" or "control".

    The map arrays the pipeline's map stage stored (:mod:`orientscope.pipeline.map_stage`) are memory-mapped.
    A result stored before that stage has them written on first open: into its result folder, or, if the
    store is read-only, into a folder beside the memory-mapped columns; a restarted server then opens them
    in milliseconds.
    """
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; expected one of {TABLES}")
    store = open_result(data_dir, dataset_id, params)
    manifest = store.dir / MANIFEST
    stamp = manifest.stat().st_mtime_ns if manifest.is_file() else 0
    key = (str(Path(data_dir).resolve()), dataset_id, store.key, table, stamp)
    return map_cache().get_or_build("map_data", key, lambda: _open(store, dataset_id, table))


def _open(store, dataset_id: str, table: str) -> MapData:
    signature = map_signature(store, table)
    stored = map_arrays.store_map_folder(store.dir, table)
    cached = map_arrays.cache_map_folder(store.dir, dataset_id, store.key, table)
    for folder in (stored, cached):
        opened = map_arrays.open_map_arrays(folder, signature)
        if opened is not None:
            return _mapped(store, dataset_id, table, *opened)
    try:
        folder = write_map(store, table, stored)
    except PermissionError:  # a read-only store
        folder = write_map(store, table, cached)
    release_freed_memory()  # the projection and the sort: ~0.6 GB at 30M points, kept by the allocators
    opened = map_arrays.open_map_arrays(folder, signature)
    if opened is None:  # replaced by another writer's newer frames in between
        raise RuntimeError(f"the map arrays in {folder} changed while they were written")
    return _mapped(store, dataset_id, table, *opened)


def _mapped(store, dataset_id: str, table: str, arrays: dict, ids: pa.Array, meta: dict) -> MapData:
    view = SortedPoints(
        *(arrays[f"view-{name}"] for name in map_arrays.VIEW_ARRAYS),
        starts=np.asarray(meta["band_starts"], np.int64),
        whole=tuple(meta["whole"]),
        bounds=tuple(meta["bounds"]),
    )
    return MapData(
        dataset_id=dataset_id,
        result_key=store.key,
        table=table,
        ids=IdColumn(ids, mapped=True),
        x=arrays["x"],
        y=arrays["y"],
        degenerate=arrays["degenerate"],
        seed=derived_seed(int(store.params.get("seed", 0)), DRAW_STREAM),
        id_index=(arrays["id_hash"], arrays["id_order"]),
        default_view=view,
    )


def sorted_points(md: MapData, axes, mask) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, rows, axis, band starts) of the shown points in banded order (:func:`banded_order`)."""
    rows, axis = md.points(axes, mask)
    x, y = md.xy(rows, axis)
    return banded_points(x, y, rows, axis)


def reference_points(reference_orientation, axes=(1, 2, 3)) -> dict[str, list]:
    """The given axes of a reference rotation (rows = axes) as map points with their sky position.

    Returns {"axis": [a, ...], "x": [...], "y": [...] (Mollweide), "lon": [...], "lat": [...] (degrees)}.
    """
    lon, lat = axes_lonlat_deg(np.asarray(reference_orientation, dtype=np.float64)[None])
    x, y = mollweide_xy(lon[0], lat[0])
    idx = [int(a) - 1 for a in axes]
    return {
        "axis": [int(a) for a in axes],
        "x": [float(x[i]) for i in idx],
        "y": [float(y[i]) for i in idx],
        "lon": [float(lon[0][i]) for i in idx],
        "lat": [float(lat[0][i]) for i in idx],
    }


@dataclass(frozen=True)
class DensityGrid:
    """Point density on the Mollweide plane relative to a uniform sphere (1 = uniform).

    x_centers : (nx,), y_centers : (ny,), ratio : (ny, nx) float32, NaN outside the map (and everywhere for a
    set too small for a density, :data:`DENSITY_MIN_POINTS`); n_points : the set's points.
    """

    x_centers: np.ndarray
    y_centers: np.ndarray
    ratio: np.ndarray
    n_points: int

    @property
    def too_few(self) -> bool:
        """Whether the set has too few points for a density (:data:`DENSITY_MIN_POINTS`; ``ratio`` is all NaN)."""
        return self.n_points < DENSITY_MIN_POINTS


DENSITY_POINTS_PER_CELL = 5
MIN_DENSITY_CELLS = 24  # across the whole map
MAX_DENSITY_CELLS = 144  # across: finer cells than this at the whole map hold noise, and cost the page bytes
MIN_REGION_CELLS = 8  # across a zoomed region: coarser than this shows no shape
# Fewer points leave the coarsest cells (the whole map in 24 x 12) under one expected point each: a cell
# holds 0 or 1, a "density" of 0 or 1/expected (three molecules showed blocks at 40x uniform). Such a set is
# drawn as its points, with no density: under 227 points (76 molecules of three axes).
DENSITY_MIN_POINTS = int(np.ceil(ELLIPSE_AREA / (4 * SQRT2 / MIN_DENSITY_CELLS) ** 2))


def density_grid(
    x: np.ndarray,
    y: np.ndarray,
    nx: int = 144,
    ny: int = 72,
    rows: np.ndarray | None = None,
    axes=None,
    region: tuple[float, float, float, float] | None = None,
) -> DensityGrid:
    """Bin projected points; Mollweide is equal-area so equal cells hold equal sphere area.

    x, y : the points' positions; or, with ``rows`` and ``axes``, a map's (n, 3) positions of which the
    points (row, axis) are binned (:func:`orientscope.science.map_scales.grid_counts`). ``region`` (x0, x1,
    y0, y1): the cells cover it (default the whole map); the ratio is to a uniform sphere of all the points.
    """
    x0, x1, y0, y1 = region or (-2 * SQRT2, 2 * SQRT2, -SQRT2, SQRT2)
    xe = np.linspace(x0, x1, nx + 1)
    ye = np.linspace(y0, y1, ny + 1)
    counts = grid_counts(x, y, xe, ye, rows, axes).astype(np.float64)
    xc, yc = (xe[:-1] + xe[1:]) / 2, (ye[:-1] + ye[1:]) / 2
    n = int(np.size(x if rows is None else rows))
    ratio = density_ratio(counts, xc, yc, (xe[1] - xe[0]) * (ye[1] - ye[0]), n)
    if n < DENSITY_MIN_POINTS:
        ratio = np.full_like(ratio, np.nan)
    return DensityGrid(xc.astype(np.float32), yc.astype(np.float32), ratio, n)


def density_cells(n_points: int, region: tuple[float, float, float, float] | None = None) -> tuple[int, int]:
    """(nx, ny) cells of a density of ``n_points`` points over ``region`` (default the whole map): square cells
    of the side at which a uniform set puts :data:`DENSITY_POINTS_PER_CELL` points in each, between
    :data:`MIN_DENSITY_CELLS` and
    :data:`MAX_DENSITY_CELLS` across the whole map, and between :data:`MIN_REGION_CELLS` and
    :data:`MAX_DENSITY_CELLS` along a region's longer side (so a zoom of a large set shows finer cells than the whole map's:
    full QM9's whole map has 144, cells of 0.039, and a zoom reaches cells of 0.013): finer cells on a small
    set show sampling noise, not orientation."""
    if region is None:
        nx = (
            int(np.clip(np.sqrt(2 * n_points / DENSITY_POINTS_PER_CELL), MIN_DENSITY_CELLS, MAX_DENSITY_CELLS)) // 2 * 2
        )
        return nx, nx // 2
    w, h = region[1] - region[0], region[3] - region[2]
    side = np.sqrt(DENSITY_POINTS_PER_CELL * ELLIPSE_AREA / max(n_points, 1))
    long_cells = int(np.clip(round(max(w, h) / side), MIN_REGION_CELLS, MAX_DENSITY_CELLS))
    short_cells = max(1, round(long_cells * min(w, h) / max(w, h)))  # square cells
    return (long_cells, short_cells) if w >= h else (short_cells, long_cells)


def density_grids(
    point_sets: list[tuple], region: tuple[float, float, float, float] | None = None
) -> tuple[list[DensityGrid], float]:
    """Density grids of point sets shown side by side, (x, y) or (x, y, rows, axes) as :func:`density_grid`
    takes them, on one grid (:func:`density_cells` of the larger set, over ``region``, default the whole map)
    and one colour scale: (grids, the scale's top, :func:`orientscope.science.map_scales.density_ceiling`),
    so that equal colours mean equal densities and a uniform set does not look as concentrated as an aligned one.
    """
    n = max(int(np.size(p[2] if len(p) > 2 else p[0])) for p in point_sets)
    nx, ny = density_cells(n, region)
    grids = [density_grid(p[0], p[1], nx, ny, *p[2:], region=region) for p in point_sets]
    return grids, density_ceiling(*(g.ratio for g in grids))


@cache
def frame_lines() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Outline and 30-degree graticule of the Mollweide map: {name: (x, y)} polylines with NaN breaks."""
    return {"outline": mollweide_outline(), "graticule": mollweide_graticule()}
