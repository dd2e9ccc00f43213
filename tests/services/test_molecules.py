"""Molecule pages, records and exports on constructed molecules."""

import io

import numpy as np
import pytest
from rdkit import Chem

from orientscope.core.elements import hill_formula
from orientscope.services import molecules as svc
from orientscope.services.cache import get_view
from orientscope.services.errors import InvalidInput, NotComputed
from orientscope.services.molecules import (
    MAX_PAGE,
    export_molecule,
    formulas,
    list_molecules,
    molecule_detail,
)
from tests.molecules import CO2, METHANE, WATER, benzene
from tests.services.conftest import toy_set


def test_formulas_without_chemistry_are_hill_formulas(toy_dir):
    mols = toy_set()
    expected = [hill_formula(mols.atoms_of(i)[0]) for i in range(mols.n_molecules)]
    assert list(formulas(get_view(toy_dir, "plain"))) == expected
    assert expected[:4] == ["H2O", "CO2", "CH4", "C6H6"]


def test_groups_come_from_chemistry_when_present(toy_dir):
    item = list_molecules(toy_dir, "toy", limit=8).items[4]
    assert item["groups"] == {"scaffold": "s1", "formula": "X"}
    item = list_molecules(toy_dir, "plain", limit=8).items[0]
    assert item["groups"] == {"formula": "H2O"}
    with pytest.raises(NotComputed, match="chemistry"):
        list_molecules(toy_dir, "plain", group_by="scaffold")


def test_sort_and_page(toy_dir):
    page = list_molecules(toy_dir, "plain", sort="-n_atoms", offset=1, limit=2)
    assert page.total == 8 and [m["id"] for m in page.items] == ["a1", "a2"]  # benzene (12) first, then 9-atom clouds
    page = list_molecules(toy_dir, "plain", sort="energy", limit=1)
    assert page.items[0]["id"] == "water"  # energy = index - 3


@pytest.mark.parametrize("sort", ["index", "+index", "-index"])
@pytest.mark.parametrize("offset,limit", [(0, 3), (2, 5), (6, 10), (8, 1), (20, 4)])
def test_pages_in_stored_order_need_no_order_array(toy_dir, sort, offset, limit):
    ids = list(get_view(toy_dir, "plain").ids)
    order = ids[::-1] if sort == "-index" else ids
    page = list_molecules(toy_dir, "plain", sort=sort, offset=offset, limit=limit)
    assert page.total == 8 and [m["id"] for m in page.items] == order[offset : offset + limit]
    # The same order as the general path's (used for filtered sets).
    view = get_view(toy_dir, "plain")
    general = svc._sort_order(view, sort, np.arange(len(view)))[offset : offset + limit]
    assert [m["id"] for m in page.items] == [ids[i] for i in general]


def test_smarts_filter(toy_dir):
    page = list_molecules(toy_dir, "plain", smarts="[#6]=[#8]")
    assert [m["id"] for m in page.items] == ["co2"]
    assert page.complete and page.n_scanned == 8


def test_smarts_without_smiles_uses_bonds_perceived_from_3d(toy_dir):
    from orientscope.core.dataset import from_molecules
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.store.shards import save_sharded

    mols = from_molecules([WATER, CO2, METHANE, benzene()], ids=["water", "co2", "methane", "benzene"])
    save_sharded(toy_dir, "nosmiles", mols, name="No SMILES", source="constructed")
    precompute(toy_dir, "nosmiles", make_params(seed=0), stages=["frames"])
    assert [m["id"] for m in list_molecules(toy_dir, "nosmiles", smarts="[#6]=[#8]").items] == ["co2"]
    assert [m["id"] for m in list_molecules(toy_dir, "nosmiles", smarts="c1ccccc1").items] == ["benzene"]
    assert list_molecules(toy_dir, "nosmiles", smarts="[OX2H2]").items[0]["id"] == "water"


def test_smarts_scan_stopped_by_its_time_limit_returns_the_matches_so_far(toy_dir, monkeypatch):
    monkeypatch.setattr(svc, "SMARTS_TIMEOUT_S", -1.0)  # every scan is past its deadline after one block
    monkeypatch.setattr(svc, "SMARTS_BLOCK", 2)
    page = list_molecules(toy_dir, "plain", smarts="[#6]")
    assert not page.complete and page.n_scanned == 2
    assert [m["id"] for m in page.items] == ["co2"]  # water has no carbon; methane (row 2) was not scanned
    monkeypatch.setattr(svc, "SMARTS_TIMEOUT_S", 10.0)
    page = list_molecules(toy_dir, "plain", smarts="[#6]")  # a partial result is not cached
    assert page.complete and [m["id"] for m in page.items] == ["co2", "methane", "benzene"]


