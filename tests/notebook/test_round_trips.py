"""The Python API gives the CLI's and the REST API's numbers: report, model audit, saved sets and audits."""

from __future__ import annotations

import html
import json
import math
import re
import shutil
from dataclasses import replace

import httpx
import numpy as np
import pandas as pd
import pytest

import orientscope
from orientscope.core.dataset import MoleculeSet
from orientscope.notebook.audit import PredictError
from orientscope.notebook.datasets import UNSAVED
from orientscope.pipeline.export import copy_rotations
from orientscope.science.counter_rng import id_counters
from orientscope.science.rotations import rotate_molecules
from orientscope.store import audits as audit_store
from orientscope.store.datasets import list_dataset_ids
from tests.api.conftest import ServerThread
from tests.audit_models import exported_copies, invariant_features, lab_frame_features, lab_x_share
from tests.cli_run import run


@pytest.fixture(scope="module")
def data_dir(qm9_store, tmp_path_factory):
    target = tmp_path_factory.mktemp("python-api") / "data"
    shutil.copytree(qm9_store / "datasets", target / "datasets")
    return target


def _close(a, b) -> bool:
    """Equal structures whose floats agree to 1e-9 relative (1e-15 absolute)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15)
    return a == b


def _batch_set(batch) -> MoleculeSet:
    return MoleculeSet(batch.numbers, batch.positions, batch.offsets, batch.ids)


def _fitted(features, mols: MoleculeSet, y: np.ndarray):
    """A linear model fitted on the stored poses, predicting from a batch's own atoms."""
    weights, *_ = np.linalg.lstsq(features(mols), y, rcond=None)
    return lambda batch: features(_batch_set(batch)) @ weights


def test_report_equals_the_cli_report_json(data_dir):
    r = orientscope.report(orientscope.load("qm9", data_dir), seed=0, progress=False)
    cli = json.loads(run("report", "qm9", "--json", "--seed", "0", "--data-dir", str(data_dir)).stdout)
    assert r.to_dict() == cli
    assert r.kl == cli["kl"]["value"] and list(r.kl_ci95) == cli["kl"]["ci95"]
    assert r.control_kl == cli["control"]["kl"]["value"] and r.verdict == cli["verdict"]["text"]
    assert list(r.regression["property"]) == [row["property"] for row in cli["regression"]]
    assert list(r.classifiers["features"]) == [c["features"] for c in cli["classifiers"]]
    assert len(r.frames) == cli["n_molecules"] and {"id", "r00", "r22"} <= set(r.frames.columns)
    kinds = {kind: r.figure(kind) for kind in ("map", "sphere", "angles")}
    assert [t.meta["kind"] for t in kinds["map"].data[:3]] == ["outline", "graticule", "reference"]
    assert any(t.type == "scatter3d" for t in kinds["sphere"].data)
    assert kinds["angles"].layout.yaxis.type == "log"  # the ratio to the Haar density (the dashboard's figure)
    card = r._repr_html_()
    assert "data-verdict=" in card and "data:image/png;base64," in card and cli["result_key"] in card
    # the badge, the rule that made it, and each test with its own interval and Holm p (never a bare "86%")
    v = cli["verdict"]
    assert f"<strong>{html.escape(v['badge'])}</strong>" in card and f"verdict rule {v['rule_version']}" in card
    assert all(html.escape(e["test"]) in card for e in v["evidence"]) and card.count("Holm p") >= len(v["evidence"])
    view = r.molecule("1")._make_html()
    assert "data:text/javascript;base64," in view and "cdn.jsdelivr" not in view
    with pytest.raises(ValueError, match=r"unknown figure 'histogram'; allowed: \['map', 'sphere', 'angles'\]"):
        r.figure("histogram")


def test_copies_are_the_exports_copies(data_dir, tmp_path):
    """predict sees exactly the poses `export --copies K --purpose audit` writes (one counter-based rule), whatever
    the batch size."""
    ds = orientscope.load("qm9", data_dir)
    seen: dict[int, list[np.ndarray]] = {}

    def record(batch):
        if batch.copy is not None:
            seen.setdefault(batch.copy, []).append(batch.positions.copy())
        return np.zeros(len(batch))

    orientscope.audit_model(record, ds, "gap", copies=2, batch_size=37, progress=False)
    for k, copy in enumerate(exported_copies(data_dir, "qm9", tmp_path, copies=2)):
        np.testing.assert_allclose(np.concatenate(seen[k]), copy.positions_angstrom, atol=1e-12)


