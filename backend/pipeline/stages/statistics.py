"""Stage "statistics": KL to uniform, reference orientation, KS test, angle histogram."""

from __future__ import annotations

from orientscope.pipeline.stage import Stage, StageContext, StageOutput
from orientscope.science.so3_partial import kl_summary
from orientscope.science.so3_stats import reference_and_ks

K_NEIGHBOURS = 5
N_BINS = 60


def _summary(frames, seed: int) -> dict:
    """Reference, KS and histogram as before; KL, its sign-invariant variant and ``kl_at_n`` from the
    estimators the sharded pipeline uses, so sets of any layout and size compare."""
    return {**reference_and_ks(frames.rotations, seed, N_BINS), **kl_summary(frames.quaternions, seed, K_NEIGHBOURS)}


def run(ctx: StageContext) -> StageOutput:
    n = ctx.mols.n_molecules
    if n <= K_NEIGHBOURS + 1:
        return StageOutput(
            skipped=f"orientation statistics (KL, KS) need more than {K_NEIGHBOURS + 1} molecules, got {n}"
        )
    ctx.progress(0.1, "orientation statistics of the stored poses")
    original = _summary(ctx.frames("original"), ctx.seed)
    ctx.progress(0.55, "orientation statistics of the control")
    control = _summary(ctx.frames("control"), ctx.seed)
    ref_id = str(ctx.mols.ids[original["reference_index"]])
    original["reference_molecule"] = ref_id
    control["reference_molecule"] = str(ctx.mols.ids[control["reference_index"]])
    return StageOutput(
        report=original,
        control=control,
        settings={
            "k": K_NEIGHBOURS,
            "bins": N_BINS,
            "reference_bandwidth_rad": 0.5,
            "kl_ci": "the expected estimate at this N: the null law's margins or the spread over half subsamples",
            "kl_at_n": "mean k-NN KL over seeded disjoint subsamples of 100,000 (see kl_at_n.method)",
        },
    )


STAGE = Stage("statistics", run, requires=("frames",), description="KL, KS and reference orientation")
