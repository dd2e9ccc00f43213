"""The CLI end to end, as a user runs it (subprocesses, real QM9 slice)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from orientscope import cli
from tests.cli_run import EXE, run
from tests.harness import GaveUp, exited, free_port, wait_healthy, wait_until
from tests.molecules import READ_DIFFERENTLY


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
    assert report["verdict"]["code"] in ("aligned", "weakly_aligned") and report["verdict"]["aligned"] is True
    assert report["control"]["verdict"]["code"] == "not_detected" and report["verdict"]["alpha"] == 1e-3
    assert (
        report["verdict"]["badge"] == "Aligned — strong effect"
        and report["control"]["verdict"]["badge"] == "Not detected"
    )
    assert set(report["kl"]) >= {"value", "ci95"} and len(report["kl"]["ci95"]) == 2
    assert set(report["control"]["kl"]) >= {"value", "ci95"} and set(report["control"]["ks"]) >= {"statistic", "pvalue"}
    # The control is a uniformly rotated copy: its KL is near 0, far below the data's.
    assert abs(report["control"]["kl"]["value"]) < 0.15
    assert report["kl"]["value"] > report["control"]["kl"]["value"] + 0.1


def test_report_reuses_stored_results_and_reads_env_dir(cli_dir):
    manifest = next(cli_dir.glob("datasets/qm9/results/pca-max-s5-n300/manifest.json"))
    before = manifest.read_text()
    proc = run("report", "qm9", "--limit", "300", "--seed", "5", env_dir=cli_dir)
    text = proc.stdout
    assert "Verdict: Aligned — strong effect (rule version " in text
    assert "Control's verdict, same rule: Not detected" in text
    assert manifest.read_text() == before
    assert "%|" not in proc.stderr  # nothing ran: no progress bar


def test_map_stores_the_map_in_the_active_result(cli_dir):
    folder = cli_dir / "datasets/qm9/results/pca-max-s5-n300/map/original"
    assert (folder / "map.json").is_file()  # the precompute ran the map stage
    shutil.rmtree(folder.parent)  # as a result stored before the map stage holds it
    out = run("map", "qm9", "--table", "original", "--data-dir", str(cli_dir)).stdout
    assert f"stored the map of qm9 in {folder}" in out
    meta = json.loads((folder / "map.json").read_text())
    # Methane has no orientation: its three axes are no points.
    assert meta["n_molecules"] == 300 and meta["n_points"] == 897 and meta["whole"] == [897, 299]
    assert not (folder.parent / "control").exists()
    proc = run("map", "qm9", "--table", "sideways", "--data-dir", str(cli_dir), check=False)
    assert proc.returncode == 2 and "unknown table 'sideways'" in proc.stderr


def test_unknown_dataset_and_bad_option_fail_cleanly(tmp_path):
    proc = run("report", "nope", "--data-dir", str(tmp_path), check=False)
    assert proc.returncode == 2 and "unknown dataset 'nope'" in proc.stderr and "%|" not in proc.stderr
    proc = run("precompute", "qm9", "--frame", "svd", "--data-dir", str(tmp_path), check=False)
    assert proc.returncode == 2 and "expected one of" in proc.stderr


def test_synth_writes_shards_the_npz_loader_reads(tmp_path):
    from orientscope.loaders.detect import load_path

    out = tmp_path / "synth"
    proc = run("synth", "--n", "250", "--out", str(out), "--bias", "qm9", "--blur", "5", "--shard-size", "100")
    assert "wrote 250 molecules in 3 shards" in proc.stdout
    manifest = json.loads((out / "synth.json").read_text())
    assert manifest["bias"] == "qm9" and manifest["blur_deg"] == 5.0
    last = load_path(out / manifest["shards"][-1]["file"], "npz").mols
    assert last.n_molecules == 50 and last.ids[0].endswith("_0") and last.smiles[0]
    bad = run("synth", "--n", "10", "--out", str(out), "--bias", "tilted", check=False)
    assert bad.returncode == 2 and "expected one of" in bad.stderr


# ------------------------------------------------------------------ serve: who may write
def _serve(data_dir: Path, *args: str, token: str | None = None) -> subprocess.Popen:
    """``orientscope serve`` from this checkout (python -m orientscope.cli) on a free port."""
    import os

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORIENTSCOPE_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    if token:
        env["ORIENTSCOPE_TOKEN"] = token
    cmd = [sys.executable, "-m", "orientscope.cli", "serve", "--port", str(port), "--data-dir", str(data_dir), *args]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.port = port
    return proc


def _health_then_stop(proc: subprocess.Popen) -> str:
    """Wait until the server answers /api/health on loopback, stop it; its stderr."""
    try:
        wait_healthy(f"http://127.0.0.1:{proc.port}", proc, timeout_s=120)
    except GaveUp:
        raise AssertionError(f"serve exited with {proc.returncode}: {proc.stderr.read()}") from None
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    return err


@pytest.fixture(scope="module")
def ready_dir(qm9_store, tmp_path_factory):
    """A store whose QM9 is computed, so serve starts without precomputing."""
    d = tmp_path_factory.mktemp("serve") / "data"
    shutil.copytree(qm9_store, d)
    return d


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:8050"),
        ("localhost", "http://localhost:8050"),
        ("::1", "http://[::1]:8050"),  # printed as http://::1:8050/ once, which no browser opens
        ("[::1]", "http://[::1]:8050"),
        ("::", "http://[::]:8050"),
    ],
)
def test_serve_prints_a_url_a_browser_opens(host, url):
    assert cli.server_url(host, 8050) == url


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]], ids=["1 worker", "2 workers"])
def test_serve_on_open_address_without_token_or_read_only_refuses(tmp_path, workers):
    proc = _serve(tmp_path / "empty", "--host", "0.0.0.0", *workers)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert "ORIENTSCOPE_TOKEN" in err and "--read-only" in err and "--allow-anonymous-writes" in err
    assert not (tmp_path / "empty").exists()  # refused before any precompute


def test_serve_on_open_address_with_token_starts(ready_dir):
    err = _health_then_stop(_serve(ready_dir, "--host", "0.0.0.0", "--no-access-log", token="s3cret"))
    assert "refusing" not in err and "WARNING: anonymous" not in err


def test_serve_on_loopback_without_token_starts(ready_dir):
    err = _health_then_stop(_serve(ready_dir, "--host", "127.0.0.1", "--no-access-log"))
    assert "refusing" not in err and "WARNING: anonymous" not in err


def test_serve_allow_anonymous_writes_warns_and_starts(ready_dir):
    err = _health_then_stop(_serve(ready_dir, "--host", "0.0.0.0", "--allow-anonymous-writes", "--no-access-log"))
    assert "WARNING: anonymous writes are allowed on '0.0.0.0'" in err


def test_serve_a_private_server_from_a_token_file_with_two_workers(ready_dir, tmp_path):
    """--read-token-file and --allowed-hosts reach every worker; the token never reaches the log."""

    import httpx

    read_token = "read-0123456789abcdef"
    (tmp_path / "read-token").write_text(read_token + "\n")
    proc = _serve(
        ready_dir,
        *("--host", "0.0.0.0", "--workers", "2", "--allowed-hosts", "lab.example"),
        *("--read-token-file", str(tmp_path / "read-token")),
        token="write-0123456789abcdef",
    )
    url, reader = f"http://127.0.0.1:{proc.port}", {"Authorization": f"Bearer {read_token}"}
    try:
        health = lambda: httpx.get(f"{url}/api/health", timeout=2).json() == {"status": "ok"}  # noqa: E731
        wait_until(health, 120, "serve's /api/health (public, and minimal)", 0.2, exited(proc))
        # The workers got their settings as one value (tokens excepted: those they inherit from serve's own
        # environment, where the read token never was).
        import psutil

        workers = [
            p for p in psutil.Process(proc.pid).children(recursive=True) if "multiprocessing" in " ".join(p.cmdline())
        ]
        assert workers
        for worker in workers:
            env = {k: v for k, v in worker.environ().items() if k.startswith("ORIENTSCOPE_")}
            assert env.keys() == {"ORIENTSCOPE_SETTINGS", "ORIENTSCOPE_TOKEN"}
            handed = json.loads(env["ORIENTSCOPE_SETTINGS"])
            assert handed["allowed_hosts"] == ["lab.example"] and handed["host"] == "0.0.0.0"
            assert handed["read_token_file"] == str(tmp_path / "read-token") and read_token not in str(env)
        for _ in range(4):  # both workers
            assert httpx.get(f"{url}/api/datasets").status_code == 401
            assert httpx.get(f"{url}/api/datasets", headers=reader).status_code == 200
            assert httpx.get(f"{url}/api/datasets", headers={**reader, "Host": "lab.example"}).status_code == 200
            assert httpx.get(f"{url}/api/datasets", headers={**reader, "Host": "evil.example"}).status_code == 400
            assert httpx.get(f"{url}/?token={read_token}").status_code == 303
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert "sign in at" in err and read_token not in out + err


def test_a_setting_a_command_does_not_accept_ends_it_naming_the_variable(tmp_path):
    import os

    env = {**os.environ, "ORIENTSCOPE_DATA_DIR": str(tmp_path), "ORIENTSCOPE_SHARD_SIZE": "0"}
    proc = subprocess.run([EXE, "list"], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: ORIENTSCOPE_SHARD_SIZE='0': expected a whole number of molecules, at least 1"
    # also a variable this command never reads, with the data folder given as an option (no setting read for it)
    env = {**os.environ, "ORIENTSCOPE_MAX_MOLECULES": "abc"}
    proc = subprocess.run([EXE, "list", "--data-dir", str(tmp_path)], capture_output=True, text=True, env=env,
                          timeout=600)  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: ORIENTSCOPE_MAX_MOLECULES='abc': expected a whole number of molecules"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--read-token-file", "{dir}/absent"], "cannot read the read-token file"),
        (["--allowed-hosts", "https://lab.example:8050/"], "is not a host name"),
    ],
)
def test_serve_refuses_a_bad_read_token_file_or_host_name(tmp_path, args, message):
    proc = _serve(tmp_path / "empty", *[a.format(dir=tmp_path) for a in args])
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0 and message in err
    assert not (tmp_path / "empty").exists()  # refused before any precompute


def test_serve_a_read_token_without_a_write_token_refuses(tmp_path):
    env_token = tmp_path / "t"
    env_token.write_text("read-0123456789abcdef")
    proc = _serve(tmp_path / "empty", "--read-token-file", str(env_token))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "ORIENTSCOPE_TOKEN" in err and "--read-only" in err


@pytest.fixture(scope="module")
def audit_dir(qm9_store, tmp_path_factory):
    d = tmp_path_factory.mktemp("cli-audit")
    shutil.copytree(qm9_store / "datasets", d / "datasets")
    return d


def test_export_copies_then_audit_model_json(audit_dir, tmp_path):
    import pandas as pd

    from orientscope.loaders.detect import load_path
    from orientscope.store.datasets import load_dataset
    from tests.audit_models import invariant_features, predictions_frame

    out = tmp_path / "rot.npz"
    proc = run("export", "qm9", "--mode", "random", "--copies", "2", "--purpose", "audit", "--out", str(out),
               "--data-dir", str(audit_dir))  # fmt: skip
    assert "audit stream" in proc.stdout
    rotations = pd.read_csv(tmp_path / "rot.npz.rotations.csv")
    assert sorted(rotations["copy"].unique()) == [0, 1] and set(rotations["purpose"]) == {"audit"}
    copies = [load_path(tmp_path / f"rot.copy{k}.npz", "npz").mols for k in range(2)]
    stored = load_dataset(audit_dir, "qm9")
    frame = predictions_frame(stored, copies, invariant_features, stored.properties["gap"].to_numpy(), "gap")
    frame.loc[len(frame)] = ["nosuch-id", "gap", 0, 0.1, 0.1]
    frame.to_csv(tmp_path / "pred.csv", index=False, float_format="%.17g")
    proc = run(
        "audit-model", "qm9", str(tmp_path / "pred.csv"), "--name", "mine", "--json", "--data-dir", str(audit_dir)
    )
    audit = json.loads(proc.stdout)
    assert {"dataset", "name", "n_unknown_ids", "result_key", "properties"} <= set(audit)
    assert audit["dataset"] == "qm9" and audit["name"] == "mine" and audit["n_unknown_ids"] == 1
    (prop,) = audit["properties"]
    for key in ("property", "n", "mse_stored", "mse_rotated", "reliance", "ci95", "pvalue", "pvalue_holm", "verdict"):
        assert key in prop
    assert prop["verdict"]["code"] == "invariant"
    table = run("audit-model", "qm9", str(tmp_path / "pred.csv"), "--name", "again", "--data-dir", str(audit_dir))
    assert "invariant" in table.stdout and "gap" in table.stdout and "rotation shift median" in table.stdout
    gate = run("audit-model", "qm9", str(tmp_path / "pred.csv"), "--name", "gate", "--fail-on", "not-invariant",
               "--data-dir", str(audit_dir))  # fmt: skip
    assert gate.returncode == 0


def test_audit_model_of_held_out_ids_fails_the_gate_with_its_own_exit_code(audit_dir, tmp_path):
    from orientscope.cli import EXIT_AUDIT_FAILED
    from orientscope.loaders.detect import load_path
    from orientscope.pipeline.export import export_dataset
    from orientscope.store.datasets import load_dataset
    from tests.audit_models import lab_frame_features, lab_x_share, predictions_frame

    info = export_dataset(audit_dir, "qm9", "random", tmp_path / "c.npz", fmt="npz", copies=2, purpose="audit")
    copies = [load_path(p, "npz").mols for p in info["paths"]]
    stored = load_dataset(audit_dir, "qm9")
    y = 3.0 * lab_x_share(stored) + np.random.default_rng(1).normal(0, 0.05, stored.n_molecules)
    frame = predictions_frame(stored, copies, lab_frame_features, y, "pose_linked", with_true=True)
    frame.to_csv(tmp_path / "lab.csv", index=False, float_format="%.17g")
    held_out = stored.ids[1::3]
    (tmp_path / "test_ids.txt").write_text("id\n" + "\n".join(held_out) + "\n")
    args = ["audit-model", "qm9", str(tmp_path / "lab.csv"), "--name", "lab", "--ids", str(tmp_path / "test_ids.txt"),
            "--data-dir", str(audit_dir)]  # fmt: skip
    proc = run(*args, "--fail-on", "leans", check=False)
    assert proc.returncode == EXIT_AUDIT_FAILED == 3, proc.stderr
    assert "leans" in proc.stdout and f"{len(held_out):,} molecules" in proc.stdout
    assert "audit failed (--fail-on leans): {'pose_linked': 'leans'}" in proc.stderr
    assert run(*args, "--json", "--fail-on", "nonsense", check=False).returncode == 2
    unknown = tmp_path / "unknown.txt"
    unknown.write_text("nosuch\n")
    bad = run("audit-model", "qm9", str(tmp_path / "lab.csv"), "--name", "x", "--ids", str(unknown),
              "--data-dir", str(audit_dir), check=False)  # fmt: skip
    assert bad.returncode == 2 and "not molecules of dataset 'qm9'" in bad.stderr
    # A split file handed to --ids: its train rows would have been audited as held out.
    split = tmp_path / "split.csv"
    split.write_text("id,split\n" + "".join(f"{i},{'test' if k % 3 == 1 else 'train'}\n" for k, i in
                                            enumerate(stored.ids)))  # fmt: skip
    bad = run("audit-model", "qm9", str(tmp_path / "lab.csv"), "--name", "x", "--ids", str(split),
              "--data-dir", str(audit_dir), check=False)  # fmt: skip
    assert bad.returncode == 2 and "split.csv: its 'split' column marks" in bad.stderr


def test_export_ids_and_limit(audit_dir, tmp_path):
    import pandas as pd

    from orientscope.store.datasets import load_dataset

    ids = load_dataset(audit_dir, "qm9").ids[:10]
    (tmp_path / "ids.txt").write_text("\n".join(ids) + "\n")
    proc = run("export", "qm9", "--mode", "random", "--ids", str(tmp_path / "ids.txt"), "--limit", "4",
               "--out", str(tmp_path / "few.npz"), "--data-dir", str(audit_dir))  # fmt: skip
    assert "wrote 4 molecules" in proc.stdout and "augment stream" in proc.stdout
    rotations = pd.read_csv(tmp_path / "few.npz.rotations.csv", dtype={"id": str})
    assert set(rotations["id"]) <= set(ids) and len(rotations) == 4


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (("--copies", "2"), "--mode random"),
        # An audit's copies asked of a canonical export would have been canonical poses, silently.
        (("--purpose", "audit"), "purpose 'audit' gives the rotated copies a model audit scores"),
    ],
)
def test_export_copies_refused_with_canonical(audit_dir, tmp_path, option, message):
    proc = run(
        "export", "qm9", "--mode", "canonical", *option, "--out", str(tmp_path / "x.npz"),
        "--data-dir", str(audit_dir), check=False,
    )  # fmt: skip
    assert proc.returncode == 2 and message in proc.stderr
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------ the text report
def test_text_report_aligns_columns_and_names_every_section():
    from orientscope.cli import format_report
    from orientscope.science.verdict import RULE_VERSION
    from tests.reports import constructed_report

    report = constructed_report(
        name="QM9", dataset="qm9", n_molecules=400, frame="pca", sign_rule="max", seed=0, n_degenerate=1,
        degenerate_reasons={"eigen_gap_12": 1},
    )  # fmt: skip
    text = format_report(report)
    lines = text.splitlines()
    # the badge and the rule that made it, then the verdict's words; the control's by the same rule
    verdict = lines.index(f"Verdict: Aligned — strong effect (rule version {RULE_VERSION})")
    assert lines[verdict + 1].startswith("  Aligned: 3 of 3 tests reject random orientations")
    control = lines.index(f"Control's verdict, same rule: Not detected (rule version {RULE_VERSION})")
    assert lines[control + 1].startswith(
        "  Not detected: none of the verdict's tests tells these poses from random orientations"
    )
    assert "eigen_gap_12 (1): the first two axes have (almost) the same spread" in text
    kl = next(line for line in text.splitlines() if line.startswith("KL to uniform"))
    assert "0.907 [0.896, 0.918] | -0.001 [-0.003, 0.002]" in kl  # dataset and control apart
    header = next(line for line in text.splitlines() if line.startswith("measure"))
    assert header.index("| dataset") < header.index("| control")
    for title in ("Orientation statistics", "Rotation classifiers", "Orientation-only regression", "Similarity–pose"):
        assert title in text
    assert "predict the property from R alone" in text and "R from frame" not in text
    assert "p < 1e-300" in text and "< 1e-300" in next(line for line in text.splitlines() if "KS p-value" in line)
    assert "-0.0 %" not in text and "0.0 %" in text
    assert "alpha_zz (bohr^3) *" in text and "lab-frame component" in text


def test_text_report_writes_a_zero_of_the_reference_orientation_unsigned_and_counts_with_separators():
    from orientscope.cli import format_report
    from tests.reports import constructed_report

    # The identity as a canonical set's reference comes out of the kernel density: its zeros carry signs.
    identity = [[1.0, -0.0, -1e-5], [0.0, 1.0, 4e-5], [-0.0, -2e-4, 1.0]]
    report = constructed_report(
        name="one pose", dataset="one-pose", n_molecules=2000, frame="pca", sign_rule="max", seed=0,
        n_degenerate=1313, degenerate_reasons={"sign_tie_1": 1313}, reference_orientation=identity,
        orientation_classes={"full": 1956, "axis": 41, "none": 3},
    )  # fmt: skip
    lines = format_report(report).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Reference orientation"))
    assert lines[start + 1 : start + 4] == [
        "  +1.000  0.000  0.000",
        "   0.000 +1.000  0.000",
        "   0.000  0.000 +1.000",
    ]
    assert "Degenerate frames: 1,313 (sign_tie_1 1313)" in lines
    assert "Orientation by symmetry: 1,956 full frames, 41 only an axis, 3 no orientation" in lines


def test_text_report_of_three_molecules_says_what_was_skipped(tmp_path):
    from typer.testing import CliRunner

    from orientscope.cli import app
    from tests.molecules import WATER_METHANE_FORMALDEHYDE_XYZ

    (tmp_path / "three.xyz").write_text(WATER_METHANE_FORMALDEHYDE_XYZ)
    d = ["--data-dir", str(tmp_path / "data")]
    assert CliRunner().invoke(app, ["ingest", str(tmp_path / "three.xyz"), "--name", "three", *d]).exit_code == 0
    res = CliRunner().invoke(app, ["report", "three", *d])
    assert res.exit_code == 0, res.output
    assert "skipped: orientation statistics (KL, KS) need more than 6 molecules, got 3" in res.output
    assert res.output.count("skipped: the rotation classifiers and the orientation-only regression") == 2
    assert "skipped: similarity–pose coupling not tested: 0 neighbour pairs, fewer than the 100" in res.output
    assert "measure" not in res.output  # no empty table


# Three molecules read differently from their file: "A" names water and methane, a property is called
# n_atoms (a column of the molecules table), and a deuterium is read as hydrogen.
@pytest.mark.parametrize("cluster", [[], ["--cluster", "in-process"]])
def test_ingest_prints_what_it_read_differently_from_the_file(tmp_path, cluster):
    """One file read here and the same file read as shards on the engine say the same warnings."""
    from typer.testing import CliRunner

    from orientscope.cli import app

    (tmp_path / "odd.extxyz").write_text(READ_DIFFERENTLY)
    d = ["--data-dir", str(tmp_path / "data")]
    res = CliRunner().invoke(app, ["ingest", str(tmp_path / "odd.extxyz"), "--name", "odd", *d, *cluster])
    assert res.exit_code == 0, res.output
    warnings = [line for line in res.stderr.splitlines() if line.startswith("  warning: ")]
    assert len(warnings) == 3, res.stderr
    assert "1 id(s) name 2 molecules of different formulas" in warnings[0] and "'A_dup1' (CH4)" in warnings[0]
    assert "'n_atoms' → 'prop_n_atoms'" in warnings[1]
    assert "atoms written D or T (deuterium, tritium) were read as hydrogen" in warnings[2]
    strict = CliRunner().invoke(app, ["ingest", str(tmp_path / "odd.extxyz"), "--name", "odd2", "--strict", *d])
    assert strict.exit_code != 0 and "id 'A' names molecules of different formulas" in strict.output


# ------------------------------------------------------------------ migrate: single-folder datasets to shards
@pytest.fixture()
def old_dir(old_layout_store, tmp_path):
    d = tmp_path / "data"
    shutil.copytree(old_layout_store, d)
    return d


def _layout(data_dir: Path, dataset: str) -> tuple[str | None, int]:
    meta = json.loads((data_dir / "datasets" / dataset / "dataset.json").read_text())
    return meta.get("layout"), len(meta.get("shards", []))


def test_migrate_cuts_an_old_dataset_into_shards_once(old_dir):
    out = run("migrate", "old", "--shard-size", "40", "--data-dir", str(old_dir))
    assert "migrated old: 150 molecules in 4 shards" in out.stdout
    assert _layout(old_dir, "old") == ("sharded", 4)
    out = run("migrate", "old", "--data-dir", str(old_dir))
    assert "old is already sharded (4 shards)" in out.stdout and "current for 2 result(s)" in out.stdout
    proc = run("migrate", "nope", "--data-dir", str(old_dir), check=False)
    assert proc.returncode == 2 and "unknown dataset 'nope'" in proc.stderr


def test_every_command_but_migrate_refuses_an_old_dataset_with_the_hint(old_dir):
    for args in (["precompute", "old"], ["report", "old"], ["precompute", "old", "--limit", "20"], ["map", "old"]):
        proc = run(*args, "--data-dir", str(old_dir), check=False)
        assert proc.returncode != 0 and "orientscope migrate old" in proc.stderr, (args, proc.stderr)
    assert _layout(old_dir, "old") == (None, 0)


def test_serve_migrates_nothing_and_names_migrate_for_an_old_qm9(old_dir):
    shutil.move(old_dir / "datasets" / "old", old_dir / "datasets" / "qm9")
    meta = json.loads((old_dir / "datasets" / "qm9" / "dataset.json").read_text())
    (old_dir / "datasets" / "qm9" / "dataset.json").write_text(json.dumps({**meta, "id": "qm9"}))
    err = _health_then_stop(_serve(old_dir, "--no-access-log"))
    assert "orientscope migrate qm9" in err
    assert _layout(old_dir, "qm9") == (None, 0)


def test_every_option_help_reads_in_the_command_help_as_written():
    """Help texts are shown as written: rich markup took "[name]" in "one 'SMILES [name]' per line" for a
    style tag and printed "one 'SMILES ' per line" (issue 40)."""
    import re

    import typer
    from typer.testing import CliRunner

    from orientscope.cli import app

    group = typer.main.get_command(app)
    for name, command in group.commands.items():
        res = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "200"}, terminal_width=200)
        shown = " ".join(re.sub(r"[│╭╮╰╯─]", " ", res.output).split())
        for param in command.params:
            text = " ".join((getattr(param, "help", None) or "").split())
            assert text in shown, (name, param.name, text)
