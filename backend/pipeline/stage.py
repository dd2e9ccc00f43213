"""The stage protocol: each pipeline stage is a function of a context that
returns a report section and per-molecule tables."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from orientscope.core.dataset import MoleculeSet
from orientscope.core.progress import Progress
from orientscope.pipeline.frames_table import frames_from_table
from orientscope.science.frames import Frames
from orientscope.science.rotations import derived_seed, random_rotations
from orientscope.store.results import ResultStore


@dataclass
class StageOutput:
    """What a stage produces.

    report : keys merged into the top level of the report object
    control : keys merged into ``report["control"]``
    tables : per-molecule tables written as Parquet
    settings : model settings and seeds recorded in the manifest
    skipped : a reason if the stage could not run on this dataset
    skipped_parts : {part: reason} for parts of the stage that could not run
        while the rest did (e.g. ``{"regression": "no numeric properties"}``)
    shard_rows : {name: rows} of per-shard tables or arrays the stage's tasks wrote themselves
    """

    report: dict = field(default_factory=dict)
    control: dict = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    skipped: str | None = None
    skipped_parts: dict[str, str] = field(default_factory=dict)
    shard_rows: dict[str, int] = field(default_factory=dict)

    def section(self) -> dict:
        """The JSON section; undefined figures (NaN, e.g. a ratio of zero counts) become null."""
        return _finite_or_null(
            {
                "report": self.report,
                "control": self.control,
                "skipped": self.skipped,
                "skipped_parts": self.skipped_parts,
            }
        )

    def skipped_stages(self, stage: str) -> dict[str, str]:
        """{"<stage>" or "<stage>.<part>": reason} for what did not run, as the manifest records it."""
        if self.skipped:
            return {stage: self.skipped}
        return {f"{stage}.{part}": reason for part, reason in self.skipped_parts.items()}


def _finite_or_null(obj):
    if isinstance(obj, dict):
        return {k: _finite_or_null(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite_or_null(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _finite_or_null(obj.tolist())
    if isinstance(obj, float | np.floating) and not np.isfinite(obj):
        return None
    return obj


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable[[StageContext], StageOutput]
    requires: tuple[str, ...] = ()
    description: str = ""


class StageContext:
    """Inputs of a stage: the molecules, the parameters and earlier stages' outputs."""

    def __init__(
        self, data_dir: Path, dataset_id: str, params: dict, mols: MoleculeSet, store: ResultStore, progress: Progress
    ):
        self.data_dir = data_dir
        self.dataset_id = dataset_id
        self.params = params
        self.mols = mols
        self.store = store
        self.progress = progress
        self._frames: dict[str, Frames] = {}

    @property
    def seed(self) -> int:
        return int(self.params["seed"])

    def section(self, stage: str) -> dict:
        return self.store.section(stage)

    def table(self, stage: str, name: str) -> pd.DataFrame:
        return self.store.table(stage, name).to_pandas()

    def frames(self, which: str = "original") -> Frames:
        """Frames of the stored poses ("original") or of the control copy ("control")."""
        if which not in self._frames:
            self._frames[which] = frames_from_table(self.table("frames", which))
        return self._frames[which]

    def set_frames(self, which: str, frames: Frames) -> None:
        self._frames[which] = frames

    @cached_property
    def control_rotations(self) -> np.ndarray:
        """(n, 3, 3) the seeded rotations that make the control copy."""
        return random_rotations(self.mols.n_molecules, derived_seed(self.seed, "control"))
