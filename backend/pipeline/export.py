"""De-biased export: write a dataset with every molecule uniformly rotated, or in its canonical pose.

* ``random``: each molecule is rotated about its centroid by a Haar-uniform
  rotation, copy 0 of the ``purpose`` stream (:mod:`orientscope.science.copy_rotations`:
  a pure function of (purpose, seed, copy, molecule id)), so the export has no
  preferred orientation; the rotations are written to a side file
  ``<out>.rotations.csv`` (id, mode, purpose, seed, r00 … r22) so the change can be undone.
* ``canonical``: every molecule in its canonical pose ``R (x - centroid)``
  (PCA frame, sign rule "max"); the side file holds each ``R``.
* ``stored``: every molecule as stored (the side file holds the identity): the
  poses a model audit compares its rotated copies with, as a file for a model
  outside Python (``rotated_copies(ds, 0)`` gives them in Python).

``purpose`` is ``augment`` by default (training data: the de-biased set and
``orientscope.rotated_copies``) or ``audit`` (the copies ``orientscope audit-model``
scores, which ``orientscope.audit_model`` hands a Python model): two streams, so
an audit never scores a pose the training fix trained on.

With ``copies=K`` (random mode only) K files ``<stem>.copy<k><suffix>`` are
written, every one keeping the original ids, plus one side file with a
``copy`` column. Copy 0 is the single random export of the same purpose and seed.
``ids`` and ``limit`` export only some molecules; as every rotation is keyed by
the molecule's id, a molecule gets the same pose whichever others are exported.

Properties are kept. Lab-frame tensor and vector properties (columns
``<name>_xx _xy _xz _yy _yz _zz`` or ``<name>_x _y _z``, such as QM9's
polarizability tensor) are rotated with the molecule (``R A Rᵀ``, ``R v``)
so they stay consistent with the new coordinates.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from orientscope.core.dataset import MoleculeSet, rows_of_ids, select_rows
from orientscope.core.orientations_schema import R_COLUMNS
from orientscope.core.progress import Progress, quiet
from orientscope.core.settings import DEFAULT_SEED, check_choice
from orientscope.loaders import registry
from orientscope.science.copy_rotations import (
    AUDIT,
    AUGMENT,
    ROTATION_RULE,
    ROTATION_RULE_VERSION,
    check_purpose,
    copy_rotations,
)
from orientscope.science.counter_rng import id_counters
from orientscope.science.frames import canonical_positions, compute_frames
from orientscope.science.rotations import rotate_molecules
from orientscope.store import datasets as ds

log = logging.getLogger(__name__)

MODES = ("random", "canonical", "stored")
# The formats export writes (every registered format with a writer): name -> (suffix, write(path, mols)).
WRITERS: dict[str, tuple[str, Callable]] = {
    f.name: (f.suffix, f.write) for f in registry.FORMATS if f.write is not None
}
EXPORT_FORMATS = tuple(WRITERS)
DEFAULT_FORMAT = registry.DEFAULT_EXPORT.name
TENSOR_SUFFIXES = ("xx", "xy", "xz", "yy", "yz", "zz")
VECTOR_SUFFIXES = ("x", "y", "z")
MAX_COPIES = 100


@dataclass(frozen=True)
class ExportRequest:
    """What to export: every parameter of an export job, in one place so that new ones are one field more.

    ``format`` None means the dataset's input format where it can be written, else extended XYZ;
    ``copies`` (random mode only) asks for that many rotated copies (:func:`export_copies`);
    ``purpose`` (random mode) picks the rotation stream, ``augment`` (training data) or ``audit``;
    ``ids`` and ``limit`` export only those molecules, or an evenly spread ``limit`` of them.
    """

    mode: str
    format: str | None = None
    seed: int = DEFAULT_SEED
    copies: int | None = None
    purpose: str = AUGMENT
    ids: tuple[str, ...] | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        check_mode(self.mode)
        check_copies(self.mode, self.copies)
        check_stream(self.mode, self.purpose)
        if self.format is not None:
            check_export_format(self.format)
        if not 0 <= self.seed < 2**63:
            raise ValueError(f"export seed {self.seed} must be between 0 and 2**63 - 1")
        if self.ids is not None:
            object.__setattr__(self, "ids", tuple(map(str, self.ids)))
            if not self.ids:
                raise ValueError("ids is empty: give at least one molecule id, or none to export every molecule")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be at least 1, got {self.limit}")

    def to_dict(self) -> dict:
        values = asdict(self)
        values["ids"] = None if self.ids is None else list(self.ids)
        return values

    @classmethod
    def from_dict(cls, values: dict) -> ExportRequest:
        return cls(**values)


def check_mode(mode: str) -> str:
    return check_choice(mode, MODES, "export mode")


def check_stream(mode: str, purpose: str) -> str:
    """``purpose`` (the stream of random rotations), refused as ``audit`` with canonical poses: those are not the
    rotated copies a model audit scores, and a user asking for them would get canonical poses instead."""
    check_purpose(purpose)
    if purpose == AUDIT and mode != "random":
        raise ValueError(
            f"purpose 'audit' gives the rotated copies a model audit scores, and {mode} poses are not rotated "
            "copies: use mode random with purpose audit (--mode random --purpose audit --copies K)"
        )
    return purpose


def check_export_format(fmt: str) -> str:
    return check_choice(fmt, EXPORT_FORMATS, "export format")


def default_format(meta: dict) -> str:
    """The dataset's input format where we can write it, else extended XYZ."""
    fmt = meta.get("format", "")
    return fmt if fmt in WRITERS else DEFAULT_FORMAT


