"""Run the pipeline stages for one (dataset, parameters) and store the results.

There is one way to compute a stage: per-shard steps plus a merge of their
small results (``pipeline.sharded``), in this process or on a Dask cluster.
A small set is one shard of the same path; a ``--limit`` run stages its evenly
spread subset as a sharded set of its own and runs the same steps on it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import numpy as np

from orientscope.core.dataset import concat_molecule_sets, select_rows
from orientscope.core.errors import NotFoundError
from orientscope.core.progress import Progress, scaled
from orientscope.core.settings import DEFAULT_SEED, check_choice, validate_id
from orientscope.pipeline.builtin import BUILTIN
from orientscope.pipeline.engine import ClusterSpec, Engine, choose_cluster
from orientscope.pipeline.read_arrays import write_read_arrays
from orientscope.pipeline.shard_smarts import index_result, unindexed_shards
from orientscope.pipeline.sharded import STAGES, precompute_sharded
from orientscope.pipeline.smarts_jobs import smarts_job_above
from orientscope.pipeline.stage import older_rule_stages
from orientscope.pipeline.staging import staging
from orientscope.science.frames import FRAME_METHODS, SIGN_RULES
from orientscope.store import datasets as ds
from orientscope.store.results import ResultStore
from orientscope.store.shards import read_shard, save_sharded, shard_refs

log = logging.getLogger(__name__)


KL_LIMIT_NAMES = ("exact_limit", "sign_limit", "at_n")
# The share of the progress bar for the stages; the read arrays (columns, map) take the rest.
STAGES_SHARE = 0.95


def make_params(
    frame: str = "pca",
    sign: str = "max",
    seed: int = DEFAULT_SEED,
    limit: int | None = None,
    kl_limits: dict | None = None,
) -> dict:
    """The parameters of a run, which its result is stored under.

    ``kl_limits`` lowers the sizes at which the k-NN KL fits turn to subsamples (``exact_limit``,
    ``sign_limit``, ``at_n``: see :func:`~orientscope.science.so3_partial.kl_plan`), so that a small set
    reaches those paths (tests, studies of the estimator); given, they are part of the result's key.
    """
    check_choice(frame, FRAME_METHODS, "frame")
    check_choice(sign, SIGN_RULES, "sign rule")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    params = {"frame": frame, "sign": sign, "seed": int(seed), "limit": limit}
    for name, value in (kl_limits or {}).items():
        check_choice(name, KL_LIMIT_NAMES, "KL limit")
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"KL limit {name} must be a whole number >= 1, got {value!r}")
    if kl_limits:
        params["kl_limits"] = dict(sorted(kl_limits.items()))
    return params


def ensure_dataset(data_dir: Path, dataset_id: str) -> dict:
    """Meta of a stored dataset of the current layout; built-in datasets are materialised on first use.

    OldLayout (naming ``orientscope migrate``) for a dataset stored before the sharded layout.
    """
    validate_id(dataset_id)
    if ds.has_dataset(data_dir, dataset_id):
        return ds.require_current_layout(dataset_id, ds.read_meta(data_dir, dataset_id))
    if dataset_id in BUILTIN:
        name, source, loader = BUILTIN[dataset_id]
        log.info("materialising built-in dataset %s", dataset_id)
        return save_sharded(data_dir, dataset_id, loader(), name=name, source=source, extra={"builtin": True})
    raise NotFoundError(
        f"unknown dataset {dataset_id!r}; known: {sorted(set(ds.list_dataset_ids(data_dir)) | set(BUILTIN))}"
    )


def _stage_names(stages: list[str] | None) -> list[str]:
    for name in stages or ():
        check_choice(name, list(STAGES), "stage")
    return [s for s in STAGES if not stages or s in stages]


@contextmanager
def _source(data_dir: Path, dataset_id: str, meta: dict, limit: int | None) -> Iterator[Path]:
    """The data dir the shard tasks read ``dataset_id`` from: the store, or for a limit run a private
    one holding the subset's rows (read shard by shard) as a sharded set of its own."""
    if not limit or limit >= int(meta["n_molecules"]):
        yield data_dir
        return
    rows = select_rows(int(meta["n_molecules"]), limit)
    parts = []
    for ref in shard_refs(data_dir, dataset_id, meta):
        lo, hi = np.searchsorted(rows, [ref.start, ref.stop])
        if hi > lo:
            parts.append(read_shard(ref, meta).subset(rows[lo:hi] - ref.start))
    with staging(data_dir, dataset_id, replace=True) as private:
        subset = save_sharded(private, dataset_id, concat_molecule_sets(parts), meta["name"], meta["source"])
        # The stored meta (units, frame-dependent properties), with the subset's size and shards.
        ds.write_meta(private, dataset_id, {**meta, **{k: subset[k] for k in ("n_molecules", "n_atoms", "shards")}})
        yield private


