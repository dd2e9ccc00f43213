"""Stores of constructed molecules, computed as the symmetry tests compute them (seed 5), and their reports."""

from __future__ import annotations

import numpy as np
import pytest

from orientscope.core.dataset import from_molecules
from orientscope.pipeline.precompute import make_params, precompute
from orientscope.services.report import build_report
from orientscope.store.shards import save_sharded
from tests.molecules import asymmetric

PARAMS = make_params(seed=5)


def store_constructed(data_dir, name: str, mols, shard_size: int | None = None, cluster: str = "in-process") -> dict:
    """Store ``mols`` (a list of (atomic numbers, positions)) as dataset ``name``, computed with PARAMS; its report."""
    kw = {} if shard_size is None else {"shard_size": shard_size}
    save_sharded(data_dir, name, from_molecules(mols), name=name, source="constructed", **kw)
    precompute(data_dir, name, PARAMS, cluster=cluster)
    return build_report(data_dir, name, PARAMS)


def store_a_failing_control(data_dir) -> dict:
    """Store "forced": an aligned set whose control is forced to be the set itself (no rotation), so that the
    self-check must fail; its report."""
    from orientscope.pipeline import shard_models, shard_stages
    from orientscope.science import counter_rng

    def no_turn_for_the_control(seed, stream, index):
        out = counter_rng.haar_rotations(seed, stream, index)
        if stream == "control":
            out[:] = np.eye(3)
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(shard_stages, "haar_rotations", no_turn_for_the_control)
        mp.setattr(shard_models, "haar_rotations", no_turn_for_the_control)
        return store_constructed(data_dir, "forced", [asymmetric(3000 + i) for i in range(120)])
