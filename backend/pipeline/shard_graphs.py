"""Pass 1 of the chemistry stage: graphs, fingerprints and scaffolds, in chunks balanced by atoms on every worker.

The RDKit work per molecule grows with its size (bond perception on a 400-atom ligand costs a thousand
times a QM9 molecule's SMILES parse), so the pass is not cut by shard but into chunks of about equal
atom counts, each about ``CHUNK_SECONDS`` of estimated work (:func:`estimated_seconds`; at least
``CHUNKS_PER_WORKER`` per worker), each a task on the engine:

1. :func:`graphs_chunk` reads its rows of one shard itself (only the row groups that hold them), builds
   every molecule's graph under its budget (``science.chemistry``, ``science.perception``) and writes
   ``chemistry/done/chunks/<shard>-<first row>-<end row>.parquet`` (its fingerprints as 256-byte
   cells) beside the stage's task markers, which vouch for it and go with it once the stage is
   recorded (``pipeline.resume``);
2. :func:`graphs_shard` joins a shard's chunks in row order into the shard's fingerprints, bit counts
   and graph table (the layout in ``backend/store/shards.py``) and returns its labels and its share
   of the seeded samples, as ``pipeline.shard_chemistry`` merges them.

Progress counts molecules, as the chunks finish (about every ``CHUNK_SECONDS`` of a worker's CPU). A set that runs in this process by its size parses
on a local cluster of up to ``MAX_PARSE_WORKERS`` when its RDKit work is estimated
(:func:`estimated_seconds`) to take longer than ``PARALLEL_FROM_S``, about twice what starting the
workers costs; smaller sets, such as every test's, stay in this process.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from multiprocessing import current_process
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from orientscope.core.dataset import TOTAL_CHARGE
from orientscope.core.elements import hill_formulas
from orientscope.pipeline.chemistry_report import MOLECULE_COLUMNS
from orientscope.pipeline.depends import depends_on
from orientscope.pipeline.engine import IN_PROCESS, Engine, spawn_safe
from orientscope.pipeline.resume import markers_dir
from orientscope.pipeline.shard_stages import ShardJob
from orientscope.science.chemistry import FP_BITS, FP_WORDS, chemistry_chunk, merge_chunks, molecule_chunk
from orientscope.store.atomic import atomic_write_table, read_table
from orientscope.store.datasets import read_meta
from orientscope.store.shards import read_shard_rows

STAGE = "chemistry"
CHUNKS = "chunks"
CHUNK_SECONDS = 1.0
CHUNKS_PER_WORKER = 4
# Each chunk reads its shard's molecules table again (~0.1 s for 250,000 rows): on a set of millions,
# longer chunks, at most this many per worker (progress still moves every 1/50 of the pass).
MAX_CHUNKS_PER_WORKER = 50
MAX_PARSE_WORKERS = 2
PARALLEL_FROM_S = 8.0
# RDKit work per atom (CPU µs): from a SMILES (QM9: 12) or perceived from 3D (QM9: 36, PDB ligands: 60-200).
COST_US_PER_ATOM = {"smiles": 12.0, "3d": 60.0}
CHUNK_COLUMNS = ["smiles", "formula", "scaffold", "generic_scaffold", "chemistry_source", "chemistry_error",
                 "chemistry_reason"]  # fmt: skip


@dataclass(frozen=True)
class ChunkJob:
    """Rows ``lo:hi`` of one shard."""

    shard: ShardJob
    lo: int
    hi: int

    @property
    def path(self) -> Path:
        return chunk_path(Path(self.shard.result_dir), self.shard.ref.number, self.lo, self.hi)


def chunk_path(result_dir: Path, shard: int, lo: int, hi: int) -> Path:
    return markers_dir(result_dir, STAGE) / CHUNKS / f"{shard:05d}-{lo:09d}-{hi:09d}.parquet"


def shard_atom_counts(job: ShardJob) -> np.ndarray:
    """(n,) atoms per molecule of the job's shard (its molecules table's ``n_atoms`` column only)."""
    table = read_table(Path(job.ref.folder) / "molecules.parquet", columns=["n_atoms"])
    return table.column("n_atoms").to_numpy().astype(np.int64)


def shard_charge_known(job: ShardJob) -> np.ndarray:
    """(n,) bool: the file gave the molecule's total charge (a shard stored without charges: none did)."""
    import pyarrow.parquet as pq

    path = Path(job.ref.folder) / "molecules.parquet"
    if TOTAL_CHARGE not in pq.read_schema(path).names:
        return np.zeros(job.ref.n_molecules, bool)
    return ~np.isnan(read_table(path, columns=[TOTAL_CHARGE]).column(TOTAL_CHARGE).to_numpy(zero_copy_only=False))


def cut_by_atoms(counts: np.ndarray, n_pieces: int) -> list[tuple[int, int]]:
    """``n_pieces`` (or fewer) consecutive row ranges of about equal atom counts, none empty: each cut falls
    where the running atom count is nearest its share."""
    if not len(counts):
        return []
    total = np.cumsum(counts)
    marks = total[-1] * np.arange(1, n_pieces) / n_pieces
    after = np.searchsorted(total, marks, side="left")  # the first row whose running count reaches the mark
    before = np.where(after > 0, total[np.maximum(after - 1, 0)], 0)
    cuts = np.where(total[after] - marks <= marks - before, after + 1, after)
    edges = np.unique(np.concatenate([[0], cuts, [len(counts)]]))
    return [(int(lo), int(hi)) for lo, hi in zip(edges[:-1], edges[1:], strict=True) if hi > lo]


