"""The chemistry stage over shards: graphs and fingerprints per shard, groups and the coupling from merged partials.

Three passes of per-shard tasks on the engine, each followed by a small merge:

1. **graphs**: parse, perceive bonds, fingerprint and find scaffolds in
   chunks of about equal atom counts on every worker (``pipeline.shard_graphs``,
   repeated SMILES once); then per shard (:func:`graphs_shard`) write the
   shard's packed fingerprints and their bit counts (``chemistry/fingerprints-NNNNN.npy``
   and ``popcounts-NNNNN.npy``, the layout in ``backend/store/shards.py``) and
   its graph table; return the shard's scaffold and formula labels, its
   molecules without a graph by reason, and its share of the seeded samples
   (the clustering sample, the coupling's queries and random partners: the
   smallest counter-based draws by global index, which merge exactly). A
   single atom (an ion) is in no group: it has no scaffold, formula or cluster
   group, and is in no sample.
   The merge numbers the labels (sorted) and
   clusters the sample exactly (the leaders). Each pass-2 task then gets the
   merged codes of its own shard's labels only, not every label of the set.
2. **groups** (:func:`groups_shard`): give every molecule its scaffold,
   formula and cluster (best leader, exact) and write the shard's molecules
   table; return per-group sums (size, and Σ q qᵀ, Σ R over the members with a
   whole frame) and each query's nearest
   neighbour in this shard. Sums add up exactly: group means and
   concentrations, and the nearest neighbour over all shards (ties to the
   lower index), equal those of the whole set (up to float summation order).
3. **angles** (:func:`angles_shard`): each member's angle to its group's mean,
   as counts in 0.01° bins per group (the median spread is within 0.005° of
   the exact one) and the closest member per group (exact), plus the frames
   of the coupling's molecules, on which the coupling is computed.

So the section, the group tables and the per-molecule tables equal what the
science functions give on the whole set's arrays (the spread within its stated
error), whatever the shard size or worker count.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from orientscope.core.groups import GROUP_KINDS
from orientscope.core.orientations_schema import Q_COLUMNS, R_COLUMNS
from orientscope.pipeline.chemistry_report import (
    CLUSTER_SAMPLE,
    CLUSTER_THRESHOLD,
    MOLECULE_COLUMNS,
    N_PAIRS,
    N_RANDOM,
    chemistry_section,
    coupling_sections,
    groups_section,
    label_groups,
    merge_no_graph,
    no_graph_part,
    no_graph_reason,
    pool_too_small,
    scaffold_keys,
    similarity_pool,
    stage_output,
)
from orientscope.pipeline.depends import depends_on
from orientscope.pipeline.engine import ClusterSpec, Engine
from orientscope.pipeline.shard_graphs import (
    ChunkJob,
    GraphsJob,
    graph_table,
    graphs_chunk,
    parse_workers,
    plan_chunks,
    read_chunks,
    shard_atom_counts,
    shard_charge_known,
)
from orientscope.pipeline.shard_stages import ShardJob, full_frames, shard_frames
from orientscope.pipeline.stage import StageOutput
from orientscope.science.clustering import (
    TanimotoIndex,
    assign_to_leaders,
    cluster_sample,
    leader_similarity,
    popcounts,
    seeded_leaders,
)
from orientscope.science.group_stats import (
    SPREAD_BIN_DEG,
    angle_partials,
    concentration_from_axes,
    group_frame,
    group_sums,
    means_from_scatter,
    member_angles_deg,
    merge_angle_partials,
    merge_group_sums,
)
from orientscope.science.rotations import derived_seed
from orientscope.science.similarity import SIMILARITY_KEY, pair_queries, partner_pool
from orientscope.store.datasets import read_meta
from orientscope.store.shards import (
    read_shard_ids,
    read_shard_table,
    shard_array_path,
    shard_table_path,
    write_shard_array,
    write_shard_table,
)

STAGE = "chemistry"
GROUP_COLUMNS = {g: f"{g}_group" for g in GROUP_KINDS}
LABEL_KEYS = {"scaffold": "scaffolds", "formula": "formulas"}  # grouping -> its labels in a pass-1 part


def _seeds(seed: int) -> tuple[int, int]:
    """(clustering seed, pair seed)."""
    return derived_seed(seed, "cluster"), derived_seed(seed, "similarity")


def _fingerprints(job: ShardJob) -> np.ndarray:
    return np.load(shard_array_path(Path(job.result_dir), STAGE, "fingerprints", job.ref.number), mmap_mode="r")


def _rows_of(index: np.ndarray, job: ShardJob) -> np.ndarray:
    """Positions in this shard of the global ``index`` values that fall in it."""
    index = np.asarray(index, dtype=np.int64)
    return index[(index >= job.ref.start) & (index < job.ref.stop)] - job.ref.start


# ---------------------------------------------------------------- pass 1: graphs
@depends_on("CLUSTER_SAMPLE", "N_PAIRS", "N_RANDOM", "MOLECULE_COLUMNS")
def graphs_shard(job: GraphsJob) -> dict:
    """The shard's chunks joined and written (fingerprints, bit counts, graph table); its labels, its molecules
    without a graph by reason, and its share of the seeded samples."""
    shard = job.shard
    chem = read_chunks(job)
    ids = read_shard_ids(shard.ref).astype(str)
    result = Path(shard.result_dir)
    write_shard_array(result, STAGE, "fingerprints", shard.ref.number, chem.fingerprints)
    counts = popcounts(chem.fingerprints)
    write_shard_array(result, STAGE, "popcounts", shard.ref.number, counts.astype(np.uint16))
    write_shard_table(result, STAGE, "graphs", shard.ref.number, graph_table(ids, chem))
    index, words = shard.ref.index, chem.fingerprints
    groupable = chem.ok & (shard_atom_counts(shard) > 1)  # a single atom (an ion) is in no group
    active = groupable & (counts > 0)
    degenerate = shard_frames(shard, "original", ["degenerate"])[:, 0].astype(bool)
    pool = similarity_pool(groupable, degenerate, words)
    cluster_seed, pair_seed = _seeds(shard.seed)
    sample = cluster_sample(cluster_seed, index[active], CLUSTER_SAMPLE) - shard.ref.start
    queries = pair_queries(pair_seed, index[pool], N_PAIRS) - shard.ref.start
    single = shard_atom_counts(shard) == 1
    charge_assumed = (chem.source != "smiles") & ~shard_charge_known(shard)
    return {
        "scaffolds": np.unique(scaffold_keys(chem.scaffold[groupable])),
        "formulas": np.unique(chem.formula[~single]),
        "n_ok": int(chem.ok.sum()),
        "n_pool": int(pool.sum()),
        "no_graph": no_graph_part(ids, chem.reason, charge_assumed, single),
        "sample": {
            "index": index[sample],
            "words": words[sample],
            "smiles": chem.smiles[sample],
            "id": ids[sample],
        },
        "queries": {"index": index[queries], "words": words[queries]},
        "partners": partner_pool(pair_seed, index[pool], N_PAIRS * N_RANDOM),
    }


def _smallest(parts: list[dict], key: str, keep: np.ndarray) -> dict:
    """The rows of the parts' ``key`` entries whose index is in ``keep`` (sorted), in index order."""
    index = np.concatenate([p[key]["index"] for p in parts])
    rows = np.flatnonzero(np.isin(index, keep))
    rows = rows[np.argsort(index[rows], kind="stable")]
    return {name: np.concatenate([p[key][name] for p in parts])[rows] for name in parts[0][key]}


