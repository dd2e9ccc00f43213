"""Stage "chemistry": per-molecule chemistry, groupings, per-group poses and the similarity–pose coupling."""

from __future__ import annotations

import numpy as np
import pandas as pd

from backend.core.groups import GROUP_KINDS, UNGROUPED
from backend.core.progress import scaled
from backend.pipeline.stage import Stage, StageContext, StageOutput
from backend.science.chemistry import FP_COLUMNS, compute_chemistry
from backend.science.clustering import sampled_leader_clusters
from backend.science.group_stats import group_orientation_stats
from backend.science.rotations import derived_seed
from backend.science.similarity import coupling, neighbour_pairs

CLUSTER_THRESHOLD = 0.5
CLUSTER_SAMPLE = 1000
N_PAIRS = 2000
N_PERMUTATIONS = 2000
N_RANDOM = 10
TOP_GROUPS = 20
# A neighbour pair needs two molecules; random partners come from the same pool.
MIN_SIMILARITY_POOL = 2


def _factorize(values: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(group id per molecule, -1 where invalid; label per group id)."""
    ids = np.full(len(values), -1, np.int64)
    labels, inverse = np.unique(values[valid], return_inverse=True)
    ids[valid] = inverse.reshape(-1)
    return ids, labels


def _group_table(group_ids: np.ndarray, labels: np.ndarray, frames, mol_ids: np.ndarray) -> pd.DataFrame:
    table = group_orientation_stats(group_ids, frames.quaternions, frames.rotations)
    table["typical_id"] = mol_ids[table.pop("typical_index").to_numpy(np.int64)]
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


def _similarity(ctx: StageContext, chem, frames, control_frames) -> tuple[dict, dict, str | None]:
    """(coupling of the stored poses, of the control, reason it was skipped or None)."""
    pool = chem.ok & ~frames.degenerate & (np.bitwise_count(chem.fingerprints).sum(axis=1) > 0)
    n_pool = int(pool.sum())
    if n_pool < MIN_SIMILARITY_POOL:
        reason = (
            f"similarity–pose coupling needs at least {MIN_SIMILARITY_POOL} molecules with a chemical graph "
            f"and a well-defined frame, got {n_pool} of {len(pool)}"
        )
        return {}, {}, reason
    ctx.progress(0.75, "chemical nearest neighbours")
    pair_seed = derived_seed(ctx.seed, "similarity")
    queries, neighbours, tanimoto = neighbour_pairs(chem.fingerprints, N_PAIRS, pair_seed, pool)
    ctx.progress(0.9, "similarity–pose coupling")
    kw = {
        "pool": pool,
        "seed": derived_seed(ctx.seed, "coupling"),
        "n_random": N_RANDOM,
        "n_permutations": N_PERMUTATIONS,
    }
    similarity = coupling(frames.rotations, queries, neighbours, **kw)
    control = coupling(control_frames.rotations, queries, neighbours, **kw)
    similarity["control_enrichment"] = control["enrichment"]
    similarity["median_nn_tanimoto"] = float(np.median(tanimoto))
    return similarity, control, None


def run(ctx: StageContext) -> StageOutput:
    mols = ctx.mols
    ctx.progress(0.02, "molecular graphs, fingerprints and scaffolds")
    chem = compute_chemistry(mols, progress=scaled(ctx.progress, 0.02, 0.52))
    ids = mols.ids
    ctx.progress(0.55, f"Tanimoto clusters at {CLUSTER_THRESHOLD}")
    cluster_seed = derived_seed(ctx.seed, "cluster")
    cluster, leaders, cluster_sim = sampled_leader_clusters(
        chem.fingerprints, CLUSTER_THRESHOLD, sample_size=CLUSTER_SAMPLE, seed=cluster_seed, mask=chem.ok
    )
    scaffold, scaffold_labels = _factorize(np.where(chem.scaffold == "", "(acyclic)", chem.scaffold), chem.ok)
    formula, formula_labels = _factorize(chem.formula, np.ones(len(ids), bool))
    # A cluster is named by its representative: the leader it was grown from.
    cluster_labels = np.asarray(chem.smiles, dtype=object)[leaders]
    group_ids = {"scaffold": scaffold, "formula": formula, "cluster": cluster}
    group_labels = {"scaffold": scaffold_labels, "formula": formula_labels, "cluster": cluster_labels}

    ctx.progress(0.65, "per-group orientation statistics")
    frames, control_frames = ctx.frames("original"), ctx.frames("control")
    tables = {f"groups_{g}": _group_table(group_ids[g], group_labels[g], frames, ids) for g in GROUP_KINDS}
    clusters = tables["groups_cluster"]
    clusters["leader_id"] = ids[leaders[clusters["group"].to_numpy(np.int64)]] if len(clusters) else []
    groups = {
        g: {
            "n_groups": int(len(tables[f"groups_{g}"])),
            "n_grouped": int((group_ids[g] >= 0).sum()),
            "ungrouped": {"label": UNGROUPED[g], "size": int((group_ids[g] < 0).sum())},
            "largest": _largest(tables[f"groups_{g}"]),
        }
        for g in GROUP_KINDS
    }
    groups["cluster"].update({"threshold": CLUSTER_THRESHOLD, "method": "sampled leader", "sample": CLUSTER_SAMPLE})

    similarity, control, similarity_skipped = _similarity(ctx, chem, frames, control_frames)
    skipped_parts = {"similarity": similarity_skipped} if similarity_skipped else {}
    if not chem.ok.any():
        reason = "no molecule has a chemical graph (no SMILES, and bonds could not be perceived from 3D)"
        skipped_parts.update({"scaffold": reason, "cluster": reason})

    molecules = pd.DataFrame(
        {
            "id": ids,
            "smiles": chem.smiles,
            "formula": chem.formula,
            "scaffold": chem.scaffold,
            "generic_scaffold": chem.generic_scaffold,
            "chemistry_ok": chem.ok,
            "chemistry_source": chem.source,
            "chemistry_error": chem.error,
            "scaffold_group": scaffold,
            "formula_group": formula,
            "cluster_group": cluster,
            "cluster_similarity": cluster_sim,
        }
    )
    fingerprints = pd.DataFrame({"id": ids, **dict(zip(FP_COLUMNS, chem.fingerprints.T, strict=True))})
    tables.update({"molecules": molecules, "fingerprints": fingerprints})
    n_failed = int((~chem.ok).sum())
    report = {"groups": groups, "chemistry": {"n_ok": int(chem.ok.sum()), "n_failed": n_failed}}
    return StageOutput(
        report={**report, "similarity": similarity} if similarity else report,
        control={"similarity": control} if control else {},
        tables=tables,
        settings={
            "fingerprint": "Morgan radius 2, 2048 bits",
            "cluster_method": "sampled leader (sphere exclusion on a sample, best-leader assignment)",
            "cluster_threshold": CLUSTER_THRESHOLD,
            "cluster_sample": CLUSTER_SAMPLE,
            "cluster_seed": "derived_seed(seed, 'cluster')",
            "n_pairs": N_PAIRS,
            "pair_seed": "derived_seed(seed, 'similarity')",
            "coupling_seed": "derived_seed(seed, 'coupling')",
            "n_permutations": N_PERMUTATIONS,
            "n_random_per_query": N_RANDOM,
        },
        skipped_parts=skipped_parts,
    )


STAGE = Stage(
    "chemistry", run, requires=("frames",), description="chemistry groups, per-group poses, similarity–pose coupling"
)