def test_audit_model_equals_audit_model_on_the_csv_and_the_rest_audit(data_dir, tmp_path):
    ds = orientscope.load("qm9", data_dir)
    mols = ds.molecules()
    predict = _fitted(invariant_features, mols, mols.properties["gap"].to_numpy())
    audit = orientscope.audit_model(predict, ds, ["gap"], copies=3, seed=2, progress=False)
    assert audit.verdicts == {"gap": "invariant"}
    csv = tmp_path / "predictions.csv"
    audit.predictions.to_csv(csv, index=False, float_format="%.17g")
    out = run(
        "audit-model", "qm9", str(csv), "--name", "from csv", "--seed", "2", "--json", "--data-dir", str(data_dir)
    )
    cli = json.loads(out.stdout)
    mine = audit.to_dict()
    # equal up to the order of float sums (the CLI may read the store in another shard order)
    assert _close(mine["properties"], cli["properties"]) and mine["result_key"] == cli["result_key"]
    assert mine["input"]["rotation_rule"].startswith("counter-based") and mine["input"]["copies"] == 3
    # Saved, it is the REST API's audit, and the dashboard's list shows it.
    assert audit.id not in audit_store.list_audit_ids(data_dir, "qm9")
    audit.save()
    from orientscope.server import create_app

    with ServerThread(create_app(data_dir, dashboard=False)) as server:
        rest = httpx.get(f"{server.url}/api/datasets/qm9/model-audits/{audit.id}", timeout=60)
        listed = httpx.get(f"{server.url}/api/datasets/qm9/model-audits", timeout=60).json()
    assert rest.status_code == 200
    assert {k: v for k, v in rest.json().items() if v is not None} == audit.to_dict()
    assert {"id": audit.id, "verdicts": {"gap": "invariant"}}.items() <= next(
        a for a in listed if a["id"] == audit.id
    ).items()
    assert "invariant" in audit._repr_html_()


def _pose_linked(mols: MoleculeSet) -> np.ndarray:
    """A property tied to the stored pose (as a shortcut needs): the lab-x share of the spread plus composition."""
    rng = np.random.default_rng(7)
    carbons = np.bincount(mols.molecule_index, mols.atomic_numbers == 6, minlength=mols.n_molecules)
    return 3.0 * lab_x_share(mols) + 0.05 * carbons + rng.normal(0, 0.05, mols.n_molecules)


def test_unsaved_set_lab_frame_model_leans_and_saves(qm9_small, tmp_path):
    mols = qm9_small.subset(np.arange(200))
    props = pd.DataFrame({"pose_linked": _pose_linked(mols), "gap": mols.properties["gap"]})
    ds = orientscope.from_arrays(mols.atomic_numbers, mols.positions_angstrom, ids=mols.ids, smiles=mols.smiles,
                                 properties=props, offsets=mols.offsets, name="Linked", data_dir=tmp_path)  # fmt: skip
    lab = _fitted(lab_frame_features, mols, props["pose_linked"].to_numpy())
    audit = orientscope.audit_model(lab, ds, "pose_linked", copies=3, progress=False)
    assert audit.verdicts == {"pose_linked": "leans"}
    assert re.fullmatch(r"ran the pipeline stages on Linked first \((\d+\.\d) s\)", audit.note)
    assert f"({audit.seconds['stages']:.1f} s)" in audit.note and audit.seconds["stages"] > 0
    assert audit.note in audit._repr_html_()
    assert list(tmp_path.joinpath(UNSAVED).iterdir())  # computed in the private store, not in the data folder
    assert list_dataset_ids(tmp_path) == []
    with pytest.raises(ValueError, match="is not saved"):
        audit.save()
    ds.save("Pose linked")
    audit.save()
    assert ds.saved and list_dataset_ids(tmp_path) == ["pose-linked"]
    assert not list(tmp_path.joinpath(UNSAVED).iterdir())
    record = audit_store.read_audit(tmp_path, "pose-linked", audit.id)
    assert record["dataset"] == "pose-linked" and record["properties"][0]["verdict"]["code"] == "leans"
    from orientscope.services.datasets import READY, dataset_info

    assert dataset_info(tmp_path, "pose-linked").status == READY


@pytest.mark.parametrize(
    ("predict", "message"),
    [
        (lambda b: 1 / 0, "predict raised ZeroDivisionError on a 2-molecule check batch (stored poses, first id '1')"),
        (lambda b: np.zeros(len(b) + 1), "predict returned shape (3,) for a 2-molecule check batch"),
        (lambda b: np.full(len(b), np.nan), "predict returned nan for molecule '1', property 'gap' in a 2-molecule"),
        (lambda b: {"homo": np.zeros(len(b))}, "predict returned no ['gap'] for a 2-molecule check batch"),
        (lambda b: np.zeros(len(b)) if b.copy is None else 1 / 0, "on batch 0 (copy 0, first id '1')"),
    ],
)
def test_a_bad_predict_is_named_and_stores_nothing(data_dir, predict, message):
    before = audit_store.list_audit_ids(data_dir, "qm9")
    with pytest.raises(PredictError) as err:
        orientscope.audit_model(predict, orientscope.load("qm9", data_dir), "gap", copies=1, batch_size=50,
                                progress=False)  # fmt: skip
    assert message in str(err.value)
    assert audit_store.list_audit_ids(data_dir, "qm9") == before