@dataclass(frozen=True)
class Plan:
    """What every shard of pass 2 needs: the clustering and the queries (a few thousand rows).

    The merged scaffold and formula labels are not in it: they can number millions on a
    diverse set, so each task gets only the codes of its own shard's labels (:class:`GroupsJob`).
    """

    sample_index: np.ndarray  # (m,) global indices of the clustering sample
    sample_labels: np.ndarray  # (m,) their cluster
    leader_words: np.ndarray  # (k, 32) uint64
    query_index: np.ndarray  # (q,) global indices of the coupling's queries
    query_words: np.ndarray  # (q, 32) uint64


def merge_graphs(parts: list[dict], seed: int) -> tuple[Plan, dict]:
    """(the plan of pass 2, {"labels": merged scaffold and formula labels (sorted), "leaders":
    {"index", "smiles", "id"}, "partners": the coupling's partners})."""
    cluster_seed, pair_seed = _seeds(seed)
    sample = _smallest(
        parts,
        "sample",
        cluster_sample(cluster_seed, np.concatenate([p["sample"]["index"] for p in parts]), CLUSTER_SAMPLE),
    )
    if len(sample["index"]):
        labels, local = seeded_leaders(sample["index"], sample["words"], CLUSTER_THRESHOLD, cluster_seed)
    else:
        labels, local = np.zeros(0, np.int64), np.zeros(0, np.int64)
    queries = _smallest(
        parts, "queries", pair_queries(pair_seed, np.concatenate([p["queries"]["index"] for p in parts]), N_PAIRS)
    )
    plan = Plan(
        sample_index=sample["index"],
        sample_labels=labels,
        leader_words=sample["words"][local],
        query_index=queries["index"],
        query_words=queries["words"],
    )
    leaders = {k: sample[k][local] for k in ("index", "smiles", "id")}
    partners = partner_pool(pair_seed, np.concatenate([p["partners"] for p in parts]), N_PAIRS * N_RANDOM)
    labels = {g: np.unique(np.concatenate([p[key] for p in parts])) for g, key in LABEL_KEYS.items()}
    return plan, {"labels": labels, "leaders": leaders, "partners": partners}