def precompute(
    data_dir: Path,
    dataset_id: str,
    params: dict,
    stages: list[str] | None = None,
    force: bool = False,
    progress: Progress | None = None,
    cluster: str | None = None,
    engine: Engine | None = None,
) -> ResultStore:
    """Compute every missing stage (or ``stages``), and every one stored under an older rule
    (:func:`older_rule_stages`), write the result's read arrays (``pipeline.read_arrays``: the
    memory-mapped columns and the map), and mark the result active.

    ``progress`` hears the fraction of all stages to run, with each stage's name (the read arrays take its
    last ``1 - STAGES_SHARE``, so the fraction never goes back). A re-run after a
    crash keeps the stages the interrupted run recorded and takes over the per-shard tasks it finished
    in the others (``pipeline.resume``); ``force`` recomputes every stage and shard.
    The stages run shard by shard on ``engine`` if one is already running, else
    on the one ``cluster`` (else ``$ORIENTSCOPE_CLUSTER``, else the set's size) picks.
    """
    meta = ensure_dataset(data_dir, dataset_id)
    names = _stage_names(stages)
    limit = params.get("limit")
    spec = choose_cluster(cluster, min(int(meta["n_molecules"]), limit or int(meta["n_molecules"])))
    store = ResultStore(data_dir, dataset_id, params)
    on_stages = scaled(progress, 0.0, STAGES_SHARE) if progress else None
    with store.lock():
        older = older_rule_stages(store)
        todo = [s for s in names if force or not store.completed(s) or s in older]
        if older and not force:
            log.info("%s [%s]: recomputing %s, stored under an older rule", dataset_id, store.key, older)
        if todo and todo[0] != "frames" and not store.completed("frames"):
            raise RuntimeError(f"stage {todo[0]!r} needs ['frames'] first")
        if todo:
            started = nullcontext(engine) if engine else Engine(spec)
            with _source(data_dir, dataset_id, meta, limit) as source, started as run_on:
                precompute_sharded(source, dataset_id, params, run_on, store, todo, on_stages, reuse=not force)
        n = min(int(meta["n_molecules"]), limit or int(meta["n_molecules"]))
        _index_for_search(store, engine or spec, n, on_stages)
        if store.completed("frames"):  # what every read serves from (kept if current: a re-run writes nothing)
            write_read_arrays(data_dir, dataset_id, store, engine, scaled(progress, STAGES_SHARE, 1.0))
        ds.update_meta(data_dir, dataset_id, active_result=store.key, active_params=params)
    return store


def _index_for_search(store: ResultStore, engine: Engine | ClusterSpec, n_molecules: int, progress) -> None:
    """Keep what a SMARTS search of the result reads (``pipeline.shard_smarts``), so that the first search after
    a server start does not parse every molecule (9 s on QM9). Sets searched by background jobs (above
    ``ORIENTSCOPE_SMARTS_JOB_ABOVE``) are left as they were: their ingest does not grow."""
    todo = unindexed_shards(store.dir) if store.completed("chemistry") and n_molecules <= smarts_job_above() else []
    if not todo:
        return

    def shards_done(done: int, total: int) -> None:
        if progress:
            progress(1.0, f"SMARTS search index: {done}/{total} shards", "chemistry")

    with nullcontext(engine) if isinstance(engine, Engine) else Engine(engine) as run_on:
        index_result(run_on, store.dir, todo, shards_done)