def test_complete_smarts_masks_are_kept_in_the_byte_budgeted_cache(toy_dir):
    from orientscope.services.bytecache import shared_cache

    view = get_view(toy_dir, "plain")
    first = svc.match_smarts(view, "[#8]")
    assert first.complete and svc.match_smarts(view, "[#8]") is first  # served from the cache
    key = (str(view.data_dir), view.dataset_id, view.result_key, view.signature, "[#8]")
    assert shared_cache().get("smarts_mask", key) is first
    assert shared_cache().entry_size("smarts_mask", key) >= first.mask.nbytes  # weighed in bytes
    shared_cache().clear("smarts_mask")
    again = svc.match_smarts(view, "[#8]")  # evicted: recomputed, same answer
    assert again is not first and np.array_equal(again.mask, first.mask)


def test_invalid_smarts_is_a_value_error_naming_the_problem(toy_dir):
    with pytest.raises(ValueError, match=r"invalid SMARTS 'C\(\('"):
        list_molecules(toy_dir, "plain", smarts="C((")
    with pytest.raises(ValueError, match="at most 500"):
        list_molecules(toy_dir, "plain", smarts="C" * 501)


@pytest.mark.parametrize(
    ("kwargs", "loc"),
    [
        ({"limit": MAX_PAGE + 1}, "limit"),
        ({"offset": -1}, "offset"),
        ({"sort": "x"}, "sort"),
        ({"smarts": "(("}, "smarts"),
    ],
)
def test_bad_arguments_name_the_parameter(toy_dir, kwargs, loc):
    with pytest.raises(InvalidInput) as err:
        list_molecules(toy_dir, "plain", **kwargs)
    assert err.value.loc == ("query", loc)


def test_detail_of_a_degenerate_molecule(toy_dir):
    m = molecule_detail(toy_dir, "plain", "methane")
    assert m["degenerate"] is True and "eigen_gap" in m["degenerate_reason"]
    assert m["elements"] == ["C", "H", "H", "H", "H"]
    assert m["properties"] == [{"name": "energy", "value": -1.0, "unit": "eV"}]
    assert m["classifier_score"] is None


def test_xyz_export_format(toy_dir):
    text, name = export_molecule(toy_dir, "plain", "water", "xyz", "stored")
    assert name == "plain_water_stored.xyz"
    # The id, SMILES and properties, and the server's own tags, as key=value pairs that read back as written.
    assert text.splitlines()[:2] == ["3", "dataset=plain pose=stored units=angstrom id=water smiles=O energy=-3.0"]
    assert len(text.splitlines()[2].split()[1].split(".")[1]) == 8  # 8 decimals


def test_a_file_name_holds_only_safe_characters_whatever_the_id(tmp_path):
    from orientscope.core.dataset import from_molecules
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.store.shards import save_sharded

    save_sharded(tmp_path, "odd", from_molecules([WATER], ids=['ü "a"/b']), name="Odd", source="constructed")
    precompute(tmp_path, "odd", make_params(seed=0), stages=["frames"])
    text, name = export_molecule(tmp_path, "odd", 'ü "a"/b', "xyz", "stored")
    assert name == "odd__a_b_stored.xyz"  # latin-1 header-safe; the id itself is in the file
    assert 'id="ü \\"a\\"/b"' in text.splitlines()[1]


def test_sdf_export_of_benzene_has_aromatic_bonds_from_smiles(toy_dir):
    text, name = export_molecule(toy_dir, "plain", "benzene", "sdf", "canonical")
    assert name == "plain_benzene_canonical.sdf"
    mol = next(Chem.ForwardSDMolSupplier(io.BytesIO(text.encode()), removeHs=False))
    assert Chem.MolToSmiles(Chem.RemoveHs(mol)) == "c1ccccc1"
    # Canonical pose of a planar ring: the third coordinate vanishes.
    np.testing.assert_allclose(mol.GetConformer().GetPositions()[:, 2], 0, atol=1e-4)


