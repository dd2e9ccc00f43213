"""Constructed models for the model-audit tests: features a model could see, and its predictions file.

* the invariant model sees the composition and the eigenvalues of the atoms'
  covariance (rotation invariant);
* the lab-frame model sees the composition and the share of the molecule's
  spread along the lab x axis (a direction of the lab frame).

Each is a least-squares fit on the stored poses; its "rotated" predictions are
the same fit evaluated on exported rotated copies.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from orientscope.core.dataset import MoleculeSet
from orientscope.loaders.detect import load_path
from orientscope.pipeline.export import export_dataset

ELEMENTS = (1, 6, 7, 8, 9)


def _centred_covariance(mols: MoleculeSet) -> tuple[np.ndarray, np.ndarray]:
    """(n, 3, 3) covariance of each molecule's atom positions, and (n, 5) element counts."""
    own, n = mols.molecule_index, mols.n_molecules
    pos = mols.positions_angstrom
    centroid = np.stack([np.bincount(own, pos[:, k], minlength=n) for k in range(3)], 1) / mols.n_atoms[:, None]
    x = pos - centroid[own]
    cov = np.zeros((n, 3, 3))
    np.add.at(cov, own, x[:, :, None] * x[:, None, :])
    cov /= mols.n_atoms[:, None, None]
    counts = np.stack([np.bincount(own, mols.atomic_numbers == z, minlength=n) for z in ELEMENTS], 1)
    return cov, counts


def invariant_features(mols: MoleculeSet) -> np.ndarray:
    cov, counts = _centred_covariance(mols)
    return np.column_stack([np.ones(mols.n_molecules), counts, np.linalg.eigvalsh(cov)])


def lab_x_share(mols: MoleculeSet) -> np.ndarray:
    """(n,) fraction of the molecule's spread along the lab x axis: a lab-frame direction."""
    cov, _ = _centred_covariance(mols)
    return cov[:, 0, 0] / np.trace(cov, axis1=1, axis2=2)


def lab_frame_features(mols: MoleculeSet) -> np.ndarray:
    _, counts = _centred_covariance(mols)
    return np.column_stack([np.ones(mols.n_molecules), counts, lab_x_share(mols)])


def exported_copies(data_dir: Path, dataset_id: str, out_dir: Path, copies: int) -> list[MoleculeSet]:
    """Rotated copies written by ``export --mode random --copies K --purpose audit`` (the copies an audit scores;
    NPZ keeps full precision), read back."""
    info = export_dataset(
        data_dir, dataset_id, "random", out_dir / "copies.npz", fmt="npz", copies=copies, purpose="audit"
    )
    return [load_path(Path(p), "npz").mols for p in info["paths"]]


def predictions_frame(
    stored_mols: MoleculeSet,
    copies: list[MoleculeSet],
    features,
    y: np.ndarray,
    prop: str,
    with_true: bool = False,
) -> pd.DataFrame:
    """Fit ``y`` on the stored poses' features; one row per (molecule, copy) with stored and rotated predictions."""
    x_stored = features(stored_mols)
    weights, *_ = np.linalg.lstsq(x_stored, y, rcond=None)
    frames = []
    for k, copy in enumerate(copies):
        assert list(copy.ids) == list(stored_mols.ids)  # the export keeps the original ids
        frame = pd.DataFrame({
            "id": stored_mols.ids.astype(str), "property": prop, "copy": k,
            "stored": x_stored @ weights, "rotated": features(copy) @ weights,
        })  # fmt: skip
        if with_true:
            frame["true"] = y
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)
