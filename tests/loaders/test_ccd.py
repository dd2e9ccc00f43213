"""The wwPDB Chemical Component Dictionary: real components as text mmCIF and as biotite's BinaryCIF.

``tests/data/ccd_components.cif`` holds ZN (an ion), HOH, SO4 (a charged anion), ATP, HEM (an iron complex)
and FS1 (no ideal coordinates), copied from the CCD biotite ships.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from orientscope.core.dataset import concat_molecule_sets
from orientscope.core.errors import DatasetError, Unavailable
from orientscope.core.limits import Limits
from orientscope.loaders import registry
from orientscope.loaders.detect import detect_format, load_path
from orientscope.science.rotations import random_rotations

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "ccd_components.cif"
READ = ["ZN", "HOH", "SO4", "ATP", "HEM"]
LENIENT = Limits(max_bad_fraction=0.5)  # FS1 is one component in six: more than the default 5 % of skips


def _atoms(loaded, mol_id):
    i = list(loaded.mols.ids).index(mol_id)
    return loaded.mols.atoms_of(i)


def _distances(pos):
    return np.linalg.norm(pos[:, None] - pos[None], axis=-1)


def _angle_deg(a, centre, b):
    u, v = a - centre, b - centre
    return np.degrees(np.arccos(u @ v / np.linalg.norm(u) / np.linalg.norm(v)))


def test_components_are_molecules_named_by_their_ids_with_their_summed_charges():
    loaded = load_path(SAMPLE, limits=LENIENT)
    assert detect_format(SAMPLE) == "ccd" and loaded.format == "ccd"
    assert list(loaded.mols.ids) == READ
    assert loaded.mols.n_atoms.tolist() == [1, 3, 5, 47, 75]
    assert loaded.mols.properties["charge"].tolist() == [2.0, 0.0, -2.0, 0.0, 0.0]
    z, _ = _atoms(loaded, "ZN")
    assert z.tolist() == [30]
    z, _ = _atoms(loaded, "HEM")
    assert (z == 26).sum() == 1 and (z == 7).sum() == 4  # one iron held by four nitrogens
    assert sorted(_atoms(loaded, "ATP")[0].tolist()).count(15) == 3  # three phosphates


def test_a_component_s_total_charge_is_its_formal_charge():
    """ZN2+, SO4 2- (two O-), neutral water, ATP and heme: the molecule's total charge, as the chemistry reads it."""
    loaded = load_path(SAMPLE, limits=LENIENT)
    assert loaded.mols.charges.tolist() == [2.0, 0.0, -2.0, 0.0, 0.0]


def test_without_atom_charges_the_component_s_formal_charge_is_taken(tmp_path):
    text = SAMPLE.read_text().split("data_ATP")[0]  # ZN, HOH, SO4
    so4 = [line for line in text.splitlines() if line.split()[3:4] == ["SO4"] and len(line.split()) == 24]
    for row in so4:  # every SO4 atom's charge unknown ('?'); _chem_comp.pdbx_formal_charge is -2
        parts = row.split()
        text = text.replace(row, " ".join([*parts[:2], "?", *parts[3:]]))
    (tmp_path / "formal.cif").write_text(text)
    assert load_path(tmp_path / "formal.cif").mols.charges.tolist() == [2.0, 0.0, -2.0]
    unknown = text.replace("_chem_comp.pdbx_formal_charge                    -2", "_chem_comp.pdbx_formal_charge ?")
    (tmp_path / "unknown.cif").write_text(unknown)
    charges = load_path(tmp_path / "unknown.cif").mols.charges
    assert charges[:2].tolist() == [2.0, 0.0] and np.isnan(charges[2])  # unknown, not assumed neutral


def test_ideal_coordinates_give_the_known_geometry_of_water_and_sulfate():
    loaded = load_path(SAMPLE, limits=LENIENT)
    _, (o, h1, h2) = _atoms(loaded, "HOH")
    assert np.linalg.norm(h1 - o) == pytest.approx(0.966, abs=0.005)
    assert 100 < _angle_deg(h1, o, h2) < 110
    _, pos = _atoms(loaded, "SO4")
    s_o = np.linalg.norm(pos[1:] - pos[0], axis=1)
    assert np.ptp(s_o) < 1e-3 and s_o.mean() == pytest.approx(1.47, abs=0.02)
    angles = [_angle_deg(pos[i], pos[0], pos[j]) for i in range(1, 5) for j in range(i + 1, 5)]
    assert np.allclose(angles, 109.47, atol=0.5)  # a regular tetrahedron