def _groups(columns, suffixes) -> list[str]:
    bases = {c[: -len(suffixes[0]) - 1] for c in columns if c.endswith("_" + suffixes[0])}
    return sorted(b for b in bases if all(f"{b}_{s}" in columns for s in suffixes))


def _tensors_and_vectors(columns) -> tuple[list[str], list[str]]:
    """The bases of the tensor property columns, and of the vector ones among the other columns."""
    cols = set(columns)
    tensors = _groups(cols, TENSOR_SUFFIXES)
    return tensors, _groups(cols - {f"{b}_{s}" for b in tensors for s in TENSOR_SUFFIXES}, VECTOR_SUFFIXES)


def rotated_columns(columns) -> set[str]:
    """The property columns :func:`rotate_properties` turns with the molecule (tensor and vector components)."""
    tensors, vectors = _tensors_and_vectors(columns)
    return {f"{b}_{s}" for b in tensors for s in TENSOR_SUFFIXES} | {
        f"{b}_{s}" for b in vectors for s in VECTOR_SUFFIXES
    }


def frame_dependent_note(mols: MoleculeSet) -> dict:
    """The dataset's frame-dependent properties, and those the export cannot rotate (still in the old frame)."""
    not_rotated = sorted(mols.frame_dependent - rotated_columns(mols.properties.columns))
    if not_rotated:
        log.warning(
            "frame-dependent properties %s are not tensor or vector components: exported unrotated", not_rotated
        )
    return {"frame_dependent": sorted(mols.frame_dependent), "frame_dependent_not_rotated": not_rotated}


def rotate_properties(props: pd.DataFrame, rotations: np.ndarray) -> pd.DataFrame:
    """Rotate lab-frame tensor (``R A Rᵀ``) and vector (``R v``) property columns; shapes (n, 3, 3)."""
    out = props.copy()
    tensors, vectors = _tensors_and_vectors(props.columns)
    for base in tensors:
        xx, xy, xz, yy, yz, zz = (props[f"{base}_{s}"].to_numpy(np.float64) for s in TENSOR_SUFFIXES)
        a = np.stack([np.stack([xx, xy, xz], -1), np.stack([xy, yy, yz], -1), np.stack([xz, yz, zz], -1)], 1)
        b = np.einsum("nij,njk,nlk->nil", rotations, a, rotations)
        for s, (i, j) in zip(TENSOR_SUFFIXES, [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)], strict=True):
            out[f"{base}_{s}"] = b[:, i, j]
    for base in vectors:
        v = np.stack([props[f"{base}_{s}"].to_numpy(np.float64) for s in VECTOR_SUFFIXES], -1)
        w = np.einsum("nij,nj->ni", rotations, v)
        for k, s in enumerate(VECTOR_SUFFIXES):
            out[f"{base}_{s}"] = w[:, k]
    return out


