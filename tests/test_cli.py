"""The CLI end to end, as a user runs it (subprocesses, real QM9 slice)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXE = shutil.which("orientscope", path=str(Path(sys.executable).parent)) or "orientscope"


def run(*args, env_dir=None, check=True):
    env = None
    if env_dir is not None:
        import os

        env = {**os.environ, "ORIENTSCOPE_DATA_DIR": str(env_dir)}
    proc = subprocess.run([EXE, *args], capture_output=True, text=True, env=env, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(proc.stderr)
    return proc


@pytest.fixture(scope="module")
def cli_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    run("precompute", "qm9", "--limit", "300", "--seed", "5", "--data-dir", str(d))
    return d


def test_report_json_has_the_documented_keys(cli_dir):
    out = run("report", "qm9", "--json", "--limit", "300", "--seed", "5", "--data-dir", str(cli_dir))
    report = json.loads(out.stdout)
    for key in (
        "dataset",
        "n_molecules",
        "n_degenerate",
        "seed",
        "frame",
        "reference_orientation",
        "kl",
        "ks",
        "control",
    ):
        assert key in report, key
    assert report["dataset"] == "qm9" and report["n_molecules"] == 300 and report["seed"] == 5
    assert set(report["kl"]) >= {"value", "ci95"} and len(report["kl"]["ci95"]) == 2
    assert set(report["control"]["kl"]) >= {"value", "ci95"} and set(report["control"]["ks"]) >= {"statistic", "pvalue"}
    # The control is a uniformly rotated copy: its KL is near 0, far below the data's.
    assert abs(report["control"]["kl"]["value"]) < 0.15
    assert report["kl"]["value"] > report["control"]["kl"]["value"] + 0.1


def test_report_reuses_stored_results_and_reads_env_dir(cli_dir):
    manifest = next(cli_dir.glob("datasets/qm9/results/pca-max-s5-n300/manifest.json"))
    before = manifest.read_text()
    text = run("report", "qm9", "--limit", "300", "--seed", "5", env_dir=cli_dir).stdout
    assert "Verdict:" in text and "control" in text
    assert manifest.read_text() == before


def test_unknown_dataset_and_bad_option_fail_cleanly(tmp_path):
    proc = run("report", "nope", "--data-dir", str(tmp_path), check=False)
    assert proc.returncode == 2 and "unknown dataset 'nope'" in proc.stderr
    proc = run("precompute", "qm9", "--frame", "svd", "--data-dir", str(tmp_path), check=False)
    assert proc.returncode == 2 and "expected one of" in proc.stderr


def test_synth_writes_shards_the_npz_loader_reads(tmp_path):
    from backend.loaders.npz import load_npz

    out = tmp_path / "synth"
    proc = run("synth", "--n", "250", "--out", str(out), "--bias", "qm9", "--blur", "5", "--shard-size", "100")
    assert "wrote 250 molecules in 3 shards" in proc.stdout
    manifest = json.loads((out / "synth.json").read_text())
    assert manifest["bias"] == "qm9" and manifest["blur_deg"] == 5.0
    last = load_npz(out / manifest["shards"][-1]["file"]).mols
    assert last.n_molecules == 50 and last.ids[0].endswith("_0") and last.smiles[0]
    bad = run("synth", "--n", "10", "--out", str(out), "--bias", "tilted", check=False)
    assert bad.returncode == 2 and "expected one of" in bad.stderr
