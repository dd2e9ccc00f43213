"""Build a dataset folder in private and publish it into the store in one rename.

Everything is built in a private staging folder
(``<data_dir>/jobs/.staging/<id>-<nonce>/``, a data dir of its own) and the
finished dataset folder is renamed into ``<data_dir>/datasets/`` only once all
of it has been written, so a failed build never leaves a half-made dataset and
never touches an existing one. Ingests, uploads and migrations all go this way.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from orientscope.core.errors import DatasetError, OrientScopeError
from orientscope.core.progress import Progress, quiet
from orientscope.store import datasets as ds
from orientscope.store.atomic import dumps_json, remove_temporaries, swap_dirs

log = logging.getLogger(__name__)
_id_lock = threading.Lock()


def staging_root(data_dir: Path) -> Path:
    return Path(data_dir) / "jobs" / ".staging"


def resume_key(files: list[Path], settings: list) -> str:
    """A name for the build of local ``files`` with ``settings`` (every option that changes what is built):
    a digest of both and of the files' paths, sizes and modification times."""
    stats = [(str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
    return hashlib.sha256(dumps_json([stats, settings]).encode()).hexdigest()[:16]


def staging_dir(data_dir: Path, dataset_id: str, resume: str) -> Path:
    """The staging folder of a resumable build of ``dataset_id`` (see :func:`staging`)."""
    return staging_root(data_dir) / f"{dataset_id}-{resume}"


@contextmanager
def staging(data_dir: Path, dataset_id: str, replace: bool = False, resume: str | None = None) -> Iterator[Path]:
    """A private data dir to build ``dataset_id`` in, removed afterwards.

    DatasetError if the id is taken, unless ``replace`` (a new build of an existing dataset, see :func:`publish`).
    ``resume`` names a build that may run again (a digest of its inputs): its folder is named by it and
    kept when the build is killed or fails for another reason than its input (a lost worker, a full disk),
    so that the next build of that name takes over the stored molecules and the finished shards
    (``pipeline.resume``). A second build of the same name waits for the first (a lock in the folder);
    it then finds the folder gone and builds afresh.
    """
    if not replace and ds.dataset_dir(data_dir, dataset_id).exists():
        raise DatasetError(f"dataset {dataset_id!r} already exists; choose another name or delete it first")
    if not resume:
        stage_dir = staging_root(data_dir) / f"{dataset_id}-{uuid.uuid4().hex[:8]}"
        try:
            yield stage_dir
        finally:
            shutil.rmtree(stage_dir, ignore_errors=True)
        return
    stage_dir = staging_dir(data_dir, dataset_id, resume)
    with ds.file_lock(stage_dir / ".lock"):
        try:
            yield stage_dir
        except (OrientScopeError, ValueError):  # wrong input, or cancelled: nothing for a next attempt
            shutil.rmtree(stage_dir, ignore_errors=True)
            raise
        shutil.rmtree(stage_dir, ignore_errors=True)  # any other failure leaves the folder to the next attempt


def publish(
    stage_dir: Path, data_dir: Path, dataset_id: str, progress: Progress | None = None, replace: bool = False
) -> dict:
    """Rename the finished dataset from ``stage_dir`` into the store; its meta.

    Never over another dataset, unless ``replace``: then the new folder and the
    existing one swap places in one atomic exchange (readers see the old dataset
    or the new one, complete), and the old one is removed with ``stage_dir``.
    The caller holds :func:`~orientscope.store.datasets.dataset_lock` when replacing.
    """
    final = ds.dataset_dir(data_dir, dataset_id)
    final.parent.mkdir(parents=True, exist_ok=True)
    built = ds.dataset_dir(stage_dir, dataset_id)
    left = remove_temporaries(built)  # a resumed build holds what its killed predecessor was writing when it died
    if left:
        log.info("removed %d temporary file(s) a killed build of %r left", len(left), dataset_id)
    with _id_lock:
        if replace:
            if not ds.has_dataset(data_dir, dataset_id):
                raise DatasetError(f"dataset {dataset_id!r} was deleted while it was rebuilt; nothing was written")
            swap_dirs(built, final)  # fails, changing nothing, if it is deleted right now
        elif final.exists():
            raise DatasetError(f"dataset {dataset_id!r} appeared while ingesting; nothing was overwritten")
        else:
            os.rename(built, final)
    (progress or quiet)(1.0, f"dataset {dataset_id!r} ready", "done")
    return ds.read_meta(data_dir, dataset_id)
