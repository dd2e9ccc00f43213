"""Ingest many input files into a sharded dataset, reading them in parallel on the engine.

Inputs (files, folders, globs) expand to a list of files in sorted path
order, which fixes the molecule order. One task per file loads it with the
ordinary loaders (same bad-record counting, ``--strict`` and per-molecule atom
limit; no cap on the total by default) and writes its molecules as shards of
at most ``shard_size``. Ids are then checked for uniqueness one hash partition
at a time, so no process holds every id. Files without ids get
``<file stem>:<index>``.

Everything is written in a private staging data dir; the meta file (the shard
list) is written last and the dataset folder is renamed into place only after
the frames and statistics stages succeeded, so a failed or killed ingest
leaves no dataset behind and never touches an existing one. The staging folder
is named by a digest of the ingest's inputs (the files' paths, sizes and
modification times, and every option), so running the same ingest again after
a failure or a kill takes over the shards it had stored and computed.
"""

from __future__ import annotations

import glob
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from orientscope.core.dataset import check_frame_dependent
from orientscope.core.errors import DatasetError, OrientScopeError
from orientscope.core.limits import Limits
from orientscope.core.progress import Progress, quiet, scaled
from orientscope.loaders import registry
from orientscope.loaders.base import merge_tags
from orientscope.loaders.detect import is_molecule_file, load_path
from orientscope.pipeline.engine import Engine, choose_cluster
from orientscope.pipeline.ingest import ingest_meta, new_dataset_id
from orientscope.pipeline.staging import publish, resume_key, staging
from orientscope.store import datasets as ds
from orientscope.store.shards import (
    FORMAT_VERSION,
    SHARDED,
    SHARDS,
    ShardRef,
    duplicate_in_partition,
    shard_size_setting,
    write_shards,
)

IDS_PER_PARTITION = 2_000_000
# Input bytes per molecule used to guess the set's size before reading it (NPZ of QM9-sized molecules is ~0.5 KB).
BYTES_PER_MOLECULE_GUESS = 500


def expand_inputs(inputs: list[str | Path]) -> list[Path]:
    """Files named by ``inputs`` (files, folders of files, glob patterns), de-duplicated, in sorted path order."""
    found: set[Path] = set()
    for item in inputs:
        text = str(item)
        if any(ch in text for ch in "*?["):
            matches = [Path(p) for p in glob.glob(text, recursive=True)]
            if not matches:
                raise FileNotFoundError(f"no file matches {text!r}")
            found.update(p for p in matches if p.is_file() or _dataset_folder(p))
        elif Path(text).is_dir() and not _dataset_folder(text):
            inside = [p for p in Path(text).iterdir() if not p.name.startswith(".")]
            found.update(p for p in inside if (p.is_file() and is_molecule_file(p)) or _dataset_folder(p))
        elif Path(text).exists():
            found.add(Path(text))
        else:
            raise FileNotFoundError(f"no such file: {text}")
    if not found:
        raise FileNotFoundError(
            f"no input files in {[str(i) for i in inputs]}; accepted: {sorted(registry.extensions())}"
        )
    return sorted(p.resolve() for p in found)


def _dataset_folder(path) -> bool:
    return registry.folder_format(Path(path)) is not None


@dataclass(frozen=True)
class FileJob:
    path: str
    number: int
    fmt: str
    strict: bool
    limits: Limits
    shard_root: str
    shard_size: int
    format_options: tuple[tuple[str, str], ...] = ()


def load_file_to_shards(job: FileJob) -> dict:
    """Load one input file and write it as shards ``f<file>-<part>``; its entries and bad-record counts.

    A bad file comes back as ``{"error": message}`` (raising would make Dask retry a file that cannot succeed).
    """
    path = Path(job.path)
    try:
        loaded = load_path(
            path, job.fmt, strict=job.strict, limits=job.limits, id_prefix=f"{path.stem}:",
            options=dict(job.format_options),
        )  # fmt: skip
    except (OrientScopeError, OSError, ValueError) as err:
        return {"error": f"{path.name}: {err}" if path.name not in str(err) else str(err)}
    mols = loaded.mols
    shards = write_shards(mols, job.shard_size, lambda part: Path(job.shard_root) / f"f{job.number:05d}-{part:04d}")
    return {
        "file": path.name,
        "format": loaded.format,
        "shards": shards,
        "n_skipped": loaded.n_skipped,
        "problems": loaded.problems,
        "warnings": loaded.warnings,
        "tags": loaded.tags,
        "has_smiles": bool(mols.smiles is not None and (mols.smiles != "").any()),
        "properties": list(mols.properties.columns),
        "property_units": dict(mols.property_units),
        "frame_dependent": sorted(mols.frame_dependent),
    }


@dataclass(frozen=True)
class IdCheckJob:
    refs: tuple[ShardRef, ...]
    partition: int
    n_partitions: int


def check_id_partition(job: IdCheckJob) -> str | None:
    return duplicate_in_partition(list(job.refs), job.partition, job.n_partitions)


def _local_limits() -> Limits:
    """Local files: today's per-molecule limits, but no cap on the number of molecules or atoms in all."""
    return replace(Limits.from_env(), max_molecules=2**62, max_total_atoms=2**62, max_upload_bytes=2**62)


