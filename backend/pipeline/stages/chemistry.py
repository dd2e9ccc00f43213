"""Stage "chemistry": per-molecule chemistry, groupings, per-group poses and the similarity–pose coupling.

The graphs, fingerprints and scaffolds are computed in chunks on the engine
(``orientscope.pipeline.engine``): in this process for small sets, else on a local
Dask cluster of up to two workers (or ``$ORIENTSCOPE_CLUSTER``). Every seeded
sample (the clustering sample and its visiting order, the coupling's queries
and random partners) is a counter-based draw by molecule index, so the sharded
stage (``orientscope.pipeline.shard_chemistry``) reproduces this one exactly; the
helpers both use live here.
"""

from __future__ import annotations

import os
from multiprocessing import current_process

import numpy as np
import pandas as pd

from orientscope.core.groups import GROUP_KINDS, UNGROUPED
from orientscope.core.progress import scaled
from orientscope.pipeline.engine import CLUSTER_ENV, ClusterSpec, Engine, parse_cluster
from orientscope.pipeline.stage import Stage, StageContext, StageOutput
from orientscope.science.chemistry import FP_COLUMNS, compute_chemistry
from orientscope.science.clustering import sampled_leader_clusters
from orientscope.science.group_stats import group_orientation_stats
from orientscope.science.rotations import derived_seed
from orientscope.science.similarity import coupling, neighbour_pairs, partner_pool

CLUSTER_THRESHOLD = 0.5
CLUSTER_SAMPLE = 1000
N_PAIRS = 2000
N_PERMUTATIONS = 2000
N_RANDOM = 10
TOP_GROUPS = 20
# A neighbour pair needs two molecules; random partners come from the same pool.
MIN_SIMILARITY_POOL = 2
# Below this many molecules worker processes cost more than they save.
MIN_PARALLEL = 4000
MAX_WORKERS = 2  # the CPUs the in-memory stage budgets for
ACYCLIC = "(acyclic)"
MOLECULE_COLUMNS = ["id", "smiles", "formula", "scaffold", "generic_scaffold", "chemistry_ok", "chemistry_source",
                    "chemistry_error"]  # fmt: skip
SETTINGS = {
    "fingerprint": "Morgan radius 2, 2048 bits",
    "cluster_method": "sampled leader (sphere exclusion on a sample, best-leader assignment)",
    "cluster_threshold": CLUSTER_THRESHOLD,
    "cluster_sample": CLUSTER_SAMPLE,
    "cluster_seed": "derived_seed(seed, 'cluster'); sample and order: counter-based draws by molecule index",
    "n_pairs": N_PAIRS,
    "pair_seed": "derived_seed(seed, 'similarity'); queries and partners: counter-based draws by molecule index",
    "random_partners": f"drawn from a seeded subsample of {N_PAIRS * N_RANDOM:,} molecules of the pool",
    "coupling_seed": "derived_seed(seed, 'coupling')",
    "n_permutations": N_PERMUTATIONS,
    "n_random_per_query": N_RANDOM,
}


def chemistry_spec(n_molecules: int) -> ClusterSpec:
    """Where the in-memory stage parses: ``$ORIENTSCOPE_CLUSTER`` if set, else in process below
    :data:`MIN_PARALLEL` molecules (and in daemon processes, which may not start workers), else up to
    :data:`MAX_WORKERS` local workers."""
    chosen = os.environ.get(CLUSTER_ENV, "")
    if chosen:
        return parse_cluster(chosen)
    workers = min(MAX_WORKERS, os.cpu_count() or 1)
    if n_molecules < MIN_PARALLEL or workers == 1 or current_process().daemon:
        return ClusterSpec("in-process")
    return ClusterSpec("local", workers=workers)


def scaffold_keys(scaffold: np.ndarray) -> np.ndarray:
    """Scaffold group keys: the Murcko scaffold, or ``(acyclic)`` for a graph without rings."""
    return np.where(scaffold == "", ACYCLIC, scaffold)


