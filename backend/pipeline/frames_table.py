"""Frames <-> the per-molecule orientations table (schema in backend/core/orientations_schema.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from orientscope.core.orientations_schema import (
    AXIS_COLUMN,
    C_COLUMNS,
    EV_COLUMNS,
    ORIENTATION_COLUMN,
    Q_COLUMNS,
    R_COLUMNS,
)
from orientscope.science.frames import Frames, orientation_of
from orientscope.science.sphere import axes_lonlat_deg


def frames_to_table(ids: np.ndarray, frames: Frames) -> pd.DataFrame:
    lon, lat = axes_lonlat_deg(frames.rotations)
    data = {"id": np.asarray(ids).astype(str)}
    data.update(dict(zip(R_COLUMNS, frames.rotations.reshape(-1, 9).T, strict=False)))
    data.update(dict(zip(Q_COLUMNS, frames.quaternions.T, strict=False)))
    data.update(dict(zip(EV_COLUMNS, frames.eigenvalues.T, strict=False)))
    data.update(dict(zip(C_COLUMNS, frames.centroids.T, strict=False)))
    data["degenerate"] = frames.degenerate
    data["reason"] = frames.reasons.astype(str)
    data["symmetry"] = frames.symmetry.astype(str)
    data[ORIENTATION_COLUMN], data[AXIS_COLUMN] = orientation_of(frames.symmetry)
    for a in range(3):
        data[f"lon{a + 1}"] = lon[:, a]
        data[f"lat{a + 1}"] = lat[:, a]
    return pd.DataFrame(data)


def frames_from_table(df: pd.DataFrame) -> Frames:
    return Frames(
        rotations=df[R_COLUMNS].to_numpy(np.float64).reshape(-1, 3, 3),
        eigenvalues=df[EV_COLUMNS].to_numpy(np.float64),
        quaternions=df[Q_COLUMNS].to_numpy(np.float64),
        centroids=df[C_COLUMNS].to_numpy(np.float64),
        degenerate=df["degenerate"].to_numpy(bool),
        reasons=df["reason"].to_numpy(str),
        # A table written before the symmetry column: the kind follows from the reasons.
        symmetry=df["symmetry"].to_numpy(str) if "symmetry" in df else None,
    )
