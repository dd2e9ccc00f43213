"""Samples that ship with OrientScope, so the notebooks in ``docs/notebooks`` run from a fresh install."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

# name -> (file in orientscope/notebook/data, what it holds)
SAMPLES = {
    "qm9": (
        "qm9_sample.extxyz",
        "QM9 molecules in their stored poses (every 65th of the 130,831, in QM9's order), with the properties gap, "
        "zpve (Ha) and pose_linked (the share of each molecule's spread along the lab x axis, plus composition: "
        "a property tied to the stored pose by construction)",
    ),
}


def sample_path(name: str = "qm9") -> Path:
    """The path of a sample file shipped with OrientScope (``orientscope.read(sample_path())`` reads it)."""
    if name not in SAMPLES:
        raise ValueError(f"unknown sample {name!r}; the samples: {list(SAMPLES)}")
    path = Path(str(resources.files("orientscope.notebook") / "data" / SAMPLES[name][0]))
    if not path.is_file():
        raise FileNotFoundError(f"the sample {path} is missing from this installation of OrientScope")
    return path
