"""Run the pipeline stages for one (dataset, parameters) and store the results."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from orientscope.core.dataset import MoleculeSet, select_rows
from orientscope.core.errors import NotFoundError
from orientscope.core.progress import Progress, scaled
from orientscope.core.settings import DEFAULT_SEED, validate_id
from orientscope.pipeline.builtin import BUILTIN
from orientscope.pipeline.engine import Engine, choose_cluster, parse_cluster
from orientscope.pipeline.migrate import migrate_dataset
from orientscope.pipeline.sharded import precompute_sharded
from orientscope.pipeline.stage import StageContext
from orientscope.pipeline.stages import STAGES, stage_by_name
from orientscope.science.frames import FRAME_METHODS, SIGN_RULES
from orientscope.store import datasets as ds
from orientscope.store.results import ResultStore
from orientscope.store.shards import is_sharded, save_sharded

log = logging.getLogger(__name__)

MIGRATE_SHARE = 0.2  # of the progress bar, when a single-folder dataset is migrated first


def make_params(frame: str = "pca", sign: str = "max", seed: int = DEFAULT_SEED, limit: int | None = None) -> dict:
    if frame not in FRAME_METHODS:
        raise ValueError(f"unknown frame {frame!r}; expected one of {FRAME_METHODS}")
    if sign not in SIGN_RULES:
        raise ValueError(f"unknown sign rule {sign!r}; expected one of {SIGN_RULES}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    return {"frame": frame, "sign": sign, "seed": int(seed), "limit": limit}


def ensure_dataset(data_dir: Path, dataset_id: str) -> dict:
    """Meta of a stored dataset; built-in datasets are materialised on first use."""
    validate_id(dataset_id)
    if ds.has_dataset(data_dir, dataset_id):
        return ds.read_meta(data_dir, dataset_id)
    if dataset_id in BUILTIN:
        name, source, loader = BUILTIN[dataset_id]
        log.info("materialising built-in dataset %s", dataset_id)
        return save_sharded(data_dir, dataset_id, loader(), name=name, source=source, extra={"builtin": True})
    raise NotFoundError(
        f"unknown dataset {dataset_id!r}; known: {sorted(set(ds.list_dataset_ids(data_dir)) | set(BUILTIN))}"
    )


def load_for_params(data_dir: Path, dataset_id: str, params: dict) -> MoleculeSet:
    mols = ds.load_dataset(data_dir, dataset_id)
    if params.get("limit"):
        mols = mols.subset(select_rows(mols.n_molecules, params["limit"]))
    return mols


def precompute(
    data_dir: Path,
    dataset_id: str,
    params: dict,
    stages: list[str] | None = None,
    force: bool = False,
    progress: Progress | None = None,
    cluster: str | None = None,
    engine: Engine | None = None,
    migrate: bool = False,
) -> ResultStore:
    """Compute every missing stage (or ``stages``) and mark the result active.

    ``progress`` hears the fraction of all stages to run, with each stage's name.
    ``migrate`` first turns a dataset of the single-folder layout into a sharded
    one (its stored results re-cut, not recomputed; see ``pipeline.migrate``);
    a ``limit`` run reads its rows into memory and runs in this process.
    A sharded dataset runs shard by shard on the engine that ``cluster`` (else
    ``$ORIENTSCOPE_CLUSTER``, else the dataset's size) picks, or on ``engine``
    if one is already running; a single-folder dataset runs in this process.
    """
    meta = ensure_dataset(data_dir, dataset_id)
    if migrate and not is_sharded(meta):
        log.info("%s is in the single-folder layout: migrating it to shards first", dataset_id)
        meta = migrate_dataset(data_dir, dataset_id, progress=scaled(progress, 0.0, MIGRATE_SHARE))
        progress = scaled(progress, MIGRATE_SHARE, 1.0) if progress else None
    store = ResultStore(data_dir, dataset_id, params)
    wanted = [stage_by_name(n) for n in stages] if stages else list(STAGES)
    # A --limit run takes a subset small enough for memory.
    if is_sharded(meta) and not params.get("limit"):
        spec = choose_cluster(cluster, int(meta["n_molecules"]))
        with store.lock():
            todo = [s.name for s in wanted if force or not store.completed(s.name)]
            if todo and engine is not None:
                precompute_sharded(data_dir, dataset_id, params, engine, store, todo, progress)
            elif todo:
                with Engine(spec) as started:
                    precompute_sharded(data_dir, dataset_id, params, started, store, todo, progress)
            ds.update_meta(data_dir, dataset_id, active_result=store.key, active_params=params)
        return store
    if cluster:
        parse_cluster(cluster)  # a bad value is an error even where it does not apply
    with store.lock():
        todo = [s for s in wanted if force or not store.completed(s.name)]
        mols = load_for_params(data_dir, dataset_id, params) if todo else None
        for number, stage in enumerate(todo, 1):
            missing = [r for r in stage.requires if not store.completed(r)]
            if missing:
                raise RuntimeError(f"stage {stage.name!r} needs {missing} first")
            notify = scaled(progress, (number - 1) / len(todo), number / len(todo), stage=stage.name)
            ctx = StageContext(data_dir, dataset_id, params, mols, store, notify)
            notify(0.0, f"starting (stage {number} of {len(todo)})")
            t0 = time.perf_counter()
            out = stage.run(ctx)
            seconds = time.perf_counter() - t0
            skipped = out.skipped_stages(stage.name)
            store.write_stage(stage.name, out.section(), out.tables, seconds, out.settings, skipped)
            for what, reason in skipped.items():
                log.info("%s/%s %s skipped: %s", dataset_id, store.key, what, reason)
            done = f"skipped: {out.skipped}" if out.skipped else f"done in {seconds:.1f} s"
            notify(1.0, done)
            log.info("%s/%s stage %s done in %.2f s", dataset_id, store.key, stage.name, seconds)
        ds.update_meta(data_dir, dataset_id, active_result=store.key, active_params=params)
    return store