def shard_codes(part: dict, labels: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """{grouping: (n_labels of the shard,) int64 merged code of each of the shard's own sorted labels}."""
    return {g: np.searchsorted(labels[g], part[key]) for g, key in LABEL_KEYS.items()}


# ---------------------------------------------------------------- pass 2: groups
@dataclass(frozen=True)
class GroupsJob:
    shard: ShardJob
    plan: Plan
    codes: dict  # grouping -> merged code of each of this shard's sorted labels (:func:`shard_codes`)


def _nearest_in_shard(words: np.ndarray, pool: np.ndarray, job: GroupsJob) -> tuple[np.ndarray, np.ndarray]:
    """Per query, (global index, Tanimoto) of its most similar pool molecule in this shard (-1, -1.0 if none).

    A query of this shard searches as its own row (so it never finds itself);
    the others are appended as rows that are not candidates.
    """
    plan, ref = job.plan, job.shard.ref
    own = (plan.query_index >= ref.start) & (plan.query_index < ref.stop)
    rows = np.where(own, plan.query_index - ref.start, len(words) + np.cumsum(~own) - 1)
    index = TanimotoIndex(
        np.vstack([words, plan.query_words[~own]]), candidates=np.r_[pool, np.zeros((~own).sum(), bool)]
    )
    nn, sim = index.nearest(rows)
    found = nn >= 0
    return np.where(found, nn + ref.start, -1), np.where(found, sim, -1.0)


def _graphs(result: Path, number: int) -> pd.DataFrame:
    """Pass 1's graph table of a shard; a run killed after pass 2 wrote the molecules table (and removed
    the graph table) reads it back from there."""
    if shard_table_path(result, STAGE, "graphs", number).is_file():
        return read_shard_table(result, STAGE, "graphs", number).to_pandas()
    return read_shard_table(result, STAGE, "molecules", number, columns=MOLECULE_COLUMNS).to_pandas()


@depends_on("CLUSTER_THRESHOLD", "GROUP_KINDS", "MOLECULE_COLUMNS")
def groups_shard(job: GroupsJob) -> dict:
    """Groups of every molecule of the shard, written as its molecules table; per-group sums and nearest neighbours."""
    shard, plan = job.shard, job.plan
    result = Path(shard.result_dir)
    chem = _graphs(result, shard.ref.number)
    single = shard_atom_counts(shard) == 1  # ions: in no group, as pass 1 left them out of the labels
    groupable = chem["chemistry_ok"].to_numpy(bool) & ~single
    words = np.ascontiguousarray(_fingerprints(shard))
    groups = {g: np.full(len(chem), -1, np.int64) for g in GROUP_KINDS}
    # The shard's own labels, sorted as pass 1 sent them: local position -> merged code.
    members = {"scaffold": groupable, "formula": ~single}
    keys = {"scaffold": scaffold_keys(chem["scaffold"].to_numpy(str)), "formula": chem["formula"].to_numpy(str)}
    for g, values in keys.items():
        own, local = np.unique(values[members[g]], return_inverse=True)
        if len(own) != len(job.codes[g]):
            raise ValueError(
                f"shard {shard.ref.number}: {len(own)} {g} labels, pass 1 sent codes for {len(job.codes[g])}"
            )
        groups[g][members[g]] = job.codes[g][local.reshape(-1)]
    active = np.flatnonzero(groupable & (popcounts(words) > 0))
    groups["cluster"][active] = assign_to_leaders(words[active], plan.leader_words, CLUSTER_THRESHOLD)[0]
    in_sample = (plan.sample_index >= shard.ref.start) & (plan.sample_index < shard.ref.stop)
    groups["cluster"][plan.sample_index[in_sample] - shard.ref.start] = plan.sample_labels[in_sample]
    similarity = leader_similarity(words, groups["cluster"], plan.leader_words)
    table = chem.assign(**{GROUP_COLUMNS[g]: groups[g] for g in GROUP_KINDS}, cluster_similarity=similarity)
    write_shard_table(result, STAGE, "molecules", shard.ref.number, table)
    shard_table_path(result, STAGE, "graphs", shard.ref.number).unlink(missing_ok=True)
    q = shard_frames(shard, "original", Q_COLUMNS)
    R = shard_frames(shard, "original", R_COLUMNS).reshape(-1, 3, 3)
    degenerate = shard_frames(shard, "original", ["degenerate"])[:, 0].astype(bool)
    return {
        "sums": {g: group_sums(groups[g], q, R, full_frames(shard, "original")) for g in GROUP_KINDS},
        "nearest": _nearest_in_shard(words, similarity_pool(groupable, degenerate, words), job),
    }


def merge_nearest(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Each query's best neighbour over all shards: highest Tanimoto, ties to the lower index (the earlier shard)."""
    nn, best = parts[0][0].copy(), parts[0][1].copy()
    for index, sim in parts[1:]:
        better = sim > best
        nn[better], best[better] = index[better], sim[better]
    return nn, best


# ---------------------------------------------------------------- pass 3: angles
@dataclass(frozen=True)
class AnglesJob:
    shard: ShardJob
    means: dict  # grouping -> (group ids ascending, (k, 4) mean quaternions)
    gather: np.ndarray  # global indices whose frames the coupling needs


@depends_on("GROUP_KINDS", "SPREAD_BIN_DEG")
def angles_shard(job: AnglesJob) -> dict:
    """Per grouping, angle partials of the shard's members; the frames of the coupling's molecules here."""
    shard = job.shard
    table = read_shard_table(Path(shard.result_dir), STAGE, "molecules", shard.ref.number,
                             columns=["id", *GROUP_COLUMNS.values()]).to_pandas()  # fmt: skip
    q = shard_frames(shard, "original", Q_COLUMNS)
    posed = full_frames(shard, "original")  # only a whole frame has an angle to its group's mean pose
    ids, index = table["id"].to_numpy(str), shard.ref.index
    out = {"angles": {}, "typical_id": {}}
    for g in GROUP_KINDS:
        groups = np.where(posed, table[GROUP_COLUMNS[g]].to_numpy(np.int64), -1)
        rows, angles = member_angles_deg(groups, q, *job.means[g])
        part = angle_partials(groups[rows], angles, index[rows])
        out["angles"][g] = part
        out["typical_id"].update(
            zip(part["typical"]["index"].tolist(), ids[part["typical"]["index"] - shard.ref.start], strict=True)
        )
    rows = _rows_of(job.gather, shard)
    out["gathered"] = {
        "index": index[rows],
        **{which: shard_frames(shard, which, R_COLUMNS)[rows].reshape(-1, 3, 3) for which in ("original", "control")},
    }
    return out


# ---------------------------------------------------------------- the stage
def _graphs_pass(engine: Engine, jobs: list[ShardJob], say) -> list[dict]:
    """Pass 1: chunks of every shard on the engine (or a local cluster, :func:`parse_workers`), then per shard."""
    counts = [shard_atom_counts(j) for j in jobs]
    has_smiles = bool(jobs and read_meta(Path(jobs[0].data_dir), jobs[0].dataset_id).get("has_smiles"))
    workers = parse_workers(engine, int(sum(c.sum() for c in counts)), has_smiles)
    plan = plan_chunks(jobs, counts, max(workers, engine.describe()["workers"]), has_smiles)
    chunks = [ChunkJob(j, lo, hi) for j, ranges in zip(jobs, plan, strict=True) for lo, hi in ranges]
    progress = say("graphs, fingerprints, scaffolds:", 0.0, 0.65, unit="molecules")
    weights = [c.hi - c.lo for c in chunks]
    with Engine(ClusterSpec("local", workers=workers)) if workers > 1 else nullcontext() as local:
        engine.map(graphs_chunk, chunks, progress, weights=weights, on=local)
    parts = engine.map(graphs_shard, [GraphsJob(j, tuple(r)) for j, r in zip(jobs, plan, strict=True)],
                       say("graph tables:", 0.65, 0.7))  # fmt: skip
    return parts


def run_chemistry(engine: Engine, jobs: list[ShardJob], params: dict, say) -> StageOutput:
    n = sum(j.ref.n_molecules for j in jobs)
    seed = int(params["seed"])
    graphs = _graphs_pass(engine, jobs, say)
    plan, extra = merge_graphs(graphs, seed)
    group_jobs = [GroupsJob(j, plan, shard_codes(part, extra["labels"])) for j, part in zip(jobs, graphs, strict=True)]
    passes = engine.map(groups_shard, group_jobs, say("groups and neighbours:", 0.7, 0.85))
    sums = {g: merge_group_sums([p["sums"][g] for p in passes]) for g in GROUP_KINDS}
    means = {g: (sums[g]["group"], means_from_scatter(sums[g]["scatter"])) for g in GROUP_KINDS}
    neighbours, tanimoto = merge_nearest([p["nearest"] for p in passes])
    n_pool = sum(p["n_pool"] for p in graphs)
    skipped = pool_too_small(n_pool, n)
    gather = (
        np.unique(np.concatenate([plan.query_index, neighbours, extra["partners"]]))
        if not skipped
        else np.zeros(0, np.int64)
    )
    angles = engine.map(angles_shard, [AnglesJob(j, means, gather) for j in jobs], say("group spreads:", 0.85, 1.0))

    labels = {**extra["labels"], "cluster": np.asarray(extra["leaders"]["smiles"], dtype=object)}
    typical_ids = {}
    for part in angles:
        typical_ids.update(part["typical_id"])
    tables = {}
    for g in GROUP_KINDS:
        s = sums[g]
        spread, typical = merge_angle_partials([a["angles"][g] for a in angles], s["group"], s["n_posed"])
        concentration = concentration_from_axes(s["axes"], s["n_posed"])
        frame = group_frame(s["group"], s["size"], means[g][1], spread, concentration, typical, s["n_posed"])
        named = np.array([typical_ids.get(int(i)) for i in frame["typical_index"]], dtype=object)
        tables[f"groups_{g}"] = label_groups(frame, labels[g], named)
    clusters = tables["groups_cluster"]
    clusters["leader_id"] = extra["leaders"]["id"][clusters["group"].to_numpy(np.int64)] if len(clusters) else []

    similarity = control = {}
    if not skipped:
        gathered = {k: np.concatenate([a["gathered"][k] for a in angles]) for k in ("index", "original", "control")}
        order = np.argsort(gathered["index"])
        rotations = {w: gathered[w][order] for w in ("original", "control")}
        similarity, control = coupling_sections(gathered["index"][order], rotations, plan.query_index, neighbours,
                                                tanimoto, extra["partners"], seed)  # fmt: skip
    skipped_parts = {SIMILARITY_KEY: skipped} if skipped else {}
    n_ok = sum(p["n_ok"] for p in graphs)
    skipped_parts.update(no_graph_reason(n_ok))
    n_grouped = {g: int(sums[g]["size"].sum()) for g in GROUP_KINDS}
    no_graph = merge_no_graph([p["no_graph"] for p in graphs])
    report = {"groups": groups_section(tables, n_grouped, n), "chemistry": chemistry_section(n, n_ok, no_graph)}
    out = stage_output(report, similarity, control, tables, skipped_parts)
    out.settings.update({
        "spread_method": f"counts in {SPREAD_BIN_DEG}° bins merged over shards: the median within {SPREAD_BIN_DEG / 2}°",
        "n_shards": len(jobs),
    })  # fmt: skip
    out.shard_rows = {"molecules": n, "fingerprints": n}
    return out