def test_audit_options_are_checked(data_dir):
    ds = orientscope.load("qm9", data_dir)
    with pytest.raises(ValueError, match=r"unknown property \['colour'\]; the dataset's properties: \["):
        orientscope.audit_model(np.zeros, ds, ["colour"], progress=False)
    with pytest.raises(ValueError, match="copies must be between 1 and"):
        orientscope.audit_model(np.zeros, ds, "gap", copies=0, progress=False)
    with pytest.raises(TypeError, match=r"audit_model: unknown option\(s\) \['batchsize'\]; allowed: \["):
        orientscope.audit_model(np.zeros, ds, "gap", batchsize=10)
    with pytest.raises(TypeError, match="predict must be callable"):
        orientscope.audit_model("model", ds, "gap", progress=False)


def test_a_glob_is_a_sharded_set_whose_stages_run_on_a_local_cluster_and_save(qm9_small, tmp_path):
    from orientscope.loaders.npz import write_npz

    for k in range(2):
        write_npz(tmp_path / f"part{k}.npz", qm9_small.subset(np.arange(k * 100, (k + 1) * 100)))
    data_dir = tmp_path / "data"
    ds = orientscope.read(tmp_path / "part*.npz", name="Parts", shard_size=80, data_dir=data_dir, progress=False)
    assert not ds.saved and ds.n_molecules == 200 and list_dataset_ids(data_dir) == []
    r = orientscope.report(ds, seed=1, cluster="local:2", progress=False)
    assert r.to_dict()["engine"]["frames"] == {"where": "local:2", "workers": 2}
    r.save("Parts")
    assert list_dataset_ids(data_dir) == ["parts"] and not list((data_dir / UNSAVED).iterdir())
    cli = run("report", "parts", "--json", "--seed", "1", "--cluster", "in-process", "--data-dir", str(data_dir))
    assert r.to_dict() == json.loads(cli.stdout)
    # The audit streams the shards in batches (batch 2 spans shards 0 and 1): batch by batch, each batch's
    # stored poses then its copies, and predict sees what the science functions give on the whole set.
    mols = qm9_small.subset(np.arange(200))
    weights, *_ = np.linalg.lstsq(lab_frame_features(mols), mols.properties["gap"].to_numpy(), rcond=None)
    calls = []

    def model(batch):
        calls.append((len(batch), batch.copy))
        return lab_frame_features(_batch_set(batch)) @ weights

    audit = orientscope.audit_model(model, ds, "gap", copies=2, seed=4, batch_size=37, progress=False)
    # First a 2-molecule call that checks predict before anything runs.
    assert calls == [(2, None)] + [(37, None), (37, 0), (37, 1)] * 5 + [(15, None), (15, 0), (15, 1)]
    table = audit.predictions
    for k in range(2):
        rows = table[table["copy"] == k]
        assert list(rows["id"]) == list(mols.ids)
        np.testing.assert_allclose(rows["stored"], lab_frame_features(mols) @ weights, rtol=1e-12)
        turns = copy_rotations(id_counters(mols.ids), 4, k, "audit")
        turned = rotate_molecules(mols.positions_angstrom, mols.offsets, turns)
        expected = lab_frame_features(replace(mols, positions_angstrom=turned)) @ weights
        np.testing.assert_allclose(rows["rotated"], expected, rtol=1e-12)


def test_report_runs_on_a_dask_scheduler_and_gives_the_in_process_numbers(qm9_small, tmp_path):
    """`cluster="tcp://…"`: a real `dask scheduler` and worker on loopback run the stages of a sharded set."""
    from orientscope.loaders.npz import write_npz
    from tests.dask_cluster import DaskOnLoopback

    npz = tmp_path / "set.npz"
    write_npz(npz, qm9_small.subset(np.arange(150)))
    read = dict(name="Remote", shard_size=60, data_dir=tmp_path / "data", progress=False)
    local, remote = orientscope.read(npz, **read), orientscope.read(npz, **read)
    cluster = DaskOnLoopback(1, tmp_path)
    try:
        cluster.wait_for_workers(1)
        on_cluster = orientscope.report(remote, seed=5, cluster=cluster.address, progress=False).to_dict()
    finally:
        cluster.stop()
    in_process = orientscope.report(local, seed=5, cluster="in-process", progress=False).to_dict()
    assert on_cluster["engine"]["frames"] == {"where": cluster.address, "workers": 1}
    skip = {"engine", "stages"}
    assert {k: v for k, v in on_cluster.items() if k not in skip} == {
        k: v for k, v in in_process.items() if k not in skip
    }
    with pytest.raises(ValueError, match="unknown cluster 'dask'; expected"):
        orientscope.report(local, cluster="dask", progress=False)