def plan_chunks(
    jobs: list[ShardJob], counts: list[np.ndarray], n_workers: int, has_smiles: bool
) -> list[list[tuple[int, int]]]:
    """Per shard, its chunks' row ranges: about ``CHUNK_SECONDS`` of estimated work each (QM9 with SMILES:
    83,000 atoms; ligands perceived from 3D: 17,000), from ``CHUNKS_PER_WORKER`` to ``MAX_CHUNKS_PER_WORKER``
    per worker over the set, each shard cut in proportion to its atoms."""
    atoms = [int(c.sum()) for c in counts]
    workers = max(n_workers, 1)
    by_work = math.ceil(estimated_seconds(sum(atoms), has_smiles) / CHUNK_SECONDS)
    n_chunks = min(max(by_work, CHUNKS_PER_WORKER * workers), MAX_CHUNKS_PER_WORKER * workers)
    per_atom = n_chunks / max(sum(atoms), 1)
    return [cut_by_atoms(c, max(1, round(a * per_atom))) for c, a in zip(counts, atoms, strict=True)]


def estimated_seconds(n_atoms: int, has_smiles: bool) -> float:
    """Serial RDKit CPU seconds the pass is expected to take on ``n_atoms`` atoms (see COST_US_PER_ATOM)."""
    return n_atoms * COST_US_PER_ATOM["smiles" if has_smiles else "3d"] / 1e6


def parse_workers(engine: Engine, n_atoms: int, has_smiles: bool) -> int:
    """Local workers for pass 1 of a set that runs in this process because of its size (1: none).

    A set below the local-cluster size runs its stages in this process; its RDKit work goes to a
    local cluster of up to ``MAX_PARSE_WORKERS`` where it is estimated to take longer than
    ``PARALLEL_FROM_S`` (full QM9: 29 s; 8,653 PDB ligands: about 40 s). Never for a cluster named by
    ``--cluster`` or ``$ORIENTSCOPE_CLUSTER`` (``in-process`` included: its chunks run on it), nor in
    a daemon process, which may not start workers, nor where workers would run unguarded code again
    (:func:`~orientscope.pipeline.engine.spawn_safe`).
    """
    spec = engine.spec
    by_size_in_process = spec.kind == IN_PROCESS and spec.by_size
    if not by_size_in_process or estimated_seconds(n_atoms, has_smiles) < PARALLEL_FROM_S:
        return 1
    if current_process().daemon or not spawn_safe():
        return 1
    return min(MAX_PARSE_WORKERS, os.cpu_count() or 1)


# ---------------------------------------------------------------- the tasks
@depends_on("CHUNK_COLUMNS", "FP_BITS")
def graphs_chunk(job: ChunkJob) -> int:
    """Graphs of rows ``lo:hi`` of one shard, written as the chunk's table; the number of molecules."""
    shard = job.shard
    mols = read_shard_rows(shard.ref, read_meta(Path(shard.data_dir), shard.dataset_id), job.lo, job.hi)
    smiles, sources, errors, scaffolds, generics, reasons, fps = chemistry_chunk(
        molecule_chunk(mols, 0, mols.n_molecules)
    )
    formula = hill_formulas(mols.atomic_numbers, mols.offsets)
    columns = [smiles, formula, scaffolds, generics, sources, errors, reasons]
    table = {
        name: pa.array(np.asarray(values).astype(str)) for name, values in zip(CHUNK_COLUMNS, columns, strict=True)
    }
    cells = np.ascontiguousarray(fps).view(np.uint8).reshape(-1, FP_BITS // 8)
    table["fingerprint"] = pa.array([row.tobytes() for row in cells], pa.binary(FP_BITS // 8))
    job.path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_table(job.path, pa.table(table))
    return mols.n_molecules


@dataclass(frozen=True)
class GraphsJob:
    """One shard and its chunks' row ranges (in row order)."""

    shard: ShardJob
    chunks: tuple[tuple[int, int], ...]


def read_chunks(job: GraphsJob):
    """The shard's :class:`~orientscope.science.chemistry.Chemistry` from its chunk tables, in row order."""
    shard = job.shard
    results, formulas = [], []
    for lo, hi in job.chunks:
        table = read_table(chunk_path(Path(shard.result_dir), shard.ref.number, lo, hi))
        cells = b"".join(table.column("fingerprint").to_pylist())
        fps = np.frombuffer(cells, np.uint8).reshape(-1, FP_BITS // 8).view(np.uint64).reshape(-1, FP_WORDS)
        # The order of chemistry_chunk's results: smiles, sources, errors, scaffolds, generic scaffolds, reasons.
        names = ["smiles", "chemistry_source", "chemistry_error", "scaffold", "generic_scaffold", "chemistry_reason"]
        results.append((*(table.column(n).to_pylist() for n in names), fps))
        formulas.append(table.column("formula").to_numpy(zero_copy_only=False))
    return merge_chunks(results, np.concatenate(formulas) if formulas else np.zeros(0, str))


def graph_table(ids: np.ndarray, chem) -> pd.DataFrame:
    """The shard's graph table: :data:`~orientscope.pipeline.chemistry_report.MOLECULE_COLUMNS`."""
    values = [ids, chem.smiles, chem.formula, chem.scaffold, chem.generic_scaffold, chem.ok, chem.source, chem.error,
              chem.reason]  # fmt: skip
    return pd.DataFrame(dict(zip(MOLECULE_COLUMNS, values, strict=True)))
