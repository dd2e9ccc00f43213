import numpy as np
import pytest

from orientscope.core.errors import DatasetError
from orientscope.loaders.detect import load_path
from orientscope.loaders.sdf import write_sdf


def _qmugs_style(path, n_mols: int = 3, n_confs: int = 3):
    """Like QMugs: several conformers per ChEMBL molecule, DFT/GFN2 properties as SD tags."""
    from rdkit import Chem
    from rdkit.Chem import AllChem

    writer = Chem.SDWriter(str(path))
    expected = {}
    for i, smi in enumerate(["CCO", "c1ccccc1O", "CC(=O)N"][:n_mols]):
        mol = Chem.AddHs(Chem.MolFromSmiles(smi))
        cids = AllChem.EmbedMultipleConfs(mol, n_confs, randomSeed=11)
        for k, cid in enumerate(cids):
            mol.SetProp("_Name", f"CHEMBL{100 + i}")
            mol.SetProp("CHEMBL_ID", f"CHEMBL{100 + i}")
            mol.SetProp("CONF_ID", f"conf_{k:02d}")
            mol.SetProp("DFT:TOTAL_ENERGY", f"{-100.0 * i - k:.6f}")
            mol.SetProp("GFN2:DIPOLE", "0.1|0.2|0.3")  # not a number: ignored
            writer.write(mol, confId=cid)
            expected[f"CHEMBL{100 + i}_conf{k}"] = (-100.0 * i - k, mol.GetConformer(cid).GetPositions())
    writer.close()
    return expected


def test_qmugs_style_conformers_keep_ids_and_properties(tmp_path):
    expected = _qmugs_style(tmp_path / "q.sdf")
    mols = load_path(tmp_path / "q.sdf", "sdf").mols
    assert list(mols.ids) == list(expected)
    assert "DFT:TOTAL_ENERGY" in mols.properties and "GFN2:DIPOLE" not in mols.properties
    for i, (energy, pos) in enumerate(expected.values()):
        assert mols.properties["DFT:TOTAL_ENERGY"].iat[i] == pytest.approx(energy)
        np.testing.assert_allclose(mols.atoms_of(i)[1], pos, atol=1e-4)
    assert mols.smiles[0] == "CCO"
    assert mols.n_atoms[0] == 9  # hydrogens kept


def test_our_writer_round_trips(tmp_path, qm9_small):
    mols = qm9_small.subset(np.arange(20))
    write_sdf(tmp_path / "q.sdf", mols)
    back = load_path(tmp_path / "q.sdf", "sdf").mols
    assert list(back.ids) == list(mols.ids)
    assert list(back.smiles) == list(mols.smiles)
    np.testing.assert_allclose(back.positions_angstrom, mols.positions_angstrom, atol=1e-4)
    np.testing.assert_allclose(back.properties["gap"], mols.properties["gap"])


def test_truncated_and_corrupt_records(tmp_path):
    _qmugs_style(tmp_path / "q.sdf")
    text = (tmp_path / "q.sdf").read_text()
    (tmp_path / "t.sdf").write_text(text[: len(text) // 2 + 37])
    with pytest.raises(DatasetError, match=r"record \d+ \(line \d+\): file ends inside a record"):
        load_path(tmp_path / "t.sdf", "sdf")
    blocks = text.split("$$$$\n")
    blocks[4] = blocks[4].replace(
        " 0  0  0  0  0  0  0  0  0  0  0  0", " 0  0  0  0  0  0  0  0  0  0  0  0\nGARBAGE", 1
    )
    corrupt = "$$$$\n".join(blocks[:9] * 3) + "$$$$\n"
    (tmp_path / "c.sdf").write_text(corrupt)
    with pytest.raises(DatasetError, match=r"record 5 \(line \d+\): RDKit cannot parse"):
        load_path(tmp_path / "c.sdf", "sdf", strict=True)


def test_one_record_with_bonds_from_the_smiles_or_the_geometry():
    from rdkit import Chem

    from orientscope.loaders.sdf import sdf_block
    from tests.molecules import CO2, benzene

    z, pos = benzene()
    text = sdf_block(z, pos, "benzene", "c1ccccc1", {"energy": -1.5, "missing": None})
    mol = Chem.MolFromMolBlock(text, removeHs=False)
    assert Chem.MolToSmiles(Chem.RemoveHs(mol)) == "c1ccccc1"
    assert "<energy>" in text and "-1.5" in text and "<missing>" not in text and "<SMILES>" in text
    np.testing.assert_allclose(mol.GetConformer().GetPositions(), pos, atol=1e-4)
    from orientscope.science.perception import perceive_bonds

    # No SMILES: bonds from 3D, by the caller's guarded perception (the loaders do not import science).
    perceived = Chem.MolFromMolBlock(sdf_block(*CO2, "co2", perceive=lambda a, p: perceive_bonds(a, p).mol))
    assert Chem.MolToSmiles(perceived) == "O=C=O"
    connected = Chem.MolFromMolBlock(sdf_block(*CO2, "co2"), sanitize=False)  # without it: connectivity only
    assert connected.GetNumBonds() == 2 and {b.GetBondTypeAsDouble() for b in connected.GetBonds()} == {1.0}


ATOMS_ONLY_ETHANOL = """ethanol
  atoms only

  9  0  0  0  0  0  0  0  0  0999 V2000
   -0.0004   -0.0125    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0
    1.5151   -0.0125    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0
    1.9911    1.3340    0.0000 O   0  0  0  0  0  0  0  0  0  0  0  0
   -0.3880    1.0042    0.0000 H   0  0  0  0  0  0  0  0  0  0  0  0
   -0.3880   -0.5208    0.8810 H   0  0  0  0  0  0  0  0  0  0  0  0
   -0.3880   -0.5208   -0.8810 H   0  0  0  0  0  0  0  0  0  0  0  0
    1.8897   -0.5241    0.8880 H   0  0  0  0  0  0  0  0  0  0  0  0
    1.8897   -0.5241   -0.8880 H   0  0  0  0  0  0  0  0  0  0  0  0
    2.9511    1.3121    0.0000 H   0  0  0  0  0  0  0  0  0  0  0  0
M  END
$$$$
"""


def test_an_atoms_only_block_has_no_smiles_and_gets_its_bonds_from_3d(tmp_path):
    """Read as written, RDKit gives nine fragments ("C.C.O.[HH]…"): every such molecule one "(acyclic)"
    scaffold. Without bond lines there is no SMILES, and the chemistry stage perceives ethanol from 3D."""
    from orientscope.pipeline.ingest import ingest_file
    from orientscope.services.molecules import molecule_detail

    path = tmp_path / "atoms.sdf"
    path.write_text(ATOMS_ONLY_ETHANOL + ATOMS_ONLY_ETHANOL.replace("ethanol\n", "ethanol2\n", 1))
    mols = load_path(path).mols
    assert mols.smiles is None or not any(mols.smiles)  # no SMILES at all
    meta = ingest_file(tmp_path / "data", path, "atoms-only")
    chemistry = molecule_detail(tmp_path / "data", meta["id"], "ethanol")["chemistry"]
    assert (chemistry["graph"], chemistry["smiles"], chemistry["source"]) == (True, "CCO", "3d")