def _factorize(values: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(group id per molecule, -1 where invalid; label per group id)."""
    ids = np.full(len(values), -1, np.int64)
    labels, inverse = np.unique(values[valid], return_inverse=True)
    ids[valid] = inverse.reshape(-1)
    return ids, labels


def label_groups(table: pd.DataFrame, labels: np.ndarray, typical_ids: np.ndarray) -> pd.DataFrame:
    """A group table with ``typical_id`` (from its ``typical_index`` rows) and ``label`` per group."""
    table = table.copy()
    table.pop("typical_index")
    table["typical_id"] = typical_ids
    table["label"] = labels[table["group"].to_numpy(np.int64)] if len(table) else []
    return table


def _largest(table: pd.DataFrame) -> list[dict]:
    top = table.head(TOP_GROUPS)
    return [
        {
            "group": int(r.group),
            "label": str(r.label),
            "size": int(r.size),
            "mean_quaternion": [float(r.qx), float(r.qy), float(r.qz), float(r.qw)],
            "spread_deg": float(r.spread_deg),
            "concentration": float(r.concentration),
            "typical_id": str(r.typical_id),
        }
        for r in top.itertuples(index=False)
    ]


def groups_section(tables: dict[str, pd.DataFrame], n_grouped: dict[str, int], n_molecules: int) -> dict:
    """The report's ``groups``: per grouping its size, who is in no group and the largest groups."""
    groups = {
        g: {
            "n_groups": int(len(tables[f"groups_{g}"])),
            "n_grouped": int(n_grouped[g]),
            "ungrouped": {"label": UNGROUPED[g], "size": int(n_molecules - n_grouped[g])},
            "largest": _largest(tables[f"groups_{g}"]),
        }
        for g in GROUP_KINDS
    }
    groups["cluster"].update({"threshold": CLUSTER_THRESHOLD, "method": "sampled leader", "sample": CLUSTER_SAMPLE})
    return groups


def similarity_pool(ok: np.ndarray, degenerate: np.ndarray, words: np.ndarray) -> np.ndarray:
    """(n,) bool: molecules with a graph, a well-defined frame and a non-empty fingerprint."""
    return ok & ~degenerate & (np.bitwise_count(words).sum(axis=1) > 0)


def pool_too_small(n_pool: int, n_molecules: int) -> str | None:
    if n_pool >= MIN_SIMILARITY_POOL:
        return None
    return (
        f"similarity–pose coupling needs at least {MIN_SIMILARITY_POOL} molecules with a chemical graph "
        f"and a well-defined frame, got {n_pool} of {n_molecules}"
    )


def coupling_sections(gathered, rotations, queries, neighbours, tanimoto, partners, seed: int) -> tuple[dict, dict]:
    """(coupling of the stored poses, of the control) from the frames of the molecules involved only.

    Parameters
    ----------
    gathered : (m,) sorted molecule indices: every query, neighbour and partner
    rotations : {"original", "control"} -> (m, 3, 3) their frames
    queries, neighbours : (q,) molecule indices of the pairs; tanimoto (q,) their similarity
    partners : (p,) molecule indices random partners are drawn from
    """

    def local(index: np.ndarray) -> np.ndarray:
        return np.searchsorted(gathered, index)

    pool = np.zeros(len(gathered), bool)
    pool[local(partners)] = True
    kw = {"pool": pool, "seed": derived_seed(seed, "coupling"), "n_random": N_RANDOM, "n_permutations": N_PERMUTATIONS}
    q, nn = local(queries), local(neighbours)
    similarity = coupling(rotations["original"], q, nn, **kw)
    control = coupling(rotations["control"], q, nn, **kw)
    similarity["control_enrichment"] = control["enrichment"]
    similarity["median_nn_tanimoto"] = float(np.median(tanimoto))
    return similarity, control


def _similarity(ctx: StageContext, chem, frames, control_frames) -> tuple[dict, dict, str | None]:
    """(coupling of the stored poses, of the control, reason it was skipped or None)."""
    pool = similarity_pool(chem.ok, frames.degenerate, chem.fingerprints)
    reason = pool_too_small(int(pool.sum()), len(pool))
    if reason:
        return {}, {}, reason
    ctx.progress(0.75, "chemical nearest neighbours")
    pair_seed = derived_seed(ctx.seed, "similarity")
    queries, neighbours, tanimoto = neighbour_pairs(chem.fingerprints, N_PAIRS, pair_seed, pool)
    partners = partner_pool(pair_seed, np.flatnonzero(pool), N_PAIRS * N_RANDOM)
    ctx.progress(0.9, "similarity–pose coupling")
    gathered = np.unique(np.concatenate([queries, neighbours, partners]))
    rotations = {"original": frames.rotations[gathered], "control": control_frames.rotations[gathered]}
    similarity, control = coupling_sections(gathered, rotations, queries, neighbours, tanimoto, partners, ctx.seed)
    return similarity, control, None


def stage_output(report: dict, similarity: dict, control: dict, tables: dict, skipped_parts: dict) -> StageOutput:
    """The stage's output around its report (both the in-memory and the sharded stage)."""
    return StageOutput(
        report={**report, "similarity": similarity} if similarity else report,
        control={"similarity": control} if control else {},
        tables=tables,
        settings=dict(SETTINGS),
        skipped_parts=skipped_parts,
    )


def no_graph_reason(n_ok: int) -> dict:
    if n_ok:
        return {}
    reason = "no molecule has a chemical graph (no SMILES, and bonds could not be perceived from 3D)"
    return {"scaffold": reason, "cluster": reason}


def run(ctx: StageContext) -> StageOutput:
    mols = ctx.mols
    ctx.progress(0.02, "molecular graphs, fingerprints and scaffolds")
    spec = chemistry_spec(mols.n_molecules)
    with Engine(spec) as engine:
        n_chunks = 8 * engine.n_workers
        chem = compute_chemistry(mols, engine.map, n_chunks, progress=scaled(ctx.progress, 0.02, 0.52))
    ids = mols.ids
    ctx.progress(0.55, f"Tanimoto clusters at {CLUSTER_THRESHOLD}")
    cluster_seed = derived_seed(ctx.seed, "cluster")
    cluster, leaders, cluster_sim = sampled_leader_clusters(
        chem.fingerprints, CLUSTER_THRESHOLD, sample_size=CLUSTER_SAMPLE, seed=cluster_seed, mask=chem.ok
    )
    scaffold, scaffold_labels = _factorize(scaffold_keys(chem.scaffold), chem.ok)
    formula, formula_labels = _factorize(chem.formula, np.ones(len(ids), bool))
    # A cluster is named by its representative: the leader it was grown from.
    cluster_labels = np.asarray(chem.smiles, dtype=object)[leaders]
    group_ids = {"scaffold": scaffold, "formula": formula, "cluster": cluster}
    group_labels = {"scaffold": scaffold_labels, "formula": formula_labels, "cluster": cluster_labels}

    ctx.progress(0.65, "per-group orientation statistics")
    frames, control_frames = ctx.frames("original"), ctx.frames("control")
    tables = {}
    for g in GROUP_KINDS:
        table = group_orientation_stats(group_ids[g], frames.quaternions, frames.rotations)
        tables[f"groups_{g}"] = label_groups(table, group_labels[g], ids[table["typical_index"].to_numpy(np.int64)])
    clusters = tables["groups_cluster"]
    clusters["leader_id"] = ids[leaders[clusters["group"].to_numpy(np.int64)]] if len(clusters) else []
    n_grouped = {g: int((group_ids[g] >= 0).sum()) for g in GROUP_KINDS}

    similarity, control, similarity_skipped = _similarity(ctx, chem, frames, control_frames)
    skipped_parts = {"similarity": similarity_skipped} if similarity_skipped else {}
    skipped_parts.update(no_graph_reason(int(chem.ok.sum())))

    values = [ids, chem.smiles, chem.formula, chem.scaffold, chem.generic_scaffold, chem.ok, chem.source, chem.error]
    molecules = pd.DataFrame(dict(zip(MOLECULE_COLUMNS, values, strict=True)))
    molecules = molecules.assign(scaffold_group=scaffold, formula_group=formula, cluster_group=cluster,
                                 cluster_similarity=cluster_sim)  # fmt: skip
    fingerprints = pd.DataFrame({"id": ids, **dict(zip(FP_COLUMNS, chem.fingerprints.T, strict=True))})
    tables.update({"molecules": molecules, "fingerprints": fingerprints})
    n_ok = int(chem.ok.sum())
    report = {
        "groups": groups_section(tables, n_grouped, len(ids)),
        "chemistry": {"n_ok": n_ok, "n_failed": len(ids) - n_ok},
    }
    return stage_output(report, similarity, control, tables, skipped_parts)


STAGE = Stage(
    "chemistry", run, requires=("frames",), description="chemistry groups, per-group poses, similarity–pose coupling"
)
