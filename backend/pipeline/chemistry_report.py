"""The chemistry stage's settings and its report: groups, the similarity–pose coupling and their sections.

The per-shard steps and merges that feed these live in ``pipeline.shard_chemistry``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from orientscope.core.groups import GROUP_KINDS, UNGROUPED
from orientscope.pipeline.stage import StageOutput
from orientscope.science.rotations import derived_seed
from orientscope.science.similarity import coupling

CLUSTER_THRESHOLD = 0.5
CLUSTER_SAMPLE = 1000
N_PAIRS = 2000
N_PERMUTATIONS = 2000
N_RANDOM = 10
TOP_GROUPS = 20
# A neighbour pair needs two molecules; random partners come from the same pool.
MIN_SIMILARITY_POOL = 2
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


def scaffold_keys(scaffold: np.ndarray) -> np.ndarray:
    """Scaffold group keys: the Murcko scaffold, or ``(acyclic)`` for a graph without rings."""
    return np.where(scaffold == "", ACYCLIC, scaffold)


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


def stage_output(report: dict, similarity: dict, control: dict, tables: dict, skipped_parts: dict) -> StageOutput:
    """The stage's output around its report."""
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