def test_model_coordinates_are_another_pose_of_the_same_molecule():
    ideal = load_path(SAMPLE, limits=LENIENT)
    model = load_path(SAMPLE, options={"coordinates": "model"})
    assert list(model.mols.ids) == [*READ, "FS1"] and model.n_skipped == 0
    (_, a), (_, b) = _atoms(ideal, "HOH"), _atoms(model, "HOH")
    assert np.abs(b.mean(axis=0)).max() > 5 > np.abs(a.mean(axis=0)).max()  # where it sat in its PDB entry
    np.testing.assert_allclose(_distances(a), _distances(b), atol=0.03)  # water is rigid
    (za, a), (zb, b) = _atoms(ideal, "SO4"), _atoms(model, "SO4")
    assert za.tolist() == zb.tolist() and not np.allclose(a, b)
    np.testing.assert_allclose(np.linalg.norm(b[1:] - b[0], axis=1), 1.47, atol=0.25)  # an experimental sulfate


def test_a_component_without_the_chosen_coordinates_is_skipped_naming_why_and_the_remedy():
    loaded = load_path(SAMPLE, limits=LENIENT)
    assert loaded.n_skipped == 1
    (problem,) = loaded.problems
    assert "component 'FS1': no ideal coordinates (2 of 2 atoms have '?')" in problem
    assert "coordinates=model or fallback=yes" in problem
    with pytest.raises(DatasetError, match="1 of 6 records are malformed.*'FS1'"):  # the default 5 % rule
        load_path(SAMPLE)
    with pytest.raises(DatasetError, match="strict mode"):
        load_path(SAMPLE, strict=True)


def test_fallback_takes_the_other_coordinates_and_says_so():
    loaded = load_path(SAMPLE, options={"fallback": "yes"})
    assert list(loaded.mols.ids) == [*READ, "FS1"] and loaded.n_skipped == 0
    model = load_path(SAMPLE, options={"coordinates": "model"})
    np.testing.assert_array_equal(_atoms(loaded, "FS1")[1], _atoms(model, "FS1")[1])
    np.testing.assert_array_equal(_atoms(loaded, "ATP")[1], _atoms(load_path(SAMPLE, limits=LENIENT), "ATP")[1])
    (warning,) = loaded.warnings
    assert "without ideal coordinates were read with their model ones" in warning and "'FS1'" in warning


def test_options_are_checked_naming_what_is_accepted():
    with pytest.raises(ValueError, match=r"format option coordinates='modle': expected one of \('ideal', 'model'\)"):
        load_path(SAMPLE, options={"coordinates": "modle"})
    with pytest.raises(ValueError, match="unknown format option 'coords' for format 'ccd'; accepted: ccd: coordinates"):
        load_path(SAMPLE, "ccd", options={"coords": "model"})
    assert "coordinates=ideal|model (default ideal)" in registry.options_help(registry.get("ccd"))


def test_a_data_line_inside_a_text_field_does_not_start_a_block(tmp_path):
    text = SAMPLE.read_text().split("data_ATP")[0]  # ZN, HOH, SO4
    field = "_chem_comp.pdbx_synonyms\n;\ndata_NOT_A_BLOCK\n;\n"
    path = tmp_path / "with-field.cif"
    path.write_text(text.replace("_chem_comp.pdbx_synonyms                         ?\n", field, 1))
    assert list(load_path(path).mols.ids) == ["ZN", "HOH", "SO4"]


def test_not_ccd_mmcif_is_refused_naming_what_is_expected(tmp_path):
    entry = tmp_path / "1abc.cif"
    entry.write_text("data_1ABC\n#\n_entry.id 1ABC\n#\nloop_\n_atom_site.id\n_atom_site.type_symbol\n1 C\n")
    with pytest.raises(DatasetError, match="no valid molecules.*no _chem_comp_atom category"):
        load_path(entry)
    (tmp_path / "prose.cif").write_text("hello\n")
    with pytest.raises(DatasetError, match="line 1: expected a 'data_' block"):
        load_path(tmp_path / "prose.cif")


