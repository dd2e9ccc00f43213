"""Stage "frames": canonical frames of the stored poses and of the control copy."""

from __future__ import annotations

import numpy as np

from orientscope.pipeline.frames_table import frames_to_table
from orientscope.pipeline.stage import Stage, StageContext, StageOutput
from orientscope.science.frames import compute_frames
from orientscope.science.rotations import rotate_molecules

FRAME_OPTIONS = {"pca": "pca", "pca-mass": "pca-mass", "inertia": "inertia"}


def degenerate_summary(frames) -> dict:
    counts: dict[str, int] = {}
    for reasons in frames.reasons[frames.degenerate]:
        for code in reasons.split(";"):
            counts[code] = counts.get(code, 0) + 1
    return {"n_degenerate": int(frames.degenerate.sum()), "degenerate_reasons": counts}


def run(ctx: StageContext) -> StageOutput:
    mols, params = ctx.mols, ctx.params
    ctx.progress(0.05, "frames of the stored poses")
    frames = compute_frames(
        mols.positions_angstrom, mols.offsets, mols.atomic_numbers, method=params["frame"], sign_rule=params["sign"]
    )
    ctx.progress(0.5, "rotating the control copy")
    rotated = rotate_molecules(mols.positions_angstrom, mols.offsets, ctx.control_rotations)
    ctx.progress(0.6, "frames of the control copy")
    control = compute_frames(
        rotated, mols.offsets, mols.atomic_numbers, method=params["frame"], sign_rule=params["sign"]
    )
    ctx.set_frames("original", frames)
    ctx.set_frames("control", control)
    ctx.progress(0.9, "writing frames")
    n_atoms = mols.n_atoms
    report = {"n_molecules": mols.n_molecules, "n_atoms_total": int(n_atoms.sum()), **degenerate_summary(frames)}
    report["atoms_per_molecule"] = {
        "min": int(n_atoms.min()),
        "median": float(np.median(n_atoms)),
        "max": int(n_atoms.max()),
    }
    return StageOutput(
        report=report,
        control=degenerate_summary(control),
        tables={"original": frames_to_table(mols.ids, frames), "control": frames_to_table(mols.ids, control)},
        settings={
            "frame": params["frame"],
            "sign_rule": params["sign"],
            "control_seed": "derived_seed(seed, 'control')",
        },
    )


STAGE = Stage("frames", run, description="canonical frames (stored poses and random-rotation control)")
