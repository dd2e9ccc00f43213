"""The chemistry stage per shard equals the science functions on the whole set's arrays, whatever the cut."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from orientscope.pipeline import chemistry_report as report
from orientscope.pipeline.frames_table import frames_from_table
from orientscope.pipeline.precompute import make_params
from orientscope.pipeline.shard_chemistry import shard_codes
from orientscope.pipeline.sharded_ingest import ingest_files
from orientscope.pipeline.synth import SynthSpec, write_synth
from orientscope.science.chemistry import FP_COLUMNS, compute_chemistry
from orientscope.science.clustering import sampled_leader_clusters
from orientscope.science.group_stats import SPREAD_BIN_DEG, group_orientation_stats
from orientscope.science.rotations import derived_seed
from orientscope.science.similarity import neighbour_pairs, partner_pool
from orientscope.store import datasets as ds
from orientscope.store.results import ResultStore
from orientscope.store.shards import open_shard_arrays, shard_refs

N = 2400
GROUPINGS = ("scaffold", "formula", "cluster")


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory, qm9_small):
    out = tmp_path_factory.mktemp("synth")
    write_synth(out, SynthSpec(n=N, bias="qm9", seed=5, shard_size=1000), source=qm9_small)
    return out


def _sharded(root, synth_dir, shard_size: int, cluster: str):
    meta = ingest_files(root, [synth_dir], "chem", cluster=cluster, shard_size=shard_size)
    store = ResultStore(root, meta["id"], make_params())
    return meta, store


@pytest.fixture(scope="module")
def sharded(tmp_path_factory, synth_dir):
    """Shards of 700 molecules (the last one short), in process."""
    return _sharded(tmp_path_factory.mktemp("a"), synth_dir, 700, "in-process")


def _factorize(values: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ids = np.full(len(values), -1, np.int64)
    labels, inverse = np.unique(values[valid], return_inverse=True)
    ids[valid] = inverse.reshape(-1)
    return ids, labels


def on_arrays(mols, frames: dict, seed: int):
    """The chemistry stage's output from the science functions on the whole set's arrays (the oracle)."""
    chem = compute_chemistry(mols)
    ids = mols.ids
    single = mols.n_atoms == 1  # ions: in no group
    groupable = chem.ok & ~single
    cluster, leaders, cluster_sim = sampled_leader_clusters(
        chem.fingerprints, report.CLUSTER_THRESHOLD, sample_size=report.CLUSTER_SAMPLE,
        seed=derived_seed(seed, "cluster"), mask=groupable,
    )  # fmt: skip
    group_ids, group_labels = {"cluster": cluster}, {"cluster": np.asarray(chem.smiles, dtype=object)[leaders]}
    group_ids["scaffold"], group_labels["scaffold"] = _factorize(report.scaffold_keys(chem.scaffold), groupable)
    group_ids["formula"], group_labels["formula"] = _factorize(chem.formula, ~single)
    original = frames["original"]
    tables = {}
    for g in GROUPINGS:
        table = group_orientation_stats(group_ids[g], original.quaternions, original.rotations,
                                        original.orientation == "full")  # fmt: skip
        at = table["typical_index"].to_numpy(np.int64)
        typical = np.where(at >= 0, ids[at], None)
        tables[f"groups_{g}"] = report.label_groups(table, group_labels[g], typical)
    clusters = tables["groups_cluster"]
    clusters["leader_id"] = ids[leaders[clusters["group"].to_numpy(np.int64)]]
    n_grouped = {g: int((group_ids[g] >= 0).sum()) for g in GROUPINGS}
    pool = report.similarity_pool(groupable, original.degenerate, chem.fingerprints)
    pair_seed = derived_seed(seed, "similarity")
    queries, neighbours, tanimoto = neighbour_pairs(chem.fingerprints, report.N_PAIRS, pair_seed, pool)
    partners = partner_pool(pair_seed, np.flatnonzero(pool), report.N_PAIRS * report.N_RANDOM)
    gathered = np.unique(np.concatenate([queries, neighbours, partners]))
    rotations = {which: frames[which].rotations[gathered] for which in ("original", "control")}
    similarity, control = report.coupling_sections(gathered, rotations, queries, neighbours, tanimoto, partners, seed)
    values = [ids, chem.smiles, chem.formula, chem.scaffold, chem.generic_scaffold, chem.ok, chem.source, chem.error,
              chem.reason]  # fmt: skip
    molecules = pd.DataFrame(dict(zip(report.MOLECULE_COLUMNS, values, strict=True)))
    tables["molecules"] = molecules.assign(scaffold_group=group_ids["scaffold"], formula_group=group_ids["formula"],
                                           cluster_group=cluster, cluster_similarity=cluster_sim)  # fmt: skip
    tables["fingerprints"] = pd.DataFrame({"id": ids, **dict(zip(FP_COLUMNS, chem.fingerprints.T, strict=True))})
    n_ok = int(chem.ok.sum())
    charge_known = ~np.isnan(mols.charges) if mols.charges is not None else np.zeros(len(ids), bool)
    no_graph = report.no_graph_part(ids, chem.reason, (chem.source != "smiles") & ~charge_known, single)
    section = {"groups": report.groups_section(tables, n_grouped, len(ids)),
               "chemistry": report.chemistry_section(len(ids), n_ok, no_graph)}  # fmt: skip
    return report.stage_output(section, similarity, control, tables, {})


@pytest.fixture(scope="module")
def in_memory(sharded):
    """The oracle on the same molecules and the same frames (the sharded run's control copy)."""
    meta, store = sharded
    mols = ds.load_dataset(store.dir.parents[3], meta["id"])
    frames = {which: frames_from_table(store.table("frames", which).to_pandas()) for which in ("original", "control")}
    return on_arrays(mols, frames, make_params()["seed"])


def _section(store) -> dict:
    return store.section("chemistry")


def test_per_molecule_tables_and_fingerprint_files_equal_the_science_on_arrays(sharded, in_memory):
    meta, store = sharded
    molecules = store.table("chemistry", "molecules").to_pandas()
    pd.testing.assert_frame_equal(molecules, in_memory.tables["molecules"], check_dtype=False)
    assert molecules["chemistry_ok"].all() and molecules["cluster_group"].ge(0).mean() > 0.5
    files = open_shard_arrays(store.dir, "chemistry", "fingerprints")
    refs = shard_refs(store.dir.parents[3], meta["id"])
    assert [f.shape for f in files] == [(r.n_molecules, 32) for r in refs] and files[0].dtype == np.uint64
    words = np.concatenate(files)
    expected = in_memory.tables["fingerprints"].drop(columns="id").to_numpy(np.uint64)
    np.testing.assert_array_equal(words, expected)
    counts = open_shard_arrays(store.dir, "chemistry", "popcounts")  # beside them, their set bits
    assert [c.dtype for c in counts] == [np.uint16] * len(refs)
    np.testing.assert_array_equal(np.concatenate(counts), np.bitwise_count(expected).sum(axis=1))
    # Existing readers still see one fingerprints table.
    table = store.table("chemistry", "fingerprints").to_pandas()
    pd.testing.assert_frame_equal(table, in_memory.tables["fingerprints"], check_dtype=False)


def test_each_groups_task_gets_the_merged_codes_of_its_own_labels_only():
    parts = [
        {"scaffolds": np.array(["C1CC1", "c1ccccc1"]), "formulas": np.array(["CH4", "H2O"])},
        {"scaffolds": np.array(["C1CC1", "C1CCC1"]), "formulas": np.array(["C2H6"])},
        {"scaffolds": np.array([], dtype=str), "formulas": np.array(["H2O"])},
    ]
    labels = {g: np.unique(np.concatenate([p[f"{g}s"] for p in parts])) for g in ("scaffold", "formula")}
    assert labels["scaffold"].tolist() == ["C1CC1", "C1CCC1", "c1ccccc1"]
    codes = [shard_codes(p, labels) for p in parts]
    assert [c["scaffold"].tolist() for c in codes] == [[0, 2], [0, 1], []]
    assert [c["formula"].tolist() for c in codes] == [[1, 2], [0], [2]]


def test_report_and_group_tables_equal_the_science_on_arrays_within_the_stated_spread_error(sharded, in_memory):
    _, store = sharded
    section = _section(store)
    expected = in_memory.section()
    assert section["skipped_parts"] == expected["skipped_parts"] == {}
    # The coupling sees the same pairs, partners and frames: identical figures.
    assert section["report"]["similarity"] == expected["report"]["similarity"]
    assert section["control"] == expected["control"]
    assert section["report"]["chemistry"] == expected["report"]["chemistry"]
    for g in GROUPINGS:
        got, want = store.table("chemistry", f"groups_{g}").to_pandas(), in_memory.tables[f"groups_{g}"]
        assert len(got) > 1 and list(got.columns) == list(want.columns)
        exact = [c for c in want.columns if c not in ("qx", "qy", "qz", "qw", "spread_deg", "concentration")]
        pd.testing.assert_frame_equal(got[exact], want[exact], check_dtype=False)
        np.testing.assert_allclose(
            got[["qx", "qy", "qz", "qw", "concentration"]], want[["qx", "qy", "qz", "qw", "concentration"]], atol=1e-9
        )
        assert np.abs(got["spread_deg"] - want["spread_deg"]).max() <= SPREAD_BIN_DEG / 2 + 1e-9
        mine, theirs = section["report"]["groups"][g], expected["report"]["groups"][g]
        assert {k: v for k, v in mine.items() if k != "largest"} == {k: v for k, v in theirs.items() if k != "largest"}
    assert section["report"]["similarity"]["n_pairs"] == report.N_PAIRS
    assert section["report"]["similarity"]["enrichment"] > 1.5


def _comparable(store) -> tuple[dict, dict]:
    tables = {g: store.table("chemistry", f"groups_{g}").to_pandas() for g in GROUPINGS}
    tables["molecules"] = store.table("chemistry", "molecules").to_pandas()
    return _section(store), tables


def test_shard_size_and_a_two_worker_cluster_give_the_same_result(tmp_path, synth_dir, sharded):
    _, store = sharded
    section, tables = _comparable(store)
    _, other = _sharded(tmp_path, synth_dir, 1000, "local:2")
    assert other.manifest()["stages"]["chemistry"]["engine"] == {"where": "local:2", "workers": 2}
    other_section, other_tables = _comparable(other)
    # Group sums are fixed point, so they add up bit for bit whatever the cut.
    assert other_section == section
    for name, table in tables.items():
        pd.testing.assert_frame_equal(other_tables[name], table)


def test_a_set_run_in_process_by_its_size_parses_on_local_workers_with_the_same_result(
    tmp_path, synth_dir, sharded, monkeypatch
):
    import os

    from orientscope.pipeline import shard_chemistry, shard_graphs
    from orientscope.pipeline.engine import CLUSTER_ENV, LOCAL_ABOVE_ENV, ClusterSpec

    monkeypatch.delenv(CLUSTER_ENV, raising=False)
    monkeypatch.delenv(LOCAL_ABOVE_ENV, raising=False)
    monkeypatch.setattr(shard_graphs, "PARALLEL_FROM_S", 0.0)  # the rule of a set with much RDKit work, on this one
    started = []

    class Recorded(shard_chemistry.Engine):
        def __enter__(self):
            started.append(self.spec)
            return super().__enter__()

    monkeypatch.setattr(shard_chemistry, "Engine", Recorded)
    _, store = sharded
    section, tables = _comparable(store)
    _, other = _sharded(tmp_path, synth_dir, 700, None)  # no cluster named: in process by its size
    workers = min(shard_graphs.MAX_PARSE_WORKERS, os.cpu_count() or 1)
    assert started == ([ClusterSpec("local", workers=workers)] if workers > 1 else [])
    assert other.manifest()["stages"]["chemistry"]["engine"] == {"where": "in-process", "workers": 1}
    other_section, other_tables = _comparable(other)
    assert other_section == section
    for name, table in tables.items():
        pd.testing.assert_frame_equal(other_tables[name], table)


def test_parse_workers_only_where_the_rdkit_work_outweighs_starting_them():
    import os
    from types import SimpleNamespace

    from orientscope.pipeline.engine import ClusterSpec
    from orientscope.pipeline.shard_graphs import COST_US_PER_ATOM, MAX_PARSE_WORKERS, PARALLEL_FROM_S, parse_workers

    def workers(spec, n_atoms, has_smiles=True):
        return parse_workers(SimpleNamespace(spec=spec), n_atoms, has_smiles)

    by_size = ClusterSpec("in-process", by_size=True)
    enough = int(PARALLEL_FROM_S * 1e6 / COST_US_PER_ATOM["smiles"]) + 1  # atoms of that much work from SMILES
    assert workers(by_size, enough) == min(MAX_PARSE_WORKERS, os.cpu_count() or 1)
    assert workers(by_size, enough // 2) == 1
    # Perceiving bonds from 3D costs more per atom: fewer atoms are worth the workers.
    assert workers(by_size, enough // 2, has_smiles=False) == min(MAX_PARSE_WORKERS, os.cpu_count() or 1)
    assert workers(ClusterSpec("in-process"), 10**9) == 1  # named: --cluster in-process
    assert workers(ClusterSpec("local", workers=2, by_size=True), 10**9) == 1  # the engine's own workers


def test_chunks_are_balanced_by_atoms_and_cover_every_row():
    from orientscope.pipeline.shard_graphs import cut_by_atoms

    counts = np.array([400] + [10] * 40 + [400, 5, 5])  # two large ligands among small molecules
    pieces = cut_by_atoms(counts, 4)
    assert pieces[0][0] == 0 and pieces[-1][1] == len(counts)
    assert all(a[1] == b[0] for a, b in zip(pieces[:-1], pieces[1:], strict=True))
    atoms = [int(counts[lo:hi].sum()) for lo, hi in pieces]
    assert max(atoms) <= 410 and len(pieces) == 4  # no chunk holds both large ligands
    assert cut_by_atoms(np.array([7, 7]), 5) == [(0, 1), (1, 2)] and cut_by_atoms(np.zeros(0, int), 3) == []


def test_chunks_hold_about_a_second_of_work_within_their_bounds_per_worker():
    from orientscope.pipeline.shard_graphs import CHUNKS_PER_WORKER, MAX_CHUNKS_PER_WORKER, plan_chunks

    def n_chunks(counts, workers, has_smiles):
        return sum(len(p) for p in plan_chunks([None] * len(counts), counts, workers, has_smiles))

    ligands = [np.full(8653, 50)]  # 432,650 atoms perceived from 3D: ~26 s of work
    assert n_chunks(ligands, 2, has_smiles=False) == 26
    assert n_chunks(ligands, 2, has_smiles=True) == CHUNKS_PER_WORKER * 2  # from SMILES: ~5 s, yet 4 per worker
    millions = [np.full(250_000, 18)] * 40  # 10M QM9-like molecules: ~2,200 s of work
    assert n_chunks(millions, 2, has_smiles=True) <= MAX_CHUNKS_PER_WORKER * 2


@pytest.mark.parametrize("smarts", ["C=O", "c1ccccc1", "[#7]~[#6]", "C1CC1"])
def test_smarts_over_shards_matches_the_in_memory_index_and_reports_progress(sharded, in_memory, smarts):
    from orientscope.pipeline.engine import Engine, parse_cluster
    from orientscope.pipeline.shard_smarts import search_shards
    from orientscope.science.substructure import SubstructureIndex

    _, store = sharded
    seen, streamed = [], []
    with Engine(parse_cluster("in-process")) as engine:
        found = search_shards(engine, store.dir, smarts, progress=lambda d, t: seen.append((d, t)),
                              on_matches=streamed.append)  # fmt: skip
    expected = SubstructureIndex(in_memory.tables["molecules"]["smiles"].tolist()).search(smarts).indices
    np.testing.assert_array_equal(found.indices, expected)
    assert found.complete and found.n_scanned == N
    assert len(found.indices) > 100 or smarts not in ("C=O", "[#7]~[#6]")
    total = len(open_shard_arrays(store.dir, "chemistry", "fingerprints"))
    assert (
        total > 2 and seen == [(k, total) for k in range(total + 1)] and sum(len(s) for s in streamed) == len(expected)
    )


def test_smarts_over_shards_rejects_bad_patterns(sharded):
    from orientscope.pipeline.engine import Engine, parse_cluster
    from orientscope.pipeline.shard_smarts import search_shards

    _, store = sharded
    with Engine(parse_cluster("in-process")) as engine, pytest.raises(ValueError, match="invalid SMARTS"):
        search_shards(engine, store.dir, "C(")
    with Engine(parse_cluster("in-process")) as engine, pytest.raises(ValueError, match="at most 500"):
        search_shards(engine, store.dir, "C" * 501)


def test_the_molecules_service_searches_a_sharded_set_shard_by_shard(sharded, in_memory):
    from orientscope.science.substructure import SubstructureIndex
    from orientscope.services.molecules import list_molecules

    meta, store = sharded
    page = list_molecules(store.dir.parents[3], meta["id"], smarts="[#7]~[#6]", limit=1000)
    expected = SubstructureIndex(in_memory.tables["molecules"]["smiles"].tolist()).search("[#7]~[#6]").indices
    assert page.complete and page.n_scanned == N and page.total == len(expected) > 100
    ids = in_memory.tables["molecules"]["id"].to_numpy()
    assert [item["id"] for item in page.items] == list(ids[expected[:1000]])