def test_a_damaged_component_is_skipped_with_its_block_named(tmp_path):
    text = SAMPLE.read_text().replace(
        "O  O  0 HOH -23.107 18.401 -21.626 1 N ? ? O  HOH ? N -0.064",
        "O  O  0 HOH -23.107 18.401 -21.626 1 N ? ? O  HOH ? N zero",
    )
    (tmp_path / "damaged.cif").write_text(text)
    loaded = load_path(tmp_path / "damaged.cif", limits=LENIENT)
    assert list(loaded.mols.ids) == ["ZN", "SO4", "ATP", "HEM"]
    assert any("data_HOH (line" in p and "unreadable _chem_comp_atom" in p and "'zero'" in p for p in loaded.problems)


def test_without_an_extension_ccd_text_is_recognised(tmp_path):
    (tmp_path / "components").write_bytes(SAMPLE.read_bytes())
    assert detect_format(tmp_path / "components") == "ccd"


def test_without_biotite_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "biotite.structure.io", None)  # as if not installed
    with pytest.raises(Unavailable, match=r"needs biotite.*pip install 'orientscope\[ccd\]'"):
        load_path(SAMPLE, limits=LENIENT)


# ---------------------------------------------------------------------------------------------------- BinaryCIF
def _binary(tmp_path, ids) -> Path:
    """The components ``ids`` of biotite's CCD as one BinaryCIF block, as biotite ships them."""
    pdbx = pytest.importorskip("biotite.structure.io.pdbx")
    info = pytest.importorskip("biotite.structure.info")
    block = pdbx.BinaryCIFBlock()
    for category in ("chem_comp", "chem_comp_atom"):
        parts = [info.get_from_ccd(category, i) for i in ids]
        columns = {}
        for name in parts[0].keys():
            data = np.concatenate([p[name].as_array() for p in parts])
            masks = [p[name].mask.array if p[name].mask is not None else np.zeros(p.row_count, np.uint8) for p in parts]
            mask = np.concatenate(masks)
            columns[name] = pdbx.BinaryCIFColumn(
                pdbx.BinaryCIFData(data), pdbx.BinaryCIFData(mask) if mask.any() else None
            )
        block[category] = pdbx.BinaryCIFCategory(columns)
    bcif = pdbx.BinaryCIFFile()
    bcif["components"] = block
    path = tmp_path / "some.bcif"
    bcif.write(str(path))
    return path


def test_binary_cif_reads_as_the_text_does(tmp_path):
    path = _binary(tmp_path, [*READ, "FS1"])
    assert detect_format(path) == "ccd"
    binary, text = load_path(path, limits=LENIENT), load_path(SAMPLE, limits=LENIENT)
    assert list(binary.mols.ids) == READ and binary.problems[0].endswith(text.problems[0].split(": ", 1)[1])
    np.testing.assert_allclose(binary.mols.positions_angstrom, text.mols.positions_angstrom, atol=1e-3)
    assert binary.mols.properties["charge"].tolist() == text.mols.properties["charge"].tolist()
    (tmp_path / "noext").write_bytes(path.read_bytes())
    assert detect_format(tmp_path / "noext") == "ccd"


def test_binary_cif_gives_ions_and_charged_ligands_their_charge(tmp_path):
    """Na+, acetate (one O-), ammonium (N+) and sulfate from the CCD biotite ships: the sums of the atoms' charges."""
    loaded = load_path(_binary(tmp_path, ["NA", "ACT", "NH4", "SO4"]))
    assert list(loaded.mols.ids) == ["NA", "ACT", "NH4", "SO4"]
    assert loaded.mols.charges.tolist() == [1.0, -1.0, 1.0, -2.0]


