"""Migrate a dataset stored before the sharded layout (the single-folder one) to shards, in place and atomically.

The only reader of the old layout: every other command and the server refuse
such a dataset and name ``orientscope migrate`` (``store.datasets.require_current_layout``).

The new folder is built in a private staging data dir (``staging.staging``):
the molecules cut into shards of the configured size and every stored result
re-cut per shard (``orientscope.store.relayout``; nothing is recomputed, so every
report figure, KL and classifier result stays the same), the meta file with
the shard list written last. Under the dataset's lock, and with every result's
lock held (a running pipeline is waited for), the new folder then takes the
old one's place in one atomic exchange (``staging.publish``). Until then the
old dataset is untouched; a failed or killed migration
leaves it as it was.

:func:`write_all_read_arrays` (also run by ``orientscope migrate`` on a dataset already
sharded) gives every result stored before the read arrays its memory-mapped columns and map.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

from orientscope import __version__
from orientscope.core.errors import DatasetError
from orientscope.core.progress import Progress, quiet
from orientscope.pipeline.read_arrays import write_read_arrays
from orientscope.pipeline.staging import publish, staging
from orientscope.science.clustering import popcounts
from orientscope.store import datasets as ds
from orientscope.store.atomic import read_json
from orientscope.store.relayout import copy_other_entries, cut_molecules, cut_result
from orientscope.store.results import MANIFEST, ResultStore, all_results_locked, list_result_keys
from orientscope.store.shards import (
    FORMAT_VERSION,
    SHARDED,
    is_sharded,
    shard_array_path,
    shard_refs,
    shard_size_setting,
    write_shard_array,
)

log = logging.getLogger(__name__)

MOLECULES_SHARE = 0.5  # of the progress bar: cutting the molecules; the results take the rest


def needs_migration(data_dir: Path, dataset_id: str) -> bool:
    """True if the dataset is stored in the single-folder layout."""
    return ds.has_dataset(data_dir, dataset_id) and not is_sharded(ds.read_meta(data_dir, dataset_id))


def migrate_dataset(
    data_dir: Path, dataset_id: str, shard_size: int | None = None, progress: Progress | None = None
) -> dict:
    """Turn ``dataset_id`` into a sharded dataset of ``shard_size`` molecules per shard; its new meta.

    A dataset already sharded is left as it is. Raises DatasetError (the old
    dataset untouched) if a stored table does not match the dataset or a result
    changed while the migration ran.
    """
    data_dir = Path(data_dir)
    shard_size = shard_size_setting(shard_size)
    notify = progress or quiet
    with ds.dataset_lock(data_dir, dataset_id):
        meta = ds.read_meta(data_dir, dataset_id)
        if is_sharded(meta):
            return meta
        t0 = time.perf_counter()
        src = ds.dataset_dir(data_dir, dataset_id)
        log.info("migrating %s (%s molecules) to the sharded layout", dataset_id, meta["n_molecules"])
        notify(0.0, f"migrating {dataset_id} to the sharded layout (shards of {shard_size:,})", "migrate")
        with staging(data_dir, dataset_id, replace=True) as stage_dir:
            dst = ds.dataset_dir(stage_dir, dataset_id)

            def shards_done(done: int, total: int) -> None:
                notify(MOLECULES_SHARE * done / total, f"molecules: {done}/{total} shards", "migrate")

            shards = cut_molecules(src, dst, meta, shard_size, shards_done)
            layout = {"layout": SHARDED, "format_version": FORMAT_VERSION, "shard_size": shard_size, "shards": shards}
            refs = shard_refs(stage_dir, dataset_id, {**meta, **layout})
            keys = list_result_keys(data_dir, dataset_id)
            manifests, cut = {}, {}
            for k, key in enumerate(keys):
                manifests[key] = (src / "results" / key / MANIFEST).read_bytes()
                cut[key] = cut_result(src / "results" / key, dst / "results" / key, refs)
                if "chemistry.fingerprints" in cut[key]:
                    _write_popcounts(dst / "results" / key, refs)
                share = MOLECULES_SHARE + (1 - MOLECULES_SHARE) * (k + 1) / len(keys)
                notify(share, f"results: {k + 1}/{len(keys)} re-cut per shard", "migrate")
            copy_other_entries(src, dst)
            with all_results_locked(data_dir, dataset_id) as now:
                if now != keys or any(
                    (src / "results" / key / MANIFEST).read_bytes() != manifests[key] for key in keys
                ):
                    raise DatasetError(f"the results of {dataset_id!r} changed while it was migrated; run it again")
                # The current meta (a rename may have happened meanwhile), with the shard list; written last.
                current = read_json(src / ds.META)
                migrated = {"from": "single-folder", "at": time.time(), "version": __version__, "tables_cut": cut}
                ds.write_meta(stage_dir, dataset_id, {**current, **layout, "migrated": migrated})
                new_meta = publish(stage_dir, data_dir, dataset_id, replace=True)
        seconds = time.perf_counter() - t0
        log.info("migrated %s to %d shards in %.1f s", dataset_id, len(shards), seconds)
        notify(1.0, f"migrated {dataset_id} to {len(shards)} shards in {seconds:.1f} s", "migrate")
        return new_meta


def write_all_read_arrays(data_dir: Path, dataset_id: str, progress: Progress | None = None) -> list[str]:
    """Write every computed result's read arrays (``pipeline.read_arrays``: memory-mapped columns, map
    arrays) that are missing or stale, each under its result's lock; the keys of the results done."""
    data_dir = Path(data_dir)
    ds.require_current_layout(dataset_id, ds.read_meta(data_dir, dataset_id))
    notify = progress or quiet
    keys = list_result_keys(data_dir, dataset_id)
    done = []
    for k, key in enumerate(keys):
        manifest = read_json(ds.dataset_dir(data_dir, dataset_id) / "results" / key / MANIFEST)
        store = ResultStore(data_dir, dataset_id, manifest["params"])
        with store.lock():
            if store.completed("frames"):
                write_read_arrays(data_dir, dataset_id, store)
                done.append(key)
        notify((k + 1) / len(keys), f"results: {k + 1}/{len(keys)}", "read arrays")
    return done


def _write_popcounts(result: Path, refs: list) -> None:
    """Each shard's fingerprint bit counts, which the sharded chemistry stage writes beside its fingerprints."""
    for ref in refs:
        words = np.load(shard_array_path(result, "chemistry", "fingerprints", ref.number), mmap_mode="r")
        write_shard_array(result, "chemistry", "popcounts", ref.number, popcounts(words).astype(np.uint16))
