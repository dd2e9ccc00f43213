"""The chemistry stage's settings and its report: groups, the similarity–pose coupling and their sections.

The per-shard steps and merges that feed these live in ``pipeline.shard_chemistry``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from orientscope.core.groups import GROUP_KINDS, UNGROUPED
from orientscope.pipeline.stage import StageOutput
from orientscope.science.perception import NO_GRAPH_REASONS
from orientscope.science.rotations import derived_seed
from orientscope.science.similarity import SIMILARITY_KEY, coupling

CLUSTER_THRESHOLD = 0.5
CLUSTER_SAMPLE = 1000
N_PAIRS = 2000
N_PERMUTATIONS = 2000
N_RANDOM = 10
TOP_GROUPS = 20
# Fewer neighbour pairs than this and the coupling is not tested (see pool_too_small for the calibration).
MIN_SIMILARITY_PAIRS = 100
ACYCLIC = "(acyclic)"
N_EXAMPLES = 5  # molecule ids named per reason a molecule has no graph
MOLECULE_COLUMNS = ["id", "smiles", "formula", "scaffold", "generic_scaffold", "chemistry_ok", "chemistry_source",
                    "chemistry_error", "chemistry_reason"]  # fmt: skip
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
    """The largest groups; a group none of whose members has a whole frame has no pose (None)."""
    top = table.head(TOP_GROUPS)
    return [
        {
            "group": int(r.group),
            "label": str(r.label),
            "size": int(r.size),
            "n_posed": int(r.n_posed),
            **(
                {
                    "mean_quaternion": [float(r.qx), float(r.qy), float(r.qz), float(r.qw)],
                    "spread_deg": float(r.spread_deg),
                    "concentration": float(r.concentration),
                    "typical_id": str(r.typical_id),
                }
                if r.n_posed
                else {"mean_quaternion": None, "spread_deg": None, "concentration": None, "typical_id": None}
            ),
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


def similarity_pool(groupable: np.ndarray, degenerate: np.ndarray, words: np.ndarray) -> np.ndarray:
    """(n,) bool: molecules with a graph and more than one atom, a well-defined frame and a non-empty fingerprint."""
    return groupable & ~degenerate & (np.bitwise_count(words).sum(axis=1) > 0)


def pool_too_small(n_pool: int, n_molecules: int) -> str | None:
    """Why the similarity–pose coupling is not tested (None if it is): fewer than ``MIN_SIMILARITY_PAIRS`` pairs.

    Each molecule of the pool is at most one pair's query. Two uniform poses are within 30° of each
    other 0.75 % of the time, so on few pairs the count the test rests on is 0 or 1 whether or not
    neighbours share poses (``enrichment 0.0, p 1.0`` on 7 pairs said nothing). At 100 pairs a
    five-fold enrichment (full QM9's is larger) is found at α = 0.05 with probability 0.73 (exact
    binomial; 0.54 at 75 pairs, 0.29 at 50); simulated, the test's false positives stay at or under 2 %
    at every size from 5 to 200 pairs, and it rejects on 16 % of 100-molecule QM9 subsets (BENCHMARKS.md,
    section ``similarity-pairs``).
    """
    n_pairs = min(n_pool, N_PAIRS)
    if n_pairs >= MIN_SIMILARITY_PAIRS:
        return None
    return (
        f"similarity–pose coupling not tested: {n_pairs} neighbour pairs, fewer than the {MIN_SIMILARITY_PAIRS} it "
        f"needs to say anything ({n_pool} of {n_molecules} molecules have a chemical graph, more than one atom "
        "and a well-defined frame)"
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
        report={**report, SIMILARITY_KEY: similarity} if similarity else report,
        control={SIMILARITY_KEY: control} if control else {},
        tables=tables,
        settings=dict(SETTINGS),
        skipped_parts=skipped_parts,
    )


def no_graph_part(ids: np.ndarray, reasons: np.ndarray, charge_assumed: np.ndarray, single: np.ndarray) -> dict:
    """One shard's molecules without a graph: count and first ids per reason; single atoms; charges assumed."""
    counts, examples = {}, {}
    for reason in np.unique(reasons[reasons != ""]):
        rows = np.flatnonzero(reasons == reason)
        counts[str(reason)] = int(len(rows))
        examples[str(reason)] = [str(i) for i in ids[rows[:N_EXAMPLES]]]
    return {"counts": counts, "examples": examples, "n_single_atoms": int(single.sum()),
            "n_charge_assumed": int(charge_assumed.sum())}  # fmt: skip


def merge_no_graph(parts: list[dict]) -> dict:
    """:func:`no_graph_part` of the whole set from its shards' (in shard order: the first ids come first)."""
    out = {"counts": {}, "examples": {}, "n_single_atoms": 0, "n_charge_assumed": 0}
    for part in parts:
        for reason, count in part["counts"].items():
            out["counts"][reason] = out["counts"].get(reason, 0) + count
            out["examples"][reason] = (out["examples"].get(reason, []) + part["examples"][reason])[:N_EXAMPLES]
        out["n_single_atoms"] += part["n_single_atoms"]
        out["n_charge_assumed"] += part["n_charge_assumed"]
    return out


def chemistry_section(n_molecules: int, n_ok: int, no_graph: dict) -> dict:
    """The report's ``chemistry``: how many molecules have a graph, and those without one grouped by reason.

    ``no_graph`` maps each reason (``science.perception.NO_GRAPH_REASONS``) to its count, its meaning and the
    first ids, largest first; ``n_single_atoms`` (ions, in no group) and ``n_charge_assumed`` (perceived from
    3D with no charge in the file: 0 assumed) complete it.
    """
    order = sorted(no_graph["counts"], key=lambda r: (-no_graph["counts"][r], r))
    return {
        "n_ok": int(n_ok),
        "n_failed": int(n_molecules - n_ok),
        "no_graph": {
            r: {
                "count": no_graph["counts"][r],
                "meaning": NO_GRAPH_REASONS.get(r, r),
                "examples": no_graph["examples"][r],
            }
            for r in order
        },
        "n_single_atoms": no_graph["n_single_atoms"],
        "n_charge_assumed": no_graph["n_charge_assumed"],
    }


def no_graph_reason(n_ok: int) -> dict:
    if n_ok:
        return {}
    reason = "no molecule has a chemical graph (no SMILES, and bonds could not be perceived from 3D)"
    return {"scaffold": reason, "cluster": reason}
