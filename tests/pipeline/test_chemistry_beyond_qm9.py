"""The chemistry stage on chemistry beyond QM9: ions, charges from the file, metals, costly and failed molecules.

Constructed molecules where the answer is known; real components of the PDB's Chemical Component Dictionary
(``tests/ccd.py``, the optional extra ``ccd``) where a real molecule is the point: the rhodium complex that
used to crash an ingest, a coenzyme A thioester whose bond-order search runs for minutes, a chlorophyll.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from orientscope.cli import app, format_report
from orientscope.core.dataset import from_molecules
from orientscope.loaders.detect import load_path
from orientscope.loaders.extxyz import write_extxyz
from orientscope.pipeline.ingest import ingest_file
from orientscope.pipeline.precompute import make_params, precompute
from orientscope.science.perception import NO_GRAPH_REASONS
from orientscope.services.report import build_report
from orientscope.store.results import ResultStore
from orientscope.store.shards import save_sharded
from tests.molecules import ACETATE, AMMONIUM, COSTLY_SMILES, ORGANICS, embedded


def _molecules_table(data_dir, dataset_id: str) -> pd.DataFrame:
    return ResultStore(data_dir, dataset_id, make_params(seed=0)).table("chemistry", "molecules").to_pandas()


def _stored(data_dir, dataset_id: str, mols) -> dict:
    save_sharded(data_dir, dataset_id, mols, name=dataset_id, source="constructed")
    precompute(data_dir, dataset_id, make_params(seed=0), stages=["frames", "chemistry"], cluster="in-process")
    return build_report(data_dir, dataset_id, make_params(seed=0))


def test_single_ions_are_in_no_group_and_keep_their_charged_graph(tmp_path):
    organics = [embedded(s, seed=k) for k, s in enumerate(ORGANICS)]
    ions = [([11], [[0.0, 0.0, 0.0]])] * 6 + [([17], [[0.0, 0.0, 0.0]])] * 6
    ids = [f"m{k}" for k in range(len(organics))] + [f"na{k}" for k in range(6)] + [f"cl{k}" for k in range(6)]
    mols = from_molecules(organics + ions, ids=ids, charges=[0] * len(organics) + [1] * 6 + [-1] * 6)
    report = _stored(tmp_path, "ions", mols)
    table = _molecules_table(tmp_path, "ions")
    ion = table["id"].str.match(r"(na|cl)\d")
    assert table.loc[ion, "smiles"].tolist() == ["[Na+]"] * 6 + ["[Cl-]"] * 6 and table["chemistry_ok"].all()
    for g in ("scaffold", "formula", "cluster"):
        assert (table.loc[ion, f"{g}_group"] == -1).all(), g
        labels = [group["label"] for group in report["groups"][g]["largest"]]
        assert not {"Na", "Cl", "[Na+]", "[Cl-]"} & set(labels), (g, labels)
    assert report["groups"]["formula"]["ungrouped"]["size"] == 12
    assert report["chemistry"]["n_single_atoms"] == 12
    # The acyclic organics still form their scaffold group; the ions are not in it.
    acyclic = next(x for x in report["groups"]["scaffold"]["largest"] if x["label"] == "(acyclic)")
    assert acyclic["size"] == sum(not any(c in s for c in "1") for s in ORGANICS)


def test_charges_from_an_extxyz_file_reach_bond_perception(tmp_path):
    glycine = embedded("[NH3+]CC(=O)[O-]")
    mols = from_molecules([ACETATE, AMMONIUM, glycine, ACETATE], ids=["acetate", "ammonium", "glycine", "nocharge"],
                          charges=[-1, 1, 0, None])  # fmt: skip
    path = tmp_path / "charged.extxyz"
    write_extxyz(path, mols)
    loaded = load_path(path).mols
    report = _stored(tmp_path / "data", "charged", loaded)
    table = _molecules_table(tmp_path / "data", "charged").set_index("id")
    assert table.loc[["acetate", "ammonium", "glycine"], "smiles"].tolist() == [
        "CC(=O)[O-]",
        "[NH4+]",
        "[NH3+]CC(=O)[O-]",  # a zwitterion stays neutral overall
    ]
    assert (table.loc[["acetate", "ammonium", "glycine"], "chemistry_source"] == "3d").all()
    # The same acetate without a charge in the file: 0 assumed, and the report says why it has no graph.
    assert not table.loc["nocharge", "chemistry_ok"] and table.loc["nocharge", "chemistry_reason"] == "charge_unknown"
    assert report["chemistry"]["no_graph"] == {
        "charge_unknown": {"count": 1, "meaning": NO_GRAPH_REASONS["charge_unknown"], "examples": ["nocharge"]}
    }
    assert report["chemistry"]["n_charge_assumed"] == 1


def test_failures_are_grouped_by_reason_in_the_report_and_the_cli_text(tmp_path):
    organics = [embedded(s, seed=k) for k, s in enumerate(ORGANICS)]
    costly = embedded(COSTLY_SMILES)
    mols = from_molecules([*organics, costly, ACETATE], ids=[*(f"m{k}" for k in range(len(organics))), "coa", "acetate"],
                          charges=[0] * len(organics) + [0, None])  # fmt: skip
    messages = []
    save_sharded(tmp_path, "mixed", mols, name="Mixed", source="constructed")
    precompute(tmp_path, "mixed", make_params(seed=0), stages=["frames", "chemistry"], cluster="in-process",
               progress=lambda fraction, message, stage="": messages.append(message))  # fmt: skip
    report = build_report(tmp_path, "mixed", make_params(seed=0))
    chem = report["chemistry"]
    assert chem["n_ok"] == len(organics) and chem["n_failed"] == 2
    assert {r: e["count"] for r, e in chem["no_graph"].items()} == {"budget": 1, "charge_unknown": 1}
    assert chem["no_graph"]["budget"]["examples"] == ["coa"]
    # Progress counts molecules.
    n = mols.n_molecules
    assert f"graphs, fingerprints, scaffolds: {n}/{n} molecules" in " ".join(messages)
    text = format_report(report)
    assert f"Chemical graphs: {len(organics)} of {n} molecules" in text
    assert f"  no graph, budget (1): {NO_GRAPH_REASONS['budget']}; e.g. coa" in text
    assert "  no graph, charge_unknown (1): no bond orders fit charge 0" in text
    out = CliRunner().invoke(app, ["report", "mixed", "--data-dir", str(tmp_path)])
    assert out.exit_code == 0 and "no graph, budget (1)" in out.output, out.output
    # Each molecule's own record names its reason, beyond the report's first examples.
    from orientscope.services.molecules import molecule_detail

    coa, acetate, first = (molecule_detail(tmp_path, "mixed", m)["chemistry"] for m in ("coa", "acetate", "m0"))
    assert (coa["graph"], coa["no_graph_reason"], coa["smiles"]) == (False, "budget", None)
    assert "Max Iterations Exceeded" in coa["message"]
    assert (acetate["graph"], acetate["no_graph_reason"]) == (False, "charge_unknown")
    assert first == {"graph": True, "smiles": "CCO", "source": "3d", "no_graph_reason": None, "message": None}
    # The molecule panel shows the perceived graph where the file has no SMILES, and says where it comes from.
    from dash import html

    from orientscope.app.dashboard import components_of
    from orientscope.app.panels import molecule_outputs
    from orientscope.figures.state import ViewState

    def smiles_cell(mol):
        info = html.Div(molecule_outputs(tmp_path, ViewState(dataset="mixed"), mol).info)
        return next(c.children for c in components_of(info) if getattr(c, "className", None) == "smiles")

    assert smiles_cell("m0") == "CCO (bonds perceived from 3D)"
    assert smiles_cell("coa") == "–"


# ---------------------------------------------------------------- real components of the PDB's dictionary
@pytest.fixture(scope="module")
def ccd():
    from tests import ccd

    ccd.components()  # skips without the extra
    return ccd


def test_a_rhodium_complex_among_24_ordinary_molecules_ingests_with_its_failure_named(tmp_path, ccd):
    ordinary = [n for n in ccd.seeded_selection(3, 400, metals=False) if 8 <= len(ccd.components().atoms(n)[0]) <= 40]
    names = [*ordinary[:24], "ORS"]  # ORS: Cp*RhCl2, whose generic scaffold RDKit cannot make (the crash)
    path = ccd.write_sdf(tmp_path / "rhodium.sdf", names)
    meta = ingest_file(tmp_path / "data", path, "rhodium")
    assert meta["n_molecules"] == 25
    table = _molecules_table(tmp_path / "data", meta["id"]).set_index("id")
    rhodium = table.loc["ORS"]
    assert rhodium["chemistry_ok"] and rhodium["scaffold"] != "" and rhodium["generic_scaffold"] == ""
    assert (
        "no generic scaffold: Explicit valence for atom # 5 C, 5, is greater than permitted"
        in (rhodium["chemistry_error"])
    )
    report = build_report(tmp_path / "data", meta["id"])
    assert report["chemistry"]["n_ok"] + report["chemistry"]["n_failed"] == 25


def test_every_rhodium_component_gets_a_graph_or_a_named_reason(tmp_path, ccd):
    ccd_set = ccd.components()
    rhodium = [n for n in ccd_set.ids if 45 in ccd_set.atoms(n)[0]]
    path = ccd.write_sdf(tmp_path / "rh.sdf", rhodium)
    report = _stored(tmp_path / "data", "rh", load_path(path).mols)
    table = _molecules_table(tmp_path / "data", "rh")
    failed = table[~table["chemistry_ok"]]
    assert set(failed["chemistry_reason"]) <= set(NO_GRAPH_REASONS) and (failed["chemistry_error"] != "").all()
    assert sum(e["count"] for e in report["chemistry"]["no_graph"].values()) == len(failed)
    assert table["chemistry_ok"].sum() >= len(rhodium) // 2
    assert report["chemistry"]["n_single_atoms"] == 3  # Rh+, Rh2+, Rh3+


def test_a_real_coenzyme_a_thioester_stops_at_its_budget(ccd):
    from orientscope.science.perception import perceive_bonds

    z, pos, charge = ccd.components().atoms("1GZ")  # methylthioacryloyl-CoA
    found = perceive_bonds(z, pos, charge)
    assert found.mol is None and found.reason == "budget"


def test_a_chlorophyll_with_its_charge_is_no_zwitterion(ccd):
    from rdkit import Chem

    from orientscope.science.perception import perceive_bonds

    z, pos, charge = ccd.components().atoms("CLA")
    found = perceive_bonds(z, pos, charge)
    assert found.reason == "" and math.isclose(charge, 0)
    charged = [a.GetSymbol() for a in found.mol.GetAtoms() if a.GetFormalCharge()]
    assert "C" not in charged, Chem.MolToSmiles(found.mol)
    assert sum(a.GetFormalCharge() for a in found.mol.GetAtoms()) == 0
    assert any(b.GetBondType() == Chem.BondType.DATIVE for b in found.mol.GetBonds())  # N -> Mg
    assert np.count_nonzero([a.GetAtomicNum() == 12 for a in found.mol.GetAtoms()]) == 1


def test_each_molecule_record_names_its_own_graph_on_a_store_of_several_shards(tmp_path):
    """A record finds its molecule's row in the shard that holds it (the shards keep the dataset's row order)."""
    from orientscope.services.cache import get_view
    from orientscope.services.grouping import _shard_tables
    from orientscope.services.molecules import molecule_detail

    organics = [embedded(s, seed=k) for k, s in enumerate(ORGANICS)]
    ids = [*(f"m{k}" for k in range(len(organics))), "acetate"]
    mols = from_molecules([*organics, ACETATE], ids=ids, charges=[0] * len(organics) + [None])
    save_sharded(tmp_path, "split", mols, name="split", source="constructed", shard_size=2)
    precompute(tmp_path, "split", make_params(seed=0), stages=["frames", "chemistry"], cluster="in-process")
    assert len(_shard_tables(get_view(tmp_path, "split"))) == math.ceil(len(ids) / 2)
    table = _molecules_table(tmp_path, "split").set_index("id")
    for mol_id in reversed(ids):  # the last shard first: no record leans on an earlier read
        record = molecule_detail(tmp_path, "split", mol_id)["chemistry"]
        assert record["graph"] == bool(table.loc[mol_id, "chemistry_ok"]), mol_id
        assert record["smiles"] == (table.loc[mol_id, "smiles"] if record["graph"] else None), mol_id
    assert molecule_detail(tmp_path, "split", "acetate")["chemistry"]["no_graph_reason"] == "charge_unknown"
    assert molecule_detail(tmp_path, "split", "m0")["chemistry"]["smiles"] == "CCO"
