"""Orientation-map data: every molecule's three canonical axes on the sphere, ready to draw.

Reads the stored frames table (never recomputes frames), projects the axes to
the equal-area Mollweide plane as float32, and fixes one seeded draw order so
that no colour group hides another. Results are kept in the process's byte-bounded
cache (``backend.services.bytecache``) per (data dir, dataset, result, table),
and a changed manifest makes a new key.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

import numpy as np

from backend.science.rotations import derived_seed
from backend.science.sphere import SQRT2, axes_lonlat_deg, mollweide_graticule, mollweide_outline, mollweide_xy
from backend.services.bytecache import shared_cache
from backend.services.results import open_result
from backend.store.results import MANIFEST

TABLES = ("original", "control")
AXES = (1, 2, 3)
# Bytes per molecule of the lazily built id -> row index (a str key and an int in a dict).
INDEX_BYTES_PER_ID = 120


@dataclass(frozen=True, eq=False)
class MapData:
    """Projected axes of every molecule of one result table.

    Attributes
    ----------
    ids : (n,) str molecule ids, in dataset row order
    x, y : (n, 3) float32 Mollweide coordinates of axes 1..3 (x in [-2√2, 2√2], y in [-√2, √2])
    vectors : (n, 3, 3) float32 unit axis vectors (rows = axes) for the 3D sphere view
    degenerate : (n,) bool frames flagged as degenerate
    order : (3n,) int32 seeded draw order over flat points ``row * 3 + (axis - 1)``
    """

    dataset_id: str
    result_key: str
    table: str
    ids: np.ndarray
    x: np.ndarray
    y: np.ndarray
    vectors: np.ndarray
    degenerate: np.ndarray
    order: np.ndarray
    seed: int

    @property
    def n_molecules(self) -> int:
        return int(self.ids.size)

    def cache_nbytes(self) -> int:
        """Bytes held once every lazy piece is built: the arrays, their flat copies and the id index."""
        arrays = (self.ids, self.x, self.y, self.vectors, self.degenerate, self.order)
        return (
            sum(int(a.nbytes) for a in arrays) + int(self.x.nbytes + self.y.nbytes) + INDEX_BYTES_PER_ID * self.ids.size
        )

    @cached_property
    def _row_index(self) -> dict[str, int]:
        index: dict[str, int] = {}
        for i, mol_id in enumerate(self.ids.tolist()):
            index.setdefault(mol_id, i)  # the first row of a repeated id, as before
        return index

    def row_of(self, mol_id: str) -> int:
        row = self._row_index.get(str(mol_id))
        if row is None:
            raise KeyError(f"unknown molecule id {mol_id!r} in dataset {self.dataset_id!r}")
        return row

    def points(self, axes=AXES, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(rows, axes) of the points to draw, in the shuffled draw order.

        axes : subset of (1, 2, 3); mask : optional (n,) bool keep-molecule mask.
        """
        axes = sorted({int(a) for a in axes})
        bad = [a for a in axes if a not in AXES]
        if bad:
            raise ValueError(f"unknown axis {bad[0]!r}; expected some of {AXES}")
        rows, axis = self._draw_rows, self._draw_axes
        if axes == list(AXES) and mask is None:
            return rows, axis
        wanted = np.zeros(len(AXES) + 1, bool)
        wanted[axes] = True
        keep = wanted[axis]
        if mask is not None:
            keep &= np.asarray(mask, bool)[rows]
        return rows[keep], axis[keep]

    @cached_property
    def _draw_rows(self) -> np.ndarray:
        return _read_only((self.order // 3).astype(np.int32))

    @cached_property
    def _draw_axes(self) -> np.ndarray:
        return _read_only((self.order % 3 + 1).astype(np.int8))

    @cached_property
    def _flat_xy(self) -> tuple[np.ndarray, np.ndarray]:
        return np.ascontiguousarray(self.x).reshape(-1), np.ascontiguousarray(self.y).reshape(-1)

    def xy(self, rows: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """float32 Mollweide coordinates of the given (row, axis) points."""
        flat = np.asarray(rows, np.int64) * 3 + (np.asarray(axes, np.int64) - 1)  # one 1-D take, not 2-D fancy indexing
        fx, fy = self._flat_xy
        return fx.take(flat), fy.take(flat)


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False  # shared by every view of the map
    return a


def load_map_data(data_dir: Path, dataset_id: str, table: str = "original", params: dict | None = None) -> MapData:
    """Map data of a dataset's active (or given) result; ``table`` is "original" or "control"."""
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; expected one of {TABLES}")
    store = open_result(data_dir, dataset_id, params)
    manifest = store.dir / MANIFEST
    stamp = manifest.stat().st_mtime_ns if manifest.is_file() else 0
    key = (str(Path(data_dir).resolve()), dataset_id, store.key, table, stamp)
    return shared_cache().get_or_build("map_data", key, lambda: _build_map_data(store, dataset_id, table))


def _build_map_data(store, dataset_id: str, table: str) -> MapData:
    cols = ["id", "degenerate"] + [f"r{i}{j}" for i in range(3) for j in range(3)]
    tab = store.table("frames", table, columns=cols)
    rot = np.column_stack([tab.column(f"r{i}{j}").to_numpy() for i in range(3) for j in range(3)]).reshape(-1, 3, 3)
    lon, lat = axes_lonlat_deg(rot)
    x, y = mollweide_xy(lon, lat)
    seed = derived_seed(int(store.params.get("seed", 0)), "map-draw-order")
    n = rot.shape[0]
    return MapData(
        dataset_id=dataset_id,
        result_key=store.key,
        table=table,
        ids=tab.column("id").to_numpy(zero_copy_only=False).astype(str),
        x=x.astype(np.float32),
        y=y.astype(np.float32),
        vectors=rot.astype(np.float32),
        degenerate=tab.column("degenerate").to_numpy(zero_copy_only=False).astype(bool),
        order=np.random.default_rng(seed).permutation(3 * n).astype(np.int32),
        seed=seed,
    )


def reference_xy(reference_orientation) -> tuple[np.ndarray, np.ndarray]:
    """Mollweide (x, y), each (3,), of the three axes of a reference rotation (rows = axes)."""
    lon, lat = axes_lonlat_deg(np.asarray(reference_orientation, dtype=np.float64)[None])
    x, y = mollweide_xy(lon[0], lat[0])
    return x.astype(np.float32), y.astype(np.float32)


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

    x_centers : (nx,), y_centers : (ny,), ratio : (ny, nx) float32, NaN outside the map.
    """

    x_centers: np.ndarray
    y_centers: np.ndarray
    ratio: np.ndarray
    n_points: int


def density_grid(x: np.ndarray, y: np.ndarray, nx: int = 144, ny: int = 72) -> DensityGrid:
    """Bin projected points; Mollweide is equal-area so equal cells hold equal sphere area."""
    xe = np.linspace(-2 * SQRT2, 2 * SQRT2, nx + 1)
    ye = np.linspace(-SQRT2, SQRT2, ny + 1)
    counts, _, _ = np.histogram2d(np.asarray(y, np.float64), np.asarray(x, np.float64), bins=[ye, xe])
    xc, yc = (xe[:-1] + xe[1:]) / 2, (ye[:-1] + ye[1:]) / 2
    inside = (xc[None, :] / (2 * SQRT2)) ** 2 + (yc[:, None] / SQRT2) ** 2 <= 1.0
    cell = (xe[1] - xe[0]) * (ye[1] - ye[0])
    ellipse_area = np.pi * 2 * SQRT2 * SQRT2
    n = int(np.size(x))
    expected = max(n, 1) * cell / ellipse_area
    ratio = np.where(inside, counts / expected, np.nan).astype(np.float32)
    return DensityGrid(xc.astype(np.float32), yc.astype(np.float32), ratio, n)


@cache
def frame_lines() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Outline and 30-degree graticule of the Mollweide map: {name: (x, y)} polylines with NaN breaks."""
    return {"outline": mollweide_outline(), "graticule": mollweide_graticule()}
