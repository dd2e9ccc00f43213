"""Stage "statistics": KL to uniform, reference orientation, KS test, angle histogram."""

from __future__ import annotations

from backend.pipeline.stage import Stage, StageContext, StageOutput
from backend.science.so3_stats import orientation_bias

K_NEIGHBOURS = 5
N_BOOTSTRAP = 1000
N_BINS = 60


def run(ctx: StageContext) -> StageOutput:
    n = ctx.mols.n_molecules
    if n <= K_NEIGHBOURS + 1:
        return StageOutput(
            skipped=f"orientation statistics (KL, KS) need more than {K_NEIGHBOURS + 1} molecules, got {n}"
        )
    ctx.progress(0.1, "orientation statistics of the stored poses")
    original = orientation_bias(
        ctx.frames("original").rotations, seed=ctx.seed, k=K_NEIGHBOURS, n_bootstrap=N_BOOTSTRAP, bins=N_BINS
    )
    ctx.progress(0.55, "orientation statistics of the control")
    control = orientation_bias(
        ctx.frames("control").rotations, seed=ctx.seed, k=K_NEIGHBOURS, n_bootstrap=N_BOOTSTRAP, bins=N_BINS
    )
    ref_id = str(ctx.mols.ids[original["reference_index"]])
    original["reference_molecule"] = ref_id
    control["reference_molecule"] = str(ctx.mols.ids[control["reference_index"]])
    return StageOutput(
        report=original,
        control=control,
        settings={"k": K_NEIGHBOURS, "n_bootstrap": N_BOOTSTRAP, "bins": N_BINS, "reference_bandwidth_rad": 0.5},
    )


STAGE = Stage("statistics", run, requires=("frames",), description="KL, KS and reference orientation")