def test_the_chemistry_stage_perceives_ccd_components_at_their_charge(tmp_path):
    """Bonds are perceived at the file's charge: the ions and charged ligands keep their charged graphs."""
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.store.results import ResultStore
    from orientscope.store.shards import save_sharded

    text = tmp_path / "ions.cif"
    text.write_text(SAMPLE.read_text().split("data_ATP")[0])  # ZN, HOH, SO4
    paths = [text, _binary(tmp_path, ["NA", "ACT", "NH4"])]
    mols = concat_molecule_sets([load_path(p).mols for p in paths])
    save_sharded(tmp_path / "data", "ccd", mols, name="ccd", source="CCD")
    params = make_params(seed=0)
    precompute(tmp_path / "data", "ccd", params, stages=["frames", "chemistry"], cluster="in-process")
    table = ResultStore(tmp_path / "data", "ccd", params).table("chemistry", "molecules").to_pandas().set_index("id")
    assert table["chemistry_ok"].all()
    assert table.loc[["ZN", "HOH", "SO4", "NA", "ACT", "NH4"], "smiles"].tolist() == [
        "[Zn+2]",
        "O",
        "O=S(=O)([O-])[O-]",
        "[Na+]",
        "CC(=O)[O-]",
        "[NH4+]",
    ]


def test_the_ccd_biotite_ships_reads_whole_with_its_ions_metals_and_counted_skips():
    info = pytest.importorskip("biotite.structure.info")
    shipped = Path(info.__file__).parent / "components.bcif"
    big = Limits(max_molecules=10**6, max_total_atoms=10**8, max_upload_bytes=2**31)
    loaded = load_path(shipped, limits=big)
    ids = list(loaded.mols.ids)
    n_listed = len(info.get_ccd()["chem_comp"]["id"].as_array())
    assert loaded.format == "ccd" and len(ids) + loaded.n_skipped == n_listed
    assert 0 < loaded.n_skipped < 0.05 * n_listed  # UNL has no atoms; some lack ideal coordinates or are dummies
    charge = dict(zip(ids, loaded.mols.charges.tolist(), strict=True))
    assert (charge["ZN"], charge["NA"], charge["SO4"], charge["HOH"]) == (2.0, 1.0, -2.0, 0.0)
    np.testing.assert_array_equal(loaded.mols.properties["charge"], loaded.mols.charges)  # NaN where unknown
    assert max(loaded.mols.n_atoms) <= 2000 and 26 in _atoms(loaded, "HEM")[0]
    text = load_path(SAMPLE, limits=LENIENT)
    for mol_id in READ:
        np.testing.assert_allclose(_atoms(loaded, mol_id)[1], _atoms(text, mol_id)[1], atol=1e-3)


def test_coordinates_are_read_as_written_in_any_pose(tmp_path):
    """A seeded Haar rotation of SO4's ideal coordinates, written into the file, is what is read."""
    text = SAMPLE.read_text().split("data_ATP")[0]
    rows = [line for line in text.splitlines() if line.split()[3:4] == ["SO4"] and len(line.split()) == 24]
    ideal = np.array([[float(v) for v in row.split()[15:18]] for row in rows])
    turned = ideal @ random_rotations(1, seed=11)[0].T
    for row, xyz in zip(rows, turned, strict=True):
        parts = row.split()
        parts[15:18] = [f"{v:.3f}" for v in xyz]
        text = text.replace(row, " ".join(parts))
    (tmp_path / "turned.cif").write_text(text)
    _, pos = _atoms(load_path(tmp_path / "turned.cif"), "SO4")
    np.testing.assert_allclose(pos, turned, atol=5e-4)
    assert np.abs(pos - ideal).max() > 0.1


def test_the_cli_ingests_ccd_with_model_coordinates(tmp_path):
    data = tmp_path / "data"
    exe = [sys.executable, "-m", "orientscope.cli"]
    args = ["ingest", str(SAMPLE), "--name", "ccd", "--data-dir", str(data), "--format-option", "coordinates=model"]
    proc = subprocess.run([*exe, *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    from orientscope.store import datasets as ds

    meta = ds.read_meta(data, "ccd")
    assert meta["format"] == "ccd" and meta["format_options"] == {"coordinates": "model"}
    assert meta["n_molecules"] == 6 and list(ds.load_dataset(data, "ccd").ids) == [*READ, "FS1"]
