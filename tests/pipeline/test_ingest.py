import numpy as np
import pytest
from typer.testing import CliRunner

from orientscope.cli import app
from orientscope.core.errors import DatasetError
from orientscope.loaders.extxyz import write_extxyz
from orientscope.loaders.xyz import write_xyz
from orientscope.pipeline.builtin import BUILTIN
from orientscope.pipeline.ingest import ingest_file, new_dataset_id
from orientscope.pipeline.migrate import needs_migration
from orientscope.pipeline.model_audit import is_frame_dependent
from orientscope.pipeline.precompute import make_params, precompute
from orientscope.pipeline.staging import staging_root
from orientscope.store import datasets as ds
from orientscope.store.results import ResultStore, list_result_keys
from orientscope.store.shards import shard_table_paths

runner = CliRunner()


@pytest.fixture()
def small_file(tmp_path, qm9_small):
    path = tmp_path / "small.extxyz"
    write_extxyz(path, qm9_small.subset(np.arange(50)))
    return path


def test_ingest_stores_and_precomputes(tmp_path, small_file, qm9_small):
    data_dir = tmp_path / "data"
    steps = []
    meta = ingest_file(data_dir, small_file, "My set", progress=lambda f, msg, stage="": steps.append((f, stage)))
    assert meta["id"] == "my-set" and meta["name"] == "My set" and meta["format"] == "extxyz"
    assert meta["n_molecules"] == 50 and meta["n_skipped"] == 0 and meta["has_smiles"]
    assert meta["active_result"] in list_result_keys(data_dir, "my-set")
    # Written in the sharded layout from the start (a small set is one shard): nothing is left to migrate.
    assert meta["layout"] == "sharded" and meta["format_version"] == 2 and len(meta["shards"]) == 1
    assert not needs_migration(data_dir, "my-set")
    mols = ds.load_dataset(data_dir, "my-set")
    np.testing.assert_allclose(mols.positions_angstrom, qm9_small.subset(np.arange(50)).positions_angstrom, atol=1e-7)
    fractions = [f for f, _ in steps]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert {"load", "save", "frames", "statistics", "done"} <= {s for _, s in steps}
    assert not any(staging_root(data_dir).iterdir())
    # The same name again gets a fresh id; the first dataset is untouched.
    assert new_dataset_id(data_dir, "My set") == "my-set-2"


def test_failed_ingest_leaves_nothing_and_never_overwrites(tmp_path, small_file):
    data_dir = tmp_path / "data"
    ingest_file(data_dir, small_file, "keep")
    atoms = ds.dataset_dir(data_dir, "keep") / "shards" / "m00000" / "atoms.parquet"
    before = atoms.read_bytes()
    bad = tmp_path / "bad.xyz"
    bad.write_text("3\nx\nO 0 0 0\nH 1 0\n")
    with pytest.raises(DatasetError, match="bad.xyz"):
        ingest_file(data_dir, bad, "broken")
    with pytest.raises(DatasetError, match="already exists"):
        ingest_file(data_dir, small_file, "other", dataset_id="keep")
    assert ds.list_dataset_ids(data_dir) == ["keep"]
    assert atoms.read_bytes() == before
    assert not any(staging_root(data_dir).iterdir())


def test_cli_ingest_rename_export_delete(tmp_path, small_file):
    d = ["--data-dir", str(tmp_path / "data")]
    res = runner.invoke(app, ["ingest", str(small_file), "--name", "CLI set", "--format", "extxyz", *d])
    assert res.exit_code == 0, res.output
    assert "ingested cli-set (CLI set): 50 molecules" in res.output
    res = runner.invoke(app, ["rename", "cli-set", "Renamed", *d])
    assert res.exit_code == 0 and ds.read_meta(tmp_path / "data", "cli-set")["name"] == "Renamed"
    res = runner.invoke(
        app, ["export", "cli-set", "--mode", "random", "--out", str(tmp_path / "out.npz"), "--seed", "4", *d]
    )
    assert res.exit_code == 0, res.output
    assert (tmp_path / "out.npz").is_file() and (tmp_path / "out.npz.rotations.csv").is_file()
    res = runner.invoke(app, ["delete", "cli-set", *d])
    assert res.exit_code == 0 and ds.list_dataset_ids(tmp_path / "data") == []
    res = runner.invoke(app, ["delete", "cli-set", *d])
    assert res.exit_code == 2 and "unknown dataset 'cli-set'" in res.output


