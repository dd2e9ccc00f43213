"""The pipeline over shards: each stage maps per-shard tasks on the engine and merges their results.

The frames and statistics stages run per shard (see shard_stages.py), and so
does the models stage (shard_models.py, shard_regression.py) and the
chemistry stage (shard_chemistry.py). Each stage's section and its
``engine`` (where it ran, how many workers) go into the result's manifest,
which is written last.

Every pass goes through ``pipeline.resume``: a re-run after a crash takes over
the per-shard tasks the interrupted run finished, and the manifest records how
many shards of each stage it reused.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from orientscope.core.numbers import format_count
from orientscope.core.progress import Progress, scaled
from orientscope.pipeline.engine import Engine
from orientscope.pipeline.resume import ResumingEngine
from orientscope.pipeline.shard_chemistry import run_chemistry
from orientscope.pipeline.shard_models import run_models
from orientscope.pipeline.shard_stages import (
    K_NEIGHBOURS,
    WHICH,
    AngleJob,
    KernelJob,
    RegisteredJob,
    ShardJob,
    angle_partial,
    frames_shard,
    kernel_fraction,
    kernel_partial,
    kl_jobs,
    kl_part_task,
    merge_candidates,
    merge_frames,
    merge_kl,
    merge_orientation,
    merge_registered,
    orientation_partial,
    reference_candidates,
    registered_partial,
    statistics_section,
    too_few_full_frames,
)
from orientscope.pipeline.stage import STAGE_RULES, StageOutput
from orientscope.science import statistics_registry
from orientscope.science.so3_partial import KL_AT_N
from orientscope.store.datasets import read_meta
from orientscope.store.results import ResultStore
from orientscope.store.shards import shard_refs

log = logging.getLogger(__name__)


def _frames(engine: Engine, jobs: list[ShardJob], params: dict, say) -> StageOutput:
    return merge_frames(engine.map(frames_shard, jobs, say("frames of")), params)


def _statistics(engine: Engine, jobs: list[ShardJob], params: dict, say) -> StageOutput:
    n = sum(j.ref.n_molecules for j in jobs)
    if n <= K_NEIGHBOURS + 1:
        return StageOutput(
            skipped=f"orientation statistics (KL, KS) need more than {K_NEIGHBOURS + 1} molecules, got {n}"
        )
    seed = int(params["seed"])
    orientation = merge_orientation(engine.map(orientation_partial, jobs, say("orientation classes:", 0.0, 0.05)))
    registered = _registered_statistics(engine, jobs, say)
    n_full = {which: orientation[which]["n_full"] for which in WHICH}
    too_few = too_few_full_frames(n_full)
    if too_few:
        return statistics_section(orientation, so3_skipped=too_few, registered=registered)
    candidates = merge_candidates(
        engine.map(reference_candidates, jobs, say("reference candidates:", 0.05, 0.15)), seed
    )
    if any(len(candidates[which]["index"]) == 0 for which in WHICH):  # half A drew no full frame
        return statistics_section(
            orientation, so3_skipped="no molecule with a full frame fell in half A", registered=registered
        )
    cand_q = {which: candidates[which]["frames"][:, :4] for which in WHICH}
    fraction = kernel_fraction(max(n_full.values()))
    kernels = engine.map(kernel_partial, [KernelJob(j, cand_q, fraction) for j in jobs], say("kernel sums:", 0.15, 0.5))
    best = {which: sum(k[which] for k in kernels).argmax() for which in WHICH}
    reference = {which: candidates[which]["frames"][best[which], 4:].reshape(3, 3) for which in WHICH}
    angles = engine.map(
        angle_partial, [AngleJob(j, reference) for j in jobs], say("angles to the reference:", 0.5, 0.6)
    )
    limits = params.get("kl_limits") or {}  # make_params' kl_limits: read here, they travel inside the tasks
    parts = kl_jobs(jobs, n_full, limits)
    fits = engine.map(kl_part_task, parts, say("k-NN KL fits (original, control):", 0.6, 1.0))
    kls = merge_kl(parts, fits, n_full, limits.get("at_n", KL_AT_N))
    return statistics_section(orientation, candidates, best, reference, angles, kls, registered=registered)


def _registered_statistics(engine: Engine, jobs: list[ShardJob], say) -> dict:
    """Per orientation set, the fields of every registered statistic with callable per-shard and merge functions
    (``science.statistics_registry``): one engine pass per statistic, between the orientation classes and the
    reference candidates."""
    out: dict = {which: {} for which in WHICH}
    for stat in statistics_registry.generic("statistics"):
        parts = engine.map(
            registered_partial, [RegisteredJob(j, stat.key) for j in jobs], say(f"{stat.key}:", 0.05, 0.05)
        )
        for which, fields in merge_registered(stat.key, parts).items():
            out[which].update(fields)
    return out


# In pipeline order: the later stages read the frames.
RUNNERS = {"frames": _frames, "statistics": _statistics, "chemistry": run_chemistry, "models": run_models}
STAGES = tuple(RUNNERS)


def precompute_sharded(
    data_dir: Path,
    dataset_id: str,
    params: dict,
    engine: Engine,
    store: ResultStore,
    stages: list[str],
    progress: Progress | None = None,
    reuse: bool = True,
) -> None:
    """Run ``stages`` (names, in pipeline order) shard by shard on ``engine``; the caller holds the lock.

    ``reuse``: take over the per-shard tasks an interrupted run of this result finished (see ``pipeline.resume``).
    """
    meta = read_meta(data_dir, dataset_id)
    jobs = [
        ShardJob(str(data_dir), dataset_id, ref, dict(params), str(store.dir))
        for ref in shard_refs(data_dir, dataset_id, meta)
    ]
    for number, name in enumerate(stages, 1):
        notify = scaled(progress, (number - 1) / len(stages), number / len(stages), stage=name)
        steps = ResumingEngine(engine, store.dir, name, len(jobs), reuse)

        def say(what: str, lo: float = 0.0, hi: float = 1.0, unit: str = "shards", _notify=notify, _steps=steps):
            """A progress callback for one pass: shards (or ``unit``) done of total, on [lo, hi] of the stage."""
            return lambda done, total: _notify(
                lo + (hi - lo) * done / max(total, 1),
                f"{what} {format_count(done)}/{format_count(total)} {unit}{_steps.note()}",
            )

        notify(0.0, f"starting (stage {number} of {len(stages)})")
        t0 = time.perf_counter()
        out = RUNNERS[name](steps, jobs, params, say)
        seconds = time.perf_counter() - t0
        reused = steps.summary()
        store.write_stage(name, out.section(), out.tables, seconds, out.settings, out.skipped_stages(name),
                          engine=engine.describe(), shard_rows=out.shard_rows, reused=reused,
                          rule=STAGE_RULES[name])  # fmt: skip
        steps.clear()
        taken = f"; reused {reused['reused']} of {reused['shards']} shards" if reused["reused"] else ""
        notify(1.0, (f"skipped: {out.skipped}" if out.skipped else f"done in {seconds:.1f} s") + taken)
        log.info("%s/%s stage %s done in %.2f s on %s", dataset_id, store.key, name, seconds, engine.describe())
