import numpy as np

from orientscope.store.results import ResultStore


def _store(data_dir):
    from orientscope.store.datasets import read_meta

    meta = read_meta(data_dir, "qm9")
    return ResultStore(data_dir, "qm9", meta["active_params"])


def test_chemistry_stage_tables_and_report(qm9_store, qm9_small):
    store = _store(qm9_store)
    section = store.section("chemistry")
    assert section["skipped"] is None
    mols = store.table("chemistry", "molecules").to_pandas()
    assert mols["id"].tolist() == list(qm9_small.ids)
    assert mols["chemistry_ok"].all() and (mols["chemistry_source"] == "smiles").all()
    assert mols.loc[mols["id"] == "1", "formula"].item() == "CH4"
    fps = store.table("chemistry", "fingerprints").to_pandas()
    assert len(fps) == len(mols) and fps.filter(like="fp").to_numpy(np.uint64).any(axis=1).all()
    for grouping in ("scaffold", "formula", "cluster"):
        groups = store.table("chemistry", f"groups_{grouping}").to_pandas()
        ids = mols[f"{grouping}_group"]
        assert groups["size"].sum() == (ids >= 0).sum()
        posed = groups[groups["n_posed"] > 0]  # a group of spherical or symmetric tops only has no pose
        assert set(posed["typical_id"]) <= set(mols["id"]) and groups["n_posed"].le(groups["size"]).all()
        assert (posed["spread_deg"].between(0, 180)).all() and (posed["concentration"] <= 1 + 1e-9).all()
        assert groups.loc[groups["n_posed"] == 0, ["spread_deg", "concentration"]].isna().all().all()
        largest = section["report"]["groups"][grouping]["largest"]
        assert largest[0]["size"] == groups["size"].max() and len(largest) <= 20
    sim = section["report"]["similarity"]
    assert sim["n_pairs"] > 300 and sim["enrichment"] > 2 and sim["pvalue"] < 1e-3
    assert 0.3 < sim["control_enrichment"] < 3
    assert section["control"]["similarity"]["enrichment"] == sim["control_enrichment"]


def test_report_exposes_similarity_keys(qm9_store):
    from orientscope.services.report import build_report

    report = build_report(qm9_store, "qm9")
    for key in ("n_pairs", "nn_within_30deg", "random_within_30deg", "enrichment", "pvalue", "control_enrichment"):
        assert key in report["similarity"]
    assert set(report["groups"]) == {"scaffold", "formula", "cluster"}
    assert 0 < report["groups"]["cluster"]["n_grouped"] <= report["groups"]["formula"]["n_grouped"]
