"""SMARTS search over a sharded result: the index a request searches, and one task per shard on the engine
for the background jobs, matches streamed as shards finish.

What an index holds (``science.substructure.search_data``: each molecule's SMILES as RDKit writes it from
the sanitised molecule, and its pattern fingerprint, the screen) costs a parse of every molecule, about 25 s
on QM9: the first search after a server start took 14 s building an index without the screen. It is made
once per shard, at ingest (:func:`index_result`, after the stages) or else at the server's warm-up, and kept
beside the chemistry stage's table as ``chemistry/search-NNNNN.parquet``, stamped with that table's size and
time and with the RDKit version (a recomputed stage, or another RDKit, is indexed anew); :func:`result_index`
reads it back in about a second.

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
import pyarrow as pa

from orientscope.pipeline.engine import Engine, ShardProgress
from orientscope.science import substructure
from orientscope.science.chemistry import molecule_graph
from orientscope.store.atomic import atomic_write_table, read_table
from orientscope.store.datasets import read_meta, read_molecule_tables
from orientscope.store.shards import is_sharded, read_shard_table, shard_refs, shard_table_path, shard_table_paths

STAGE = "chemistry"
SEARCH_TABLE = "search"  # per shard: the SMILES an index holds, whether each is valid, and its fingerprint
SOURCE_KEY = b"orientscope.source"  # the search table's metadata: the chemistry table it was made from
RDKIT_KEY = b"orientscope.rdkit"  # and the RDKit version that made it


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


def _shard_index(job: SmartsJob) -> substructure.SubstructureIndex:
    """The shard's index: from its kept search data (made from the chemistry stage's graphs if missing),
    or for a set whose chemistry stage was not run per shard, from its ingested molecules, RDKit molecules
    made one at a time as the index reads them."""
    if not job.molecules_folder:
        return substructure.SubstructureIndex.from_search_data(
            search_data_shard(job.result_dir, job.number, write=False), n_threads=1
        )
    mols = read_molecule_tables(Path(job.molecules_folder), {"has_smiles": job.has_smiles})
    smiles = mols.smiles if mols.smiles is not None else [""] * mols.n_molecules
    graphs = (
        molecule_graph(str(smiles[i] or ""), *mols.atoms_of(i), mols.charge_of(i))[0] for i in range(mols.n_molecules)
    )
    return substructure.SubstructureIndex(graphs, n_threads=1)


def smarts_shard(job: SmartsJob) -> dict:
    """Global indices of the shard's molecules that contain the pattern, and how many were scanned."""
    found = _shard_index(job).search(job.smarts, timeout_s=job.timeout_s, block=job.block)
    return {"index": found.indices + job.start, "n_scanned": found.n_scanned, "complete": found.complete}


def _source_stamp(result_dir: Path, number: int) -> bytes:
    """Size and modification time of the shard's chemistry table: a search table made from another is stale."""
    stat = shard_table_path(Path(result_dir), STAGE, "molecules", number).stat()
    return f"{stat.st_size}:{stat.st_mtime_ns}".encode()


def shard_numbers(result_dir: Path) -> list[int]:
    """The shard numbers of a result's chemistry tables, in shard order."""
    return [int(p.stem.rsplit("-", 1)[1]) for p in shard_table_paths(Path(result_dir), STAGE, "molecules")]


def read_search_data(result_dir: Path, number: int) -> substructure.SearchData | None:
    """The shard's kept search data; None if there are none, or they were made from another chemistry table
    or by another RDKit."""
    path = shard_table_path(Path(result_dir), STAGE, SEARCH_TABLE, number)
    if not path.is_file():
        return None
    table = read_table(path)
    meta = table.schema.metadata or {}
    if meta.get(SOURCE_KEY) != _source_stamp(result_dir, number):
        return None
    if meta.get(RDKIT_KEY) != substructure.rdkit_version().encode():
        return None
    return substructure.SearchData(
        table.column("smiles").to_pylist(),
        table.column("valid").to_numpy(zero_copy_only=False),
        table.column("pattern").to_pylist(),
        substructure.rdkit_version(),
    )


def search_data_shard(result_dir: str, number: int, write: bool = True) -> substructure.SearchData:
    """The shard's search data: kept ones, else made from its chemistry table (and kept, when ``write``)."""
    kept = read_search_data(Path(result_dir), number)
    if kept is not None:
        return kept
    stamp = _source_stamp(Path(result_dir), number)
    graphs = read_shard_table(Path(result_dir), STAGE, "molecules", number, columns=["smiles"]).column("smiles")
    data = substructure.search_data(graphs.to_pylist())
    if write:
        table = pa.table(
            {
                "smiles": pa.array(data.smiles, pa.string()),
                "valid": pa.array(data.valid, pa.bool_()),
                "pattern": pa.array(data.patterns, pa.binary()),
            }
        )
        path = shard_table_path(Path(result_dir), STAGE, SEARCH_TABLE, number)
        atomic_write_table(path, table.replace_schema_metadata({SOURCE_KEY: stamp, RDKIT_KEY: data.rdkit.encode()}))
    return data


def _index_shard(job: tuple[str, int]) -> int:
    return len(search_data_shard(*job).valid)


def unindexed_shards(result_dir: Path) -> list[int]:
    """The shards of a result whose search data are not kept (or are stale)."""
    return [k for k in shard_numbers(result_dir) if read_search_data(result_dir, k) is None]


def index_result(engine: Engine, result_dir: Path, numbers: list[int], progress: ShardProgress | None = None) -> None:
    """Make and keep the search data of the shards ``numbers`` of a result, shard-parallel on ``engine``."""
    engine.map(_index_shard, [(str(result_dir), k) for k in numbers], progress)


def result_index(result_dir: Path, write: bool = False, n_threads: int = 2) -> substructure.SubstructureIndex:
    """One index over every shard of a result, in row order, from the kept search data (made where missing,
    and kept when ``write``)."""
    parts = [search_data_shard(str(result_dir), k, write) for k in shard_numbers(result_dir)]
    data = substructure.SearchData(
        [s for part in parts for s in part.smiles],
        np.concatenate([part.valid for part in parts]) if parts else np.zeros(0, bool),
        [p for part in parts for p in part.patterns],
        substructure.rdkit_version(),
    )
    return substructure.SubstructureIndex.from_search_data(data, n_threads)


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
    numbers = shard_numbers(result_dir)
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
