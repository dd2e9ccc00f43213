"""SMARTS search over a sharded result: one task per shard on the engine, matches streamed as shards finish.

Each task reads its shard's graphs (the chemistry stage's ``smiles`` column,
perceived graphs written as SMILES; for a set whose chemistry stage was not
run per shard, the ingested shard's SMILES where they agree with the atoms,
else bonds perceived from 3D, as ``science.chemistry.molecule_graph`` decides)
and scans them with
``science.substructure.SubstructureIndex`` (its 500-character limit and
per-scan time limit). The search stops taking results at ``timeout_s``: the
result then holds the shards done so far and says it is not complete, with
the number of molecules scanned.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from orientscope.pipeline.engine import Engine, ShardProgress
from orientscope.science import substructure
from orientscope.science.chemistry import molecule_graph
from orientscope.store.datasets import read_meta, read_molecule_tables
from orientscope.store.shards import is_sharded, read_shard_table, shard_refs, shard_table_paths

STAGE = "chemistry"


@dataclass(frozen=True)
class SmartsJob:
    result_dir: str
    number: int  # shard number
    start: int  # global index of its first molecule
    smarts: str
    timeout_s: float
    molecules_folder: str = ""  # the ingested shard, read when the chemistry stage has no table for it
    has_smiles: bool = False
    block: int = substructure.BLOCK  # molecules scanned between two looks at the clock


def _graphs(job: SmartsJob):
    """The shard's molecular graphs: SMILES strings, or RDKit molecules made one at a time as the index reads them."""
    if not job.molecules_folder:
        table = read_shard_table(Path(job.result_dir), STAGE, "molecules", job.number, columns=["smiles"])
        return table.column("smiles").to_pylist()
    mols = read_molecule_tables(Path(job.molecules_folder), {"has_smiles": job.has_smiles})
    smiles = mols.smiles if mols.smiles is not None else [""] * mols.n_molecules
    return (
        molecule_graph(str(smiles[i] or ""), *mols.atoms_of(i), mols.charge_of(i))[0] for i in range(mols.n_molecules)
    )


def smarts_shard(job: SmartsJob) -> dict:
    """Global indices of the shard's molecules that contain the pattern, and how many were scanned."""
    found = substructure.SubstructureIndex(_graphs(job), n_threads=1).search(
        job.smarts, timeout_s=job.timeout_s, block=job.block
    )
    return {"index": found.indices + job.start, "n_scanned": found.n_scanned, "complete": found.complete}


def sharded_result(result_dir: Path) -> bool:
    """True when the chemistry stage of this result was written per shard."""
    return bool(shard_table_paths(Path(result_dir), STAGE, "molecules"))


def searchable_shards(data_dir: Path, dataset_id: str, result_dir: Path) -> bool:
    """True when the dataset is searched shard by shard: its chemistry stage ran per shard, or it is stored
    as shards (whose ingested molecules are then read)."""
    return sharded_result(result_dir) or is_sharded(read_meta(Path(data_dir), dataset_id))


def search_shards(
    engine: Engine,
    result_dir: Path,
    smarts: str,
    timeout_s: float = substructure.DEFAULT_TIMEOUT_S,
    progress: ShardProgress | None = None,
    on_matches: Callable[[np.ndarray], None] | None = None,
    block: int = substructure.BLOCK,
) -> substructure.SearchResult:
    """Every molecule of the sharded result containing ``smarts``, shard-parallel on ``engine``.

    ``progress(shards done, total)`` and ``on_matches(global indices)`` hear each
    shard as it finishes. Raises ``ValueError`` for an invalid or too long pattern.
    """
    substructure.parse_smarts(smarts)  # a typo answers before any task starts
    paths = shard_table_paths(Path(result_dir), STAGE, "molecules")
    numbers = [int(p.stem.rsplit("-", 1)[1]) for p in paths]
    sizes = [read_shard_table(Path(result_dir), STAGE, "molecules", k, columns=["id"]).num_rows for k in numbers]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int)
    jobs = [
        SmartsJob(str(result_dir), k, int(s), smarts, timeout_s, block=block)
        for k, s in zip(numbers, starts, strict=True)
    ]
    return _run(engine, jobs, timeout_s, progress, on_matches)


def search_dataset(
    engine: Engine,
    data_dir: Path,
    dataset_id: str,
    result_dir: Path,
    smarts: str,
    timeout_s: float = substructure.DEFAULT_TIMEOUT_S,
    progress: ShardProgress | None = None,
    on_matches: Callable[[np.ndarray], None] | None = None,
) -> substructure.SearchResult:
    """Like :func:`search_shards` for any sharded dataset: over the chemistry stage's shard tables when it
    wrote them, else over the dataset's ingested shards."""
    if sharded_result(result_dir):
        return search_shards(engine, result_dir, smarts, timeout_s, progress, on_matches)
    substructure.parse_smarts(smarts)
    meta = read_meta(Path(data_dir), dataset_id)
    has_smiles = bool(meta.get("has_smiles"))
    jobs = [
        SmartsJob(str(result_dir), ref.number, ref.start, smarts, timeout_s, ref.folder, has_smiles)
        for ref in shard_refs(Path(data_dir), dataset_id, meta)
    ]
    return _run(engine, jobs, timeout_s, progress, on_matches)


def _run(
    engine: Engine,
    jobs: list[SmartsJob],
    timeout_s: float,
    progress: ShardProgress | None,
    on_matches: Callable[[np.ndarray], None] | None,
) -> substructure.SearchResult:
    """Run the shard tasks, streaming their matches, until all are done or ``timeout_s`` has passed."""
    t0 = time.perf_counter()
    hits, n_scanned, complete, done = [], 0, True, 0
    if progress:
        progress(0, len(jobs))
    stream = engine.as_completed(smarts_shard, jobs)
    try:
        for _, part in stream:
            hits.append(part["index"])
            n_scanned += part["n_scanned"]
            complete &= part["complete"]
            done += 1
            if on_matches:
                on_matches(part["index"])
            if progress:
                progress(done, len(jobs))
            if done < len(jobs) and time.perf_counter() - t0 > timeout_s:
                complete = False
                break
    finally:
        stream.close()
    index = np.sort(np.concatenate(hits)) if hits else np.zeros(0, np.int64)
    return substructure.SearchResult(index, n_scanned, complete and done == len(jobs), time.perf_counter() - t0)
