"""Synthetic sets for scale tests: QM9 molecules tiled to N, each turned by a seeded rotation.

Molecule ``g`` (global index) is QM9 row ``g mod n_qm9``, copy ``g div n_qm9``,
with id ``<qm9 id>_<copy>``, its SMILES and properties (without the
frame-dependent ones, which the rotation would invalidate). Its pose is

* ``uniform``: a Haar-uniform rotation of the QM9 pose, so the set is unbiased;
* ``qm9``: the QM9 pose turned by |N(0, blur)| about a uniform axis, so the
  set keeps QM9's alignment (every copy is turned, the first one too).

Rotations are about each molecule's centroid and are drawn from the
counter-based generator, so molecule ``g`` is the same whatever the shard size.
The output is a folder of NPZ shards (uncompressed: written at disk speed)
that the NPZ loader reads, plus ``synth.json`` written last.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from orientscope.core.dataset import MoleculeSet
from orientscope.core.settings import check_choice
from orientscope.loaders.npz import FORMAT as NPZ  # the shards are NPZ molecule files
from orientscope.science.counter_rng import axis_angle_rotations, haar_rotations, normals, unit_vectors
from orientscope.science.rotations import rotate_molecules

BIASES = ("uniform", "qm9")
DEFAULT_BLUR_DEG = 10.0
DEFAULT_SHARD_SIZE = 250_000
MANIFEST = "synth.json"


@dataclass(frozen=True)
class SynthSpec:
    n: int
    bias: str = "uniform"
    blur_deg: float = DEFAULT_BLUR_DEG
    seed: int = 0
    shard_size: int = DEFAULT_SHARD_SIZE

    def __post_init__(self) -> None:
        check_choice(self.bias, BIASES, "bias")
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")
        if self.shard_size < 1:
            raise ValueError(f"shard size must be >= 1, got {self.shard_size}")
        if not np.isfinite(self.blur_deg) or self.blur_deg < 0:
            raise ValueError(f"blur must be a finite angle >= 0 degrees, got {self.blur_deg}")


def synth_rotations(spec: SynthSpec, index: np.ndarray) -> np.ndarray:
    """(n, 3, 3) the rotation applied to molecules ``index`` (global indices)."""
    if spec.bias == "uniform":
        return haar_rotations(spec.seed, "synth:haar", index)
    axes = unit_vectors(spec.seed, "synth:axis", index)
    angles = np.abs(normals(spec.seed, "synth:angle", index)[:, 0]) * np.deg2rad(spec.blur_deg)
    return axis_angle_rotations(axes, angles)


def synth_arrays(source: MoleculeSet, spec: SynthSpec, start: int, stop: int) -> dict[str, np.ndarray]:
    """NPZ arrays (``z``, ``pos``, ``n_atoms``, ``ids``, ``smiles``, properties) of molecules [start, stop)."""
    index = np.arange(start, stop, dtype=np.int64)
    rows, copy = index % source.n_molecules, index // source.n_molecules
    counts = source.n_atoms[rows]
    offsets = np.concatenate([[0], np.cumsum(counts)])
    atom_idx = np.repeat(source.offsets[rows] - offsets[:-1], counts) + np.arange(offsets[-1])
    pos = rotate_molecules(source.positions_angstrom[atom_idx], offsets, synth_rotations(spec, index))
    arrays = {
        "z": source.atomic_numbers[atom_idx],
        "pos": pos,
        "n_atoms": counts,
        "ids": np.char.add(np.char.add(source.ids[rows], "_"), copy.astype(str)),
    }
    if source.smiles is not None:
        arrays["smiles"] = source.smiles[rows]
    for col in source.properties.columns:
        if col not in source.frame_dependent:  # lab-frame values (tensor components) would be wrong once turned
            arrays[col] = source.properties[col].to_numpy(np.float64)[rows]
    return arrays


def shard_name(number: int) -> str:
    return f"shard-{number:05d}{NPZ.suffix}"


def write_synth(
    out_dir: Path,
    spec: SynthSpec,
    source: MoleculeSet | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Write ``spec.n`` molecules to ``out_dir`` as NPZ shards; returns the manifest.

    ``source`` defaults to the whole of QM9. ``progress(shards_done, n_shards)``.
    Each shard goes to a temporary name and is renamed when complete; the
    manifest comes last, so a folder with ``synth.json`` is a whole set.
    """
    t0 = time.perf_counter()  # the whole run, reading QM9 included (it printed 0.0 s for a 3.5 s run)
    if source is None:
        from orientscope.loaders.qm9 import load_qm9

        source = load_qm9()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / MANIFEST).unlink(missing_ok=True)
    bounds = list(range(0, spec.n, spec.shard_size)) + [spec.n]
    shards = []
    for number, (start, stop) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        path = out_dir / shard_name(number)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as fh:
            np.savez(fh, **synth_arrays(source, spec, start, stop))
        os.replace(tmp, path)
        shards.append({"file": path.name, "start": start, "n_molecules": stop - start})
        if progress:
            progress(number + 1, len(bounds) - 1)
    manifest = {
        "n_molecules": spec.n,
        "bias": spec.bias,
        "blur_deg": spec.blur_deg if spec.bias == "qm9" else None,
        "seed": spec.seed,
        "shard_size": spec.shard_size,
        "source": f"QM9 tiled ({source.n_molecules} molecules), id '<qm9 id>_<copy>'",
        "rotation_streams": ["synth:haar"] if spec.bias == "uniform" else ["synth:axis", "synth:angle"],
        "shards": shards,
        "seconds": round(time.perf_counter() - t0, 3),
    }
    tmp = out_dir / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1))
    os.replace(tmp, out_dir / MANIFEST)
    return manifest
