"""Tiny sets, sets without SMILES and sets without properties: every stage that
cannot run is skipped with a stated reason, and the ingest still finishes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from orientscope.cli import app
from orientscope.core.dataset import from_molecules
from orientscope.pipeline.ingest import ingest_file
from orientscope.pipeline.precompute import make_params, precompute
from orientscope.pipeline.sharded import STAGES
from orientscope.services.datasets import dataset_info
from orientscope.services.report import build_report
from orientscope.store.results import ResultStore
from orientscope.store.shards import save_sharded
from tests.molecules import (
    CO2,
    METHANE,
    NO_SMILES,
    WATER,
    WATER_METHANE_FORMALDEHYDE_XYZ,
    asymmetric,
    benzene,
    embedded,
)


def _run(data_dir, name: str, mols) -> dict:
    save_sharded(data_dir, name, mols, name=name, source="constructed")
    params = make_params(seed=3)
    precompute(data_dir, name, params)
    assert ResultStore(data_dir, name, params).completed_stages() == list(STAGES)
    return build_report(data_dir, name, params)


def test_three_symmetric_molecules_ingest_with_every_skip_explained(tmp_path):
    path = tmp_path / "three.xyz"
    path.write_text(WATER_METHANE_FORMALDEHYDE_XYZ)
    meta = ingest_file(tmp_path / "data", path, "three small")
    skipped = dataset_info(tmp_path / "data", meta["id"]).skipped_stages
    assert set(skipped) == {"statistics", "models", "chemistry.similarity"}
    assert "more than 6 molecules, got 3" in skipped["statistics"]
    assert "at least 20 molecules, got 3" in skipped["models"]
    assert "not tested: 0 neighbour pairs, fewer than the 100" in skipped["chemistry.similarity"]
    assert (
        "(0 of 3 molecules have a chemical graph, more than one atom and a well-defined frame)"
        in (skipped["chemistry.similarity"])
    )
    report = build_report(tmp_path / "data", meta["id"])
    assert report["skipped_stages"] == skipped
    assert report["n_molecules"] == 3 and report["n_degenerate"] == 3
    assert report["groups"]["formula"]["n_groups"] == 3 and "similarity" not in report
    assert report["verdict"]["aligned"] is None


@pytest.mark.parametrize("mols", [[WATER], [WATER, benzene()]], ids=["1 molecule", "2 molecules"])
def test_one_and_two_molecule_sets_complete(tmp_path, mols):
    report = _run(tmp_path, "tiny", from_molecules(mols))
    assert {"statistics", "models", "chemistry.similarity"} <= set(report["skipped_stages"])
    assert report["n_molecules"] == len(mols) and report["groups"]["formula"]["n_grouped"] == len(mols)


def test_set_without_smiles_perceives_bonds_and_skips_a_coupling_of_too_few_pairs(tmp_path):
    report = _run(tmp_path, "nosmiles", from_molecules([embedded(smi) for smi in NO_SMILES]))
    assert report["chemistry"]["n_ok"] == len(NO_SMILES) and report["chemistry"]["no_graph"] == {}
    # No charge in the data: every graph was perceived at charge 0, and the report says so.
    assert report["chemistry"]["n_charge_assumed"] == len(NO_SMILES)
    assert set(report["skipped_stages"]) == {"models", "chemistry.similarity"} and "similarity" not in report
    assert f"{len(NO_SMILES)} neighbour pairs, fewer than the 100" in report["skipped_stages"]["chemistry.similarity"]
    assert report["kl"]["value"] is not None


def test_set_without_graphs_or_properties_skips_only_those_parts(tmp_path):
    # Random atom clouds: no SMILES, no perceivable bonds, no properties.
    report = _run(tmp_path, "clouds", from_molecules([asymmetric(seed=s) for s in range(25)]))
    skipped = report["skipped_stages"]
    assert set(skipped) == {"chemistry.similarity", "chemistry.scaffold", "chemistry.cluster", "models.regression"}
    assert "no numeric properties" in skipped["models.regression"]
    assert "no molecule has a chemical graph" in skipped["chemistry.scaffold"]
    assert len(report["classifiers"]) == 3 and report["regression"] == []


def test_too_few_molecules_for_regression_is_a_skipped_part(tmp_path):
    # 25 asymmetric molecules and 5 CO2: the regression reads full frames only, so it got 25 of the 30.
    props = pd.DataFrame({"energy": np.arange(30.0)})
    mols = from_molecules([asymmetric(seed=s) for s in range(25)] + [CO2] * 5, properties=props)
    report = _run(tmp_path, "fewprops", mols)
    assert report["skipped_stages"]["models.regression"] == "needs at least 100 molecules with a full frame, got 25"
    assert "models" not in report["skipped_stages"]


def test_recomputing_a_stage_replaces_its_skip_reasons(tmp_path):
    save_sharded(tmp_path, "m", from_molecules([METHANE] * 8), name="m", source="constructed")
    params = make_params(seed=0)
    precompute(tmp_path, "m", params)
    store = ResultStore(tmp_path, "m", params)
    assert "models" in store.skipped_stages()
    store.write_stage("models", {"report": {}}, {}, 0.0, skipped={"models.regression": "because"})
    assert store.skipped_stages()["models.regression"] == "because" and "models" not in store.skipped_stages()
    store.drop_stage("models")
    assert not [k for k in store.skipped_stages() if k.startswith("models")]


def test_cli_ingest_of_three_small_molecules_names_the_skipped_stages(tmp_path):
    path = tmp_path / "three.xyz"
    path.write_text(WATER_METHANE_FORMALDEHYDE_XYZ)
    res = CliRunner().invoke(app, ["ingest", str(path), "--name", "three", "--data-dir", str(tmp_path / "data")])
    assert res.exit_code == 0, res.output
    assert "ingested three (three): 3 molecules" in res.output
    assert "stage models skipped: the rotation classifiers and the orientation-only regression need at least 20" in (
        res.output
    )
    assert "stage statistics skipped:" in res.output and "stage chemistry.similarity skipped:" in res.output
