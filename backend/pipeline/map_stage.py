"""The map stage: project a result's frames onto the orientation map and store the arrays a server memory-maps.

Runs after the frames stage of every precompute (``pipeline.read_arrays``), by
``orientscope map``, by ``orientscope migrate``, and on the first open of a store
written before it. Each shard's frames table is read and projected on its own (on the
engine's workers, or two threads in process: the projection's Newton iterations are most
of the minute a 10M-molecule map takes); the merge concatenates the parts and sorts the
default view's points into banded order (``science.map_order``). The folder
(``store.map_arrays``) is written atomically, its ``map.json`` last, with the signature
of the frames it was projected from: a folder whose signature matches is complete and
current, so a re-run after a crash or on an unchanged result skips it.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from orientscope.science.frames import orientation_of, symmetry_kinds
from orientscope.science.map_order import AXES, N_BANDS, banded_points, defined_points
from orientscope.science.sphere import axes_lonlat_deg, mollweide_xy
from orientscope.store import map_arrays
from orientscope.store.atomic import read_table
from orientscope.store.results import ResultStore
from orientscope.store.shards import shard_table_paths

log = logging.getLogger(__name__)

TABLES = ("original", "control")
# The rule the stored arrays are made by; a folder of another rule is stale. 2: a molecule shows only the axes
# its symmetry defines (``defined_axes_mask``). Maps stored before (no rule in their signature) showed every
# axis of every molecule, under the same frames signature, so they are rewritten on first open or migrate.
MAP_RULE = 2
_ROTATION = [f"r{i}{j}" for i in range(3) for j in range(3)]
_COLUMNS = ["id", "degenerate", "reason", *_ROTATION]


@dataclass(frozen=True)
class ProjectedMap:
    """Projected axes of every molecule of one result table, in the result's row order.

    ids : (n,) Arrow string array; x, y : (n, 3) float32 Mollweide positions of axes 1..3, NaN where the
    molecule's symmetry leaves the axis undefined; degenerate : (n,) bool frames flagged as degenerate.
    """

    ids: pa.Array
    x: np.ndarray
    y: np.ndarray
    degenerate: np.ndarray


def map_signature(store: ResultStore, table: str) -> dict:
    """What names the frames a map was projected from: a stored map with another signature is stale."""
    frames = store.manifest()["stages"].get("frames", {})
    return {
        "map_rule": MAP_RULE,
        "table": table,
        "frames_completed_at": frames.get("completed_at"),
        "version": frames.get("version"),
        "view_order": f"x within {N_BANDS} bands of y",  # how the stored view is ordered
    }


def defined_axes_mask(reasons) -> np.ndarray:
    """(k, 3) bool: the axes each molecule's symmetry defines, from its frame's degeneracy codes (an Arrow column):
    all three for a full frame, the one defined axis of an axis-only molecule, none without an orientation."""
    flagged = np.flatnonzero(pc.not_equal(reasons, "").to_numpy(zero_copy_only=False))
    shown = np.ones((len(reasons), 3), bool)
    if flagged.size:
        classes, axis = orientation_of(symmetry_kinds(reasons.take(pa.array(flagged)).to_numpy(zero_copy_only=False)))
        partial = flagged[classes != "full"]
        shown[partial] = False
        one = classes == "axis"
        shown[flagged[one], axis[one] - 1] = True
    return shown


def project_part(part: pa.Table | str) -> tuple[np.ndarray, np.ndarray, list, np.ndarray]:
    """(x, y) float32 (k, 3), id chunks and degenerate flags of one part of a frames table (a table, or the
    path of one shard's table: a task carries paths, and its worker reads the shard itself)."""
    if isinstance(part, str):
        part = read_table(Path(part), columns=_COLUMNS)
    rot = np.column_stack([part.column(c).to_numpy() for c in _ROTATION]).reshape(-1, 3, 3)
    x, y = mollweide_xy(*axes_lonlat_deg(rot))
    undefined = ~defined_axes_mask(part.column("reason"))
    x[undefined], y[undefined] = np.nan, np.nan
    degenerate = part.column("degenerate").to_numpy(zero_copy_only=False).astype(bool)
    return x.astype(np.float32), y.astype(np.float32), part.column("id").chunks, degenerate


def project_table(store: ResultStore, table: str, engine=None) -> ProjectedMap:
    """Project one frames table (``table``: "original" or "control") of a stored result.

    Read one shard at a time (never the whole float64 table at once); a result stored as one table
    is read whole (NotFoundError naming the stage if it is not computed). engine : a running
    ``pipeline.engine.Engine`` on a cluster projects the shards on its workers; None or an
    in-process one projects them on two threads here.
    """
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; expected one of {TABLES}")
    single = store.dir / f"frames.{table}.parquet"
    paths = [] if single.is_file() or not store.completed("frames") else shard_table_paths(store.dir, "frames", table)
    if not paths:
        parts = [project_part(store.table("frames", table, columns=_COLUMNS))]
    elif engine is not None and engine.describe()["where"] != "in-process":
        parts = engine.map(project_part, [str(p) for p in paths])
    else:
        # Parquet reads and NumPy release the GIL: two threads halve the projection's time.
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="map-data") as pool:
            parts = list(pool.map(project_part, [str(p) for p in paths]))
    chunks = [chunk for _, _, part_chunks, _ in parts for chunk in part_chunks]
    ids = pa.chunked_array(chunks, chunks[0].type if chunks else pa.string())
    if ids.nbytes > 2**31 - 1 and ids.type == pa.string():  # one 32-bit-offset array holds 2 GB of text
        ids = ids.cast(pa.large_string())
    ids = ids.chunk(0) if ids.num_chunks == 1 else ids.combine_chunks()
    return ProjectedMap(
        ids=ids,
        x=np.concatenate([p[0] for p in parts]) if parts else np.zeros((0, 3), np.float32),
        y=np.concatenate([p[1] for p in parts]) if parts else np.zeros((0, 3), np.float32),
        degenerate=np.concatenate([p[3] for p in parts]) if parts else np.zeros(0, bool),
    )


