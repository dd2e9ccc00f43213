"""SMARTS search over a sharded result: one task per shard on the engine, matches streamed as shards finish.

Each task reads its shard's graphs (the chemistry stage's ``smiles`` column,
perceived graphs written as SMILES) and scans them with
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

from backend.pipeline.engine import Engine, ShardProgress
from backend.science import substructure
from backend.store.shards import read_shard_table, shard_table_paths

STAGE = "chemistry"


@dataclass(frozen=True)
class SmartsJob:
    result_dir: str
    number: int  # shard number
    start: int  # global index of its first molecule
    smarts: str
    timeout_s: float


def smarts_shard(job: SmartsJob) -> dict:
    """Global indices of the shard's molecules that contain the pattern, and how many were scanned."""
    table = read_shard_table(Path(job.result_dir), STAGE, "molecules", job.number, columns=["smiles"])
    smiles = table.column("smiles").to_pylist()
    found = substructure.SubstructureIndex(smiles, n_threads=1).search(job.smarts, timeout_s=job.timeout_s)
    return {"index": found.indices + job.start, "n_scanned": found.n_scanned, "complete": found.complete}


def sharded_result(result_dir: Path) -> bool:
    """True when the chemistry stage of this result was written per shard."""
    return bool(shard_table_paths(Path(result_dir), STAGE, "molecules"))


def search_shards(
    engine: Engine,
    result_dir: Path,
    smarts: str,
    timeout_s: float = substructure.DEFAULT_TIMEOUT_S,
    progress: ShardProgress | None = None,
    on_matches: Callable[[np.ndarray], None] | None = None,
) -> substructure.SearchResult:
    """Every molecule of the sharded result containing ``smarts``, shard-parallel on ``engine``.

    ``progress(shards done, total)`` and ``on_matches(global indices)`` hear each
    shard as it finishes. Raises ``ValueError`` for an invalid or too long pattern.
    """
    substructure.parse_smarts(smarts)  # a typo answers before any task starts
    t0 = time.perf_counter()
    paths = shard_table_paths(Path(result_dir), STAGE, "molecules")
    numbers = [int(p.stem.rsplit("-", 1)[1]) for p in paths]
    sizes = [read_shard_table(Path(result_dir), STAGE, "molecules", k, columns=["id"]).num_rows for k in numbers]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int)
    jobs = [SmartsJob(str(result_dir), k, int(s), smarts, timeout_s) for k, s in zip(numbers, starts, strict=True)]
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
