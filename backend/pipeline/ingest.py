"""Ingest: load a user's file → store it as a dataset → run every pipeline stage.

The dataset is built in a private staging folder and published only once the
whole pipeline has succeeded (``orientscope.pipeline.staging``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, replace
from pathlib import Path

from orientscope.core.dataset import check_frame_dependent
from orientscope.core.limits import Limits
from orientscope.core.progress import Progress, quiet, scaled
from orientscope.core.settings import display_name, slugify, validate_id
from orientscope.loaders.base import MAX_PROBLEMS_KEPT, Loaded
from orientscope.loaders.detect import load_path
from orientscope.pipeline.builtin import BUILTIN
from orientscope.pipeline.engine import Engine
from orientscope.pipeline.staging import publish, resume_key, staging, staging_root
from orientscope.store import datasets as ds
from orientscope.store.shards import save_sharded

log = logging.getLogger(__name__)

LOAD_SHARE = 0.3  # fraction of the progress bar given to reading the file
SAVE_SHARE = 0.05


def new_dataset_id(data_dir: Path, name: str, reserved: set[str] | frozenset[str] = frozenset()) -> str:
    """A free dataset id derived from ``name`` (``-2``, ``-3`` ... appended if taken)."""
    base = slugify(name)[:58]
    taken = set(ds.list_dataset_ids(data_dir)) | set(BUILTIN) | set(reserved)
    candidate, k = base, 1
    while candidate in taken or ds.dataset_dir(data_dir, candidate).exists():
        k += 1
        candidate = f"{base}-{k}"
    return validate_id(candidate)


def ingest_meta(
    loaded_format: str,
    n_skipped: int,
    problems: list,
    strict: bool | None = None,
    warnings: list | tuple = (),
    tags: dict | None = None,
    **extra,
) -> dict:
    """The meta fields every ingested dataset records about its reading (one file or many).

    ``warnings``: what was read differently from the file (renamed ids and properties, isotopes);
    ``tags``: the server's own tags its records carried (``pose``, ``units``, ``dataset`` -> values).
    """
    meta = {
        "format": loaded_format,
        "n_skipped": int(n_skipped),
        "problems": list(problems)[:MAX_PROBLEMS_KEPT],
        "warnings": list(warnings),
        "ingested": True,
    }
    if tags:
        meta["file_tags"] = dict(tags)
    if strict is not None:
        meta["strict"] = bool(strict)
    return {**meta, **extra}


def loaded_meta(loaded: Loaded) -> dict:
    """:func:`ingest_meta` of one loaded file."""
    return ingest_meta(loaded.format, loaded.n_skipped, loaded.problems, warnings=loaded.warnings, tags=loaded.tags)


def store_and_precompute(
    data_dir: Path,
    dataset_id: str,
    loaded: Loaded,
    name: str,
    source: str,
    extra: dict | None = None,
    progress: Progress | None = None,
    frame_dependent: Iterable[str] = (),
    engine_for: Callable[[int], Engine] | None = None,
    resume: str | None = None,
) -> dict:
    """Save ``loaded`` as ``dataset_id`` and run all stages with the default parameters, atomically
    (see module docstring).

    ``frame_dependent`` names properties whose values change with the lab frame, in
    addition to those the loader declares; they go into the dataset's metadata.
    ``engine_for(n_molecules)`` gives a running engine to share (a server's jobs
    do); without it, one is started for this run. ``resume`` names a build that an
    interrupted earlier attempt may have begun: it takes over the molecules and
    shards that attempt stored (see :func:`~orientscope.pipeline.staging.staging`).
    """
    data_dir = Path(data_dir)
    validate_id(dataset_id)
    notify = progress or quiet
    # Imported here: the stages pull in scikit-learn and RDKit, which the API
    # server should not load just to list jobs.
    from orientscope.pipeline.precompute import make_params, precompute

    with staging(data_dir, dataset_id, resume=resume) as stage_dir:
        mols = loaded.mols
        if ds.has_dataset(stage_dir, dataset_id):  # stored by an interrupted attempt (the meta file is written last)
            notify(LOAD_SHARE, f"{mols.n_molecules:,} molecules stored by the interrupted attempt", "save")
        else:
            notify(LOAD_SHARE, f"storing {mols.n_molecules:,} molecules", "save")
            meta_extra = {**loaded_meta(loaded), **(extra or {})}
            if frame_dependent:
                declared = check_frame_dependent(frame_dependent, mols.properties.columns)
                mols = replace(mols, frame_dependent=mols.frame_dependent | declared)
            save_sharded(stage_dir, dataset_id, mols, name=name, source=source, extra=meta_extra)
        engine = engine_for(mols.n_molecules) if engine_for else None
        on_stages = scaled(progress, LOAD_SHARE + SAVE_SHARE, 1.0)
        precompute(stage_dir, dataset_id, make_params(), progress=on_stages, engine=engine)
        return publish(stage_dir, data_dir, dataset_id, progress)


def ingest_file(
    data_dir: Path,
    path: Path,
    name: str,
    fmt: str = "auto",
    strict: bool = False,
    dataset_id: str | None = None,
    limits: Limits | None = None,
    progress: Progress | None = None,
    original_name: str | None = None,
    frame_dependent: Iterable[str] = (),
    engine_for: Callable[[int], Engine] | None = None,
    resume: str | None = None,
    format_options: Mapping[str, str] | None = None,
) -> dict:
    """Load ``path`` (any supported format or archive), store it and run every stage; its meta.

    ``frame_dependent``, ``engine_for`` and ``resume``: see :func:`store_and_precompute`; ``resume``
    defaults to the file's path, size and modification time with every option. ``format_options``: the
    format's reading options (e.g. the CCD's ``coordinates``), recorded in the meta.
    """
    data_dir = Path(data_dir)
    dataset_id = dataset_id or new_dataset_id(data_dir, name)
    limits = limits or Limits.from_env()
    format_options = dict(format_options or {})
    options = [name, fmt, strict, asdict(limits), sorted(frame_dependent), original_name]
    options += [sorted(format_options.items())] if format_options else []
    resume = resume or resume_key([Path(path)], options)
    (progress or quiet)(0.0, f"reading {original_name or Path(path).name}", "load")
    staging_root(data_dir).mkdir(parents=True, exist_ok=True)
    loaded = load_path(
        path,
        fmt,
        strict=strict,
        limits=limits,
        progress=scaled(progress, 0.0, LOAD_SHARE, stage="load"),
        workdir=staging_root(data_dir),
        options=format_options,
    )
    source = f"uploaded {original_name or Path(path).name} ({loaded.format})"
    extra = {"original_filename": original_name or Path(path).name, "strict": strict}
    if format_options:
        extra["format_options"] = format_options
    return store_and_precompute(
        data_dir, dataset_id, loaded, name, source, extra, progress, frame_dependent, engine_for, resume
    )


def generate_dataset(
    data_dir: Path,
    smiles_file: Path,
    name: str,
    seed: int = 0,
    random_coords: bool = False,
    progress: Progress | None = None,
) -> dict:
    """Embed a SMILES file with RDKit ETKDG (seeded), store it and run every stage; its meta."""
    data_dir = Path(data_dir)
    dataset_id = new_dataset_id(data_dir, name)
    from orientscope.loaders.rdkit_generated import generate

    loaded = generate(
        Path(smiles_file),
        seed=seed,
        random_coords=random_coords,
        limits=Limits.from_env(),
        progress=scaled(progress, 0.0, LOAD_SHARE, stage="load"),
    )
    how = "useRandomCoords=True" if random_coords else "default embedding"
    source = f"RDKit ETKDGv3 ({how}, randomSeed={seed}) from {Path(smiles_file).name}"
    extra = {"generator": {"method": "ETKDGv3", "random_coords": random_coords, "seed": seed}}
    return store_and_precompute(data_dir, dataset_id, loaded, name, source, extra, progress)


def rename_dataset(data_dir: Path, dataset_id: str, name: str) -> dict:
    """Change a dataset's display name (its id, and so its URLs, stay the same)."""
    return ds.update_meta(data_dir, dataset_id, name=display_name(name))


def delete_dataset(data_dir: Path, dataset_id: str) -> None:
    """Remove one dataset's folder; other datasets are untouched."""
    ds.delete_dataset(data_dir, dataset_id)