def rotation_record(purpose: str, seed: int) -> dict:
    """What an export or an audit records of its rotated copies: the rule, its version, purpose and seed."""
    return {
        "rotation_rule": ROTATION_RULE,
        "rotation_rule_version": ROTATION_RULE_VERSION,
        "purpose": purpose,
        "seed": int(seed),
    }


def debias(
    mols: MoleculeSet, mode: str, seed: int = DEFAULT_SEED, copy: int = 0, purpose: str = AUGMENT
) -> tuple[MoleculeSet, np.ndarray]:
    """The re-posed molecule set and the (n, 3, 3) rotation applied to each molecule."""
    check_mode(mode)
    if mode == "random":
        rotations = copy_rotations(id_counters(mols.ids), seed, copy, purpose)
        pos = rotate_molecules(mols.positions_angstrom, mols.offsets, rotations)
    elif mode == "stored":  # nothing moves: the side file's identities say so
        return mols, np.broadcast_to(np.eye(3), (mols.n_molecules, 3, 3)).copy()
    else:
        frames = compute_frames(
            mols.positions_angstrom, mols.offsets, mols.atomic_numbers, method="pca", sign_rule="max"
        )
        rotations = frames.rotations
        pos = canonical_positions(mols.positions_angstrom, mols.offsets, frames)
    props = rotate_properties(mols.properties, rotations) if len(mols.properties.columns) else mols.properties
    return replace(mols, positions_angstrom=pos, properties=props), rotations


def rotations_table(
    ids: np.ndarray, rotations: np.ndarray, mode: str, seed: int, purpose: str | None = None
) -> pd.DataFrame:
    df = pd.DataFrame({"id": np.asarray(ids).astype(str), "mode": mode})
    if purpose is not None:
        df["purpose"] = purpose
    df["seed"] = seed
    for k, col in enumerate(R_COLUMNS):
        df[col] = rotations.reshape(-1, 9)[:, k]
    return df


def _write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # The temporary file keeps the suffix: a writer may read its kind from it (an ASE .db, .aselmdb or .json).
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{path.suffix}")
    os.close(fd)
    os.unlink(tmp)  # some writers (ASE databases) refuse to open an existing empty file
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _write_molecules(out: Path, posed: MoleculeSet, fmt: str) -> None:
    writer = WRITERS[fmt][1]
    _write_atomically(out, lambda p: writer(p, posed))


def export_molecules(
    mols: MoleculeSet,
    out: Path,
    mode: str,
    fmt: str,
    seed: int = DEFAULT_SEED,
    progress: Progress = quiet,
    purpose: str = AUGMENT,
) -> dict:
    """Write ``mols`` re-posed by ``mode`` to ``out`` in ``fmt`` plus the rotations side file."""
    check_export_format(fmt)
    out = Path(out)
    random = mode == "random"
    progress(0.2, f"re-posing {mols.n_molecules:,} molecules ({mode})", "pose")
    posed, rotations = debias(mols, mode, seed, purpose=purpose)
    progress(0.4, f"writing {out.name}", "write")
    _write_molecules(out, posed, fmt)
    progress(0.9, "writing the rotations", "write")
    side = out.with_name(out.name + ".rotations.csv")
    table = rotations_table(mols.ids, rotations, mode, seed, purpose if random else None)
    _write_atomically(side, lambda p: table.to_csv(p, index=False, float_format="%.12g"))
    return {
        "path": str(out),
        "rotations_path": str(side),
        "format": fmt,
        "mode": mode,
        "n_molecules": mols.n_molecules,
        **(rotation_record(purpose, seed) if random else {"seed": seed}),
        **frame_dependent_note(mols),
    }


def copy_path(out: Path, copy: int) -> Path:
    """Where copy ``copy`` of a multi-copy export goes: ``<stem>.copy<k><suffix>`` beside ``out``."""
    out = Path(out)
    return out.with_name(f"{out.stem}.copy{copy}{out.suffix}")