def test_cli_strict_and_bad_format(tmp_path, qm9_small):
    bad = tmp_path / "b.xyz"
    write_xyz(bad, qm9_small.subset(np.arange(40)))
    with open(bad, "a") as fh:
        fh.write("3\nbad\nO 0 0 0\nH nan 0 0\nH 0 0.9 0\n")
    first_line = sum(int(n) + 2 for n in qm9_small.n_atoms[:40]) + 1
    d = ["--data-dir", str(tmp_path / "data")]
    res = runner.invoke(app, ["ingest", str(bad), "--name", "strict", "--strict", *d])
    assert res.exit_code == 2 and f"record 41 (line {first_line})" in res.output
    res = runner.invoke(app, ["ingest", str(bad), "--name", "lenient", *d])
    assert res.exit_code == 0, res.output
    assert "1 malformed record(s) skipped" in res.output and "more skipped record" not in res.output
    many = tmp_path / "many.xyz"  # 7 bad records among 147: the first 5 are named, the other 2 counted
    write_xyz(many, qm9_small.subset(np.arange(140)))
    with open(many, "a") as fh:
        for k in range(7):
            fh.write(f"3\nbad{k}\nO 0 0 0\nH nan 0 0\nH 0 0.9 0\n")
    res = runner.invoke(app, ["ingest", str(many), "--name", "many", *d])
    assert res.exit_code == 0, res.output
    assert "7 malformed record(s) skipped" in res.output and res.output.count("  skipped: ") == 5
    assert "… and 2 more skipped record(s)" in res.output
    res = runner.invoke(app, ["ingest", str(bad), "--name", "x", "--format", "pdb", *d])
    assert res.exit_code == 2 and "unknown format 'pdb'" in res.output


def test_cli_generate_records_the_generator(tmp_path, qm9_small):
    smiles = [str(x) for x in qm9_small.smiles[200:260]]
    smi = tmp_path / "s.smi"
    smi.write_text("".join(f"{x} m{i}\n" for i, x in enumerate(smiles)))
    d = ["--data-dir", str(tmp_path / "d")]
    res = runner.invoke(app, ["generate", "--smiles", str(smi), "--name", "Gen", "--seed", "3", "--random-coords", *d])
    assert res.exit_code == 0, res.output
    meta = ds.read_meta(tmp_path / "d", "gen")
    assert meta["generator"] == {"method": "ETKDGv3", "random_coords": True, "seed": 3}
    assert "useRandomCoords=True" in meta["source"]
    ids = list(ds.load_dataset(tmp_path / "d", "gen").ids)
    assert meta["n_molecules"] + meta["n_skipped"] == 60 and ids == [f"m{i}" for i in range(60) if f"m{i}" in ids]
    assert len(ids) >= 50


def test_cli_ingest_frame_dependent_goes_into_the_metadata(tmp_path, small_file):
    d = ["--data-dir", str(tmp_path / "data")]
    args = ["ingest", str(small_file), "--name", "Tensor set", "--format", "extxyz", *d]
    res = runner.invoke(app, [*args, "--frame-dependent", "gap, zpve"])
    assert res.exit_code == 0, res.output
    meta = ds.read_meta(tmp_path / "data", "tensor-set")
    assert meta["frame_dependent"] == ["gap", "zpve"]
    assert ds.load_dataset(tmp_path / "data", "tensor-set").frame_dependent == {"gap", "zpve"}
    assert is_frame_dependent(meta, "gap") and not is_frame_dependent(meta, "homo")
    res = runner.invoke(app, [*args, "--frame-dependent", "colour"])
    assert res.exit_code == 2 and "['colour'] are not properties" in res.output


def test_a_built_in_set_is_materialised_in_shards_so_a_first_start_migrates_nothing(tmp_path, qm9_small, monkeypatch):
    monkeypatch.setitem(BUILTIN, "tiny", ("Tiny", "test subset", lambda: qm9_small.subset(np.arange(60))))
    data_dir = tmp_path / "data"
    precompute(data_dir, "tiny", make_params())  # what `serve` runs on a fresh clone, for QM9
    meta = ds.read_meta(data_dir, "tiny")
    assert meta["layout"] == "sharded" and meta["format_version"] == 2 and meta["builtin"]
    result = ResultStore(data_dir, "tiny", make_params()).dir
    assert len(shard_table_paths(result, "frames", "original")) == 1  # the per-shard steps ran, on one shard
    assert not needs_migration(data_dir, "tiny")