def write_map(store: ResultStore, table: str, folder: Path, engine=None) -> Path:
    """Project ``table`` of ``store`` and write its map folder (``store.map_arrays``) at ``folder``, atomically;
    a folder already holding the current signature is left as it is. Returns the folder."""
    signature = map_signature(store, table)
    if map_arrays.open_map_arrays(folder, signature) is not None:
        return folder
    md = project_table(store, table, engine)
    n = len(md.ids)
    flat_x = np.ascontiguousarray(md.x).reshape(-1)
    rows, axis = defined_points(flat_x, n, AXES, None, partial=bool(np.isnan(flat_x).any()))
    flat_y = np.ascontiguousarray(md.y).reshape(-1)
    keys = rows.astype(np.int64) * 3 + (axis.astype(np.int64) - 1)
    x, y, rows, axis, starts = banded_points(flat_x.take(keys), flat_y.take(keys), rows, axis)
    del keys
    ok = ~(np.isnan(x) | np.isnan(y))  # the points any region can hold (as a region's count)
    seen = np.zeros(n, bool)
    seen[rows[ok]] = True
    bounds = [float(f(a)) for a in (x, y) for f in (np.min, np.max)] if x.size else [0.0] * 4
    meta = {
        "signature": signature,
        "n_molecules": n,
        "n_points": int(x.size),
        "whole": [int(ok.sum()), int(seen.sum())],
        "bounds": bounds,
        "band_starts": starts.tolist(),
    }
    arrays = {"x": md.x, "y": md.y, "degenerate": md.degenerate}
    view = {"x": x, "y": y, "rows": rows, "axis": axis}
    log.info("writing the map arrays of %s [%s] %s to %s", store.dataset_id, store.key, table, folder)
    return map_arrays.write_map_arrays(folder, arrays, view, md.ids, meta)


def write_maps(store: ResultStore, engine=None, tables=TABLES) -> list[Path]:
    """The map stage of a result: both tables' map folders in the result folder (``orientscope map``)."""
    return [write_map(store, table, map_arrays.store_map_folder(store.dir, table), engine) for table in tables]