def test_one_molecule_downloads_carry_the_charge_and_sdf_perceives_bonds_at_it(tmp_path):
    """Acetate (-1) and ammonium (+1) from a file that gave their charges; an acetate whose file gave none."""
    from orientscope.core.dataset import from_molecules
    from orientscope.loaders.detect import load_path
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.store.shards import save_sharded
    from tests.molecules import ACETATE, AMMONIUM

    mols = from_molecules([ACETATE, AMMONIUM, ACETATE], ids=["acetate", "ammonium", "nocharge"], charges=[-1, 1, None])
    save_sharded(tmp_path, "ions", mols, name="ions", source="constructed")
    precompute(tmp_path, "ions", make_params(seed=0), stages=["frames"], cluster="in-process")
    for mol_id, charge, smiles in [("acetate", -1, "CC(=O)[O-]"), ("ammonium", 1, "[NH4+]")]:
        text, name = export_molecule(tmp_path, "ions", mol_id, "xyz")
        assert f"total_charge={charge}" in text.splitlines()[1]
        (tmp_path / name).write_text(text)
        assert load_path(tmp_path / name).mols.charges.tolist() == [charge]  # uploads back with its charge
        text, _ = export_molecule(tmp_path, "ions", mol_id, "sdf")
        mol = next(Chem.ForwardSDMolSupplier(io.BytesIO(text.encode()), removeHs=False))
        assert Chem.MolToSmiles(Chem.RemoveHs(mol)) == smiles  # no SMILES, no chemistry stage: perceived at it
    text, _ = export_molecule(tmp_path, "ions", "nocharge", "xyz")
    assert "total_charge" not in text.splitlines()[1]  # unknown is not written as 0


def test_after_the_warm_up_a_first_smarts_search_parses_no_molecule(qm9_store, tmp_path, monkeypatch):
    """The first SMARTS search after a server start took 14 s on QM9 (issue 40): it built the index, parsing
    every molecule. The search SMILES are kept at ingest and the warm-up reads them: no query parses."""
    import shutil

    from orientscope.pipeline import shard_smarts
    from orientscope.science import substructure

    data_dir = tmp_path / "data"
    shutil.copytree(qm9_store, data_dir)
    view = get_view(data_dir, "qm9")
    assert shard_smarts.shard_numbers(view.store.dir) and shard_smarts.unindexed_shards(view.store.dir) == []
    graphs = [Chem.MolFromSmiles(s) for s in svc.chemistry_table(view)["smiles"]]
    pattern = Chem.MolFromSmarts("C=O")
    expected = [i for i, m in enumerate(graphs) if m is not None and m.HasSubstructMatch(pattern)]

    def parse(_molecules):
        raise AssertionError("a molecule was parsed after the warm-up")

    monkeypatch.setattr(substructure, "_parsed", parse)
    assert svc.warm_search(data_dir, "qm9")
    found = svc.match_smarts(view, "C=O")
    assert found.complete and np.flatnonzero(found.mask).tolist() == expected and 0 < len(expected) < len(graphs)


def test_search_data_made_from_another_chemistry_table_or_rdkit_are_made_anew(qm9_store, tmp_path):
    import os
    import shutil

    from orientscope.pipeline import shard_smarts
    from orientscope.store.atomic import atomic_write_table, read_table
    from orientscope.store.shards import shard_table_path

    data_dir = tmp_path / "data"
    shutil.copytree(qm9_store, data_dir)
    result = get_view(data_dir, "qm9").store.dir
    kept = shard_smarts.read_search_data(result, 0)
    assert kept is not None and len(kept.patterns) == len(kept.smiles) == len(kept.valid)
    table = shard_table_path(result, "chemistry", "molecules", 0)
    os.utime(table, ns=(table.stat().st_atime_ns, table.stat().st_mtime_ns + 10**9))  # the stage ran again
    assert shard_smarts.unindexed_shards(result) == [0] and shard_smarts.read_search_data(result, 0) is None
    assert shard_smarts.search_data_shard(str(result), 0).smiles == kept.smiles  # made again (and kept)
    assert shard_smarts.unindexed_shards(result) == []
    # another RDKit made them: its fingerprints may differ, so they are made anew too
    path = shard_table_path(result, "chemistry", "search", 0)
    search = read_table(path)
    other = {**search.schema.metadata, shard_smarts.RDKIT_KEY: b"2000.01.1"}
    atomic_write_table(path, search.replace_schema_metadata(other))
    assert shard_smarts.unindexed_shards(result) == [0]