def check_copies(mode: str, copies: int | None) -> int | None:
    if copies is None:
        return None
    if mode != "random":
        raise ValueError(f"copies are rotated copies: use --mode random with --copies (got --mode {mode})")
    if not 1 <= copies <= MAX_COPIES:
        raise ValueError(f"copies must be between 1 and {MAX_COPIES}, got {copies}")
    return copies


def export_copies(
    mols: MoleculeSet,
    out: Path,
    fmt: str,
    copies: int,
    seed: int = DEFAULT_SEED,
    progress: Progress = quiet,
    purpose: str = AUGMENT,
) -> dict:
    """Write ``copies`` randomly rotated copies of ``mols`` and one rotations file with a ``copy`` column."""
    check_export_format(fmt)
    out = Path(out)
    paths, tables = [], []
    for copy in range(copies):
        progress(0.2 + 0.75 * copy / copies, f"writing copy {copy + 1} of {copies}", "write")
        posed, rotations = debias(mols, "random", seed, copy, purpose)
        path = copy_path(out, copy)
        _write_molecules(path, posed, fmt)
        paths.append(str(path))
        tables.append(rotations_table(mols.ids, rotations, "random", seed, purpose).assign(copy=copy))
    table = pd.concat(tables, ignore_index=True)
    table = table[["copy", *[c for c in table.columns if c != "copy"]]]
    side = out.with_name(out.name + ".rotations.csv")
    _write_atomically(side, lambda p: table.to_csv(p, index=False, float_format="%.12g"))
    return {
        "path": paths[0],
        "paths": paths,
        "rotations_path": str(side),
        "format": fmt,
        "mode": "random",
        "copies": copies,
        **rotation_record(purpose, seed),
        "n_molecules": mols.n_molecules,
        **frame_dependent_note(mols),
    }


def select_molecules(mols: MoleculeSet, ids=None, limit: int | None = None, what: str = "the dataset") -> MoleculeSet:
    """The molecules of ``mols`` with ``ids`` (in the set's order), then an evenly spread ``limit`` of them.

    DatasetError naming the ids ``mols`` lacks (and how many there are), or a repeated id.
    """
    rows = np.arange(mols.n_molecules)
    if ids is not None:
        rows = rows_of_ids(mols.ids, ids, what)
    if limit is not None:
        rows = rows[select_rows(len(rows), limit)]
    return mols if len(rows) == mols.n_molecules else mols.subset(rows)


def export_dataset(
    data_dir: Path,
    dataset_id: str,
    mode: str,
    out: Path,
    seed: int = DEFAULT_SEED,
    fmt: str | None = None,
    copies: int | None = None,
    progress: Progress = quiet,
    purpose: str = AUGMENT,
    ids=None,
    limit: int | None = None,
) -> dict:
    """Export a stored dataset (format: ``fmt``, else from ``out``'s suffix, else the input's, else extended XYZ).

    With ``copies`` (random mode only), that many rotated copies; see :func:`export_copies`. ``purpose``
    picks the rotation stream (random mode); ``ids`` and ``limit`` select the molecules written.
    Reads the store and writes only the export's files.
    """
    check_mode(mode)
    check_copies(mode, copies)
    check_stream(mode, purpose)
    meta = ds.read_meta(data_dir, dataset_id)
    named = registry.writer_for(Path(out))
    fmt = check_export_format(fmt) if fmt else named.name if named else default_format(meta)
    progress(0.0, f"reading {dataset_id!r}", "load")
    mols = select_molecules(ds.load_dataset(data_dir, dataset_id), ids, limit, f"dataset {dataset_id!r}")
    if copies is not None:
        return export_copies(mols, Path(out), fmt, copies, seed, progress, purpose)
    return export_molecules(mols, Path(out), mode, fmt, seed, progress, purpose)


def export_filename(dataset_id: str, mode: str, fmt: str) -> str:
    return f"{dataset_id}-{mode}{WRITERS[check_export_format(fmt)][0]}"