def _load_files(
    engine: Engine, files: list[Path], template: FileJob, dataset_id: str, name: str, frame_dependent, notify
) -> dict:
    """Load ``files`` as shards (one task per file, as ``template`` says) and check the ids; the dataset's meta."""
    jobs = [replace(template, path=str(p), number=k) for k, p in enumerate(files)]

    def files_done(done: int, total: int) -> None:
        notify(0.4 * done / max(total, 1), f"{done}/{total} files", "load")

    results = engine.map(load_file_to_shards, jobs, files_done)
    errors = [r["error"] for r in results if "error" in r]
    if errors:
        more = f" (and {len(errors) - 1} more file(s))" if len(errors) > 1 else ""
        raise DatasetError(errors[0] + more)
    shards, start = [], 0
    for result in results:
        for entry in result["shards"]:
            shards.append({**entry, "start": start})
            start += entry["n_molecules"]
    folder = Path(template.shard_root)
    refs = tuple(ShardRef(k, str(folder / s["name"]), s["start"], s["n_molecules"]) for k, s in enumerate(shards))
    n_partitions = max(1, math.ceil(start / IDS_PER_PARTITION))
    dups = engine.map(check_id_partition, [IdCheckJob(refs, p, n_partitions) for p in range(n_partitions)])
    dup = next((d for d in dups if d is not None), None)
    if dup is not None:
        raise DatasetError(f"duplicate molecule id {dup!r} across the input files; ids must be unique per dataset")
    properties = sorted({c for r in results for c in r["properties"]})
    declared = {c for r in results for c in r["frame_dependent"]}
    declared |= check_frame_dependent(frame_dependent, properties)
    return ds.new_meta(
        dataset_id,
        name,
        f"{len(files)} file(s): {', '.join(p.name for p in files[:5])}{' ...' if len(files) > 5 else ''}",
        n_molecules=start,
        n_atoms=sum(s["n_atoms"] for s in shards),
        has_smiles=any(r["has_smiles"] for r in results),
        properties=properties,
        property_units={k: v for r in results for k, v in r["property_units"].items()},
        frame_dependent=declared,
        extra=ingest_meta(
            "+".join(sorted({r["format"] for r in results})),
            sum(r["n_skipped"] for r in results),
            [p for r in results for p in r["problems"]],
            template.strict,
            warnings=[w for r in results for w in r["warnings"]],
            tags=merge_tags([r["tags"] for r in results]),
            layout=SHARDED,
            format_version=FORMAT_VERSION,
            shard_size=template.shard_size,
            shards=shards,
            input_files=[p.name for p in files],
            **({"format_options": dict(template.format_options)} if template.format_options else {}),
        ),
    )


def ingest_files(
    data_dir: Path,
    inputs: list[str | Path],
    name: str,
    fmt: str = "auto",
    strict: bool = False,
    cluster: str | None = None,
    shard_size: int | None = None,
    progress: Progress | None = None,
    frame_dependent: Iterable[str] = (),
    stages: list[str] | None = None,
    format_options: Mapping[str, str] | None = None,
) -> dict:
    """Ingest ``inputs`` as one sharded dataset and run its stages (all, or ``stages``) with the default
    parameters; its meta.

    ``frame_dependent`` names properties whose values change with the lab frame, in
    addition to those the loaders declare (see :func:`~orientscope.pipeline.ingest.store_and_precompute`).
    ``format_options`` are the format's reading options (``loaders/registry.py``), applied to every file.
    """
    from orientscope.pipeline.precompute import make_params, precompute

    data_dir = Path(data_dir)
    files = expand_inputs(inputs)
    shard_size = shard_size_setting(shard_size)
    dataset_id = new_dataset_id(data_dir, name)
    params = make_params()
    frame_dependent = sorted(frame_dependent)
    limits = _local_limits()
    options = tuple(sorted(registry.check_options(fmt, format_options).items()))
    settings = [name, fmt, strict, shard_size, params, frame_dependent, stages, asdict(limits)]
    settings += [options] if options else []  # only when given: the resume keys of other ingests stay as they were
    notify = progress or quiet
    guess = sum(p.stat().st_size for p in files if p.is_file()) // BYTES_PER_MOLECULE_GUESS
    spec = choose_cluster(cluster, int(guess))
    with staging(data_dir, dataset_id, resume=resume_key(files, settings)) as stage_dir:
        with Engine(spec) as engine:
            if ds.has_dataset(stage_dir, dataset_id):  # stored by an interrupted run (the meta file is written last)
                notify(0.45, "molecules stored by the interrupted run", "save")
            else:
                folder = ds.dataset_dir(stage_dir, dataset_id) / SHARDS
                template = FileJob("", 0, fmt, strict, limits, str(folder), shard_size, options)
                meta = _load_files(engine, files, template, dataset_id, name, frame_dependent, notify)
                ds.write_meta(stage_dir, dataset_id, meta)  # last: the shard list marks the dataset complete
                notify(0.45, f"{meta['n_molecules']:,} molecules in {len(meta['shards'])} shards", "save")
            on_stage = scaled(progress, 0.45, 1.0)
            precompute(stage_dir, dataset_id, params, stages, progress=on_stage, engine=engine)
        return publish(stage_dir, data_dir, dataset_id, progress)
