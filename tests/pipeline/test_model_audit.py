"""The model audit end to end on constructed models over the small real-QM9 store.

QM9's real properties give a linear lab-frame model little to exploit on 400
molecules (its reliance stays within a few per cent), so the "leans" case uses
a property defined from the stored pose (the lab-x share of the spread plus
composition, with noise), given in the predictions' ``true`` column: a dataset
with a strong pose–property link, as a shortcut needs.
"""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from orientscope.core.errors import DatasetError
from orientscope.pipeline.model_audit import run_audit, shifted_id_warnings
from orientscope.science.model_audit import AuditSettings
from orientscope.store import audits as store
from orientscope.store.datasets import load_dataset
from tests.audit_models import (
    exported_copies,
    invariant_features,
    lab_frame_features,
    lab_x_share,
    predictions_frame,
)

FAST = AuditSettings(n_bootstrap=400, n_permutations=20_000)


@pytest.fixture(scope="module")
def data_dir(qm9_store, tmp_path_factory):
    target = tmp_path_factory.mktemp("audit") / "data"
    shutil.copytree(qm9_store / "datasets", target / "datasets")
    return target


@pytest.fixture(scope="module")
def stored(data_dir):
    return load_dataset(data_dir, "qm9")


@pytest.fixture(scope="module")
def copies(data_dir, tmp_path_factory):
    return exported_copies(data_dir, "qm9", tmp_path_factory.mktemp("copies"), copies=5)


def _files(data_dir) -> dict:
    return {p.relative_to(data_dir): p.stat().st_mtime_ns for p in data_dir.rglob("*") if p.is_file()}


def _pose_linked(stored) -> np.ndarray:
    rng = np.random.default_rng(7)
    carbons = (stored.atomic_numbers == 6).astype(float)
    n_carbon = np.bincount(stored.molecule_index, carbons, minlength=stored.n_molecules)
    return 3.0 * lab_x_share(stored) + 0.05 * n_carbon + rng.normal(0, 0.05, stored.n_molecules)


def test_invariant_model_is_invariant(data_dir, stored, copies, tmp_path):
    frames = [
        predictions_frame(stored, copies, invariant_features, stored.properties[p].to_numpy(), p) for p in ("gap", "r2")
    ]
    path = tmp_path / "invariant.csv"
    pd.concat(frames).to_csv(path, index=False, float_format="%.17g")
    record = run_audit(data_dir, "qm9", path, "invariant model", settings=FAST)
    by_prop = {p["property"]: p for p in record["properties"]}
    assert set(by_prop) == {"gap", "r2"}
    for entry in by_prop.values():
        assert entry["verdict"]["code"] == "invariant", entry["verdict"]
        assert entry["n"] == stored.n_molecules and entry["n_copies_max"] == 5
    assert record["n_unknown_ids"] == 0
    assert len(record["input"]["sha256"]) == 64 and record["seed"] == 0 and record["n_bootstrap"] == 400
    table = store.read_audit_molecules(data_dir, "qm9", record["id"]).to_pandas()
    assert len(table) == 2 * stored.n_molecules and (table["n_copies"] == 5).all()


def test_lab_frame_model_leans(data_dir, stored, copies, tmp_path):
    y = _pose_linked(stored)
    path = tmp_path / "lab.parquet"
    predictions_frame(stored, copies, lab_frame_features, y, "pose_linked", with_true=True).to_parquet(path)
    record = run_audit(data_dir, "qm9", path, "lab-frame model", settings=FAST)
    (entry,) = record["properties"]
    assert entry["verdict"]["code"] == "leans", entry["verdict"]
    assert entry["reliance"] > 0.1 and entry["ci95"]["reliance"][0] > 0.1
    assert entry["pvalue"] < 1e-3 and entry["pvalue_holm"] < 1e-3
    assert entry["verdict"]["text"].startswith("Leans on the pose: the reliance CI lies above the +1.0 % margin")
    # The rotation shift: per molecule in molecules.parquet (RMS and largest over copies), summarised with CIs.
    table = store.read_audit_molecules(data_dir, "qm9", record["id"]).to_pandas()
    assert (table["shift_max"] >= table["shift"] - 1e-15).all() and (table["shift"] > 0).all()
    assert entry["shift_median"] == pytest.approx(np.median(table["shift"]))
    lo, hi = entry["shift_p95_ci95"]
    assert lo <= entry["shift_p95"] <= hi and entry["shift_max"] == pytest.approx(table["shift_max"].max())
    assert record["audit_rule_version"] == 3 and record["decision"] == {"margin": 0.01, "max_shift": None}
    # Scores of the dataset's classifier are read beside the shift.
    assert entry["shift_vs_score"]["n"] == stored.n_molecules - 2  # methane and the oblate top have no score
    assert len(entry["reliance_by_decile"]) == 10


def test_repeating_stored_over_copies_does_not_shrink_the_pvalue(data_dir, stored, copies, tmp_path):
    y = stored.properties["r2"].to_numpy()
    one = predictions_frame(stored, copies[:1], lab_frame_features, y, "r2")
    five = pd.concat([one.assign(copy=k) for k in range(5)], ignore_index=True)
    p = {}
    for k, frame in (("k1", one), ("k5", five)):
        path = tmp_path / f"{k}.csv"
        frame.to_csv(path, index=False, float_format="%.17g")
        (entry,) = run_audit(data_dir, "qm9", path, k, settings=FAST)["properties"]
        p[k] = (entry["pvalue"], entry["n"], entry["ci95"]["reliance"])
    # Same molecules, same unit, same answer (the bootstrap only up to the rounding of a mean of 5 equal values).
    assert p["k1"][:2] == p["k5"][:2] and p["k1"][1] == stored.n_molecules
    np.testing.assert_allclose(p["k1"][2], p["k5"][2], rtol=1e-12)


def test_frame_dependent_property_says_so(data_dir, stored, copies, tmp_path):
    frame = predictions_frame(
        stored, copies[:2], lab_frame_features, stored.properties["alpha_xx"].to_numpy(), "alpha_xx"
    )
    path = tmp_path / "axx.csv"
    frame.to_csv(path, index=False)
    (entry,) = run_audit(data_dir, "qm9", path, "tensor", settings=FAST)["properties"]
    assert entry["verdict"]["code"] == "frame_dependent"


def test_ids_shifted_by_one_are_reported(data_dir, stored, copies, tmp_path):
    frame = predictions_frame(stored, copies[:1], invariant_features, stored.properties["gap"].to_numpy(), "gap")
    frame["id"] = (frame["id"].astype(int) - 1).astype(str)  # numbered from 0 instead of 1
    path = tmp_path / "shifted.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(DatasetError, match=r"none of the 400 ids.*match a dataset id when shifted by \+1"):
        run_audit(data_dir, "qm9", path, "shifted", settings=FAST)


def test_shifted_id_warnings_on_contiguous_ids():
    ids = pd.Index([str(i) for i in range(1, 101)])
    assert "shifted by +1" in shifted_id_warnings(np.array(["0"]), ids)[0]
    assert shifted_id_warnings(np.array(["x1", "7"]), ids) == []  # not all integers
    assert shifted_id_warnings(np.array(["500", "600"]), ids) == []


def test_splits_get_their_own_figures(data_dir, stored, copies, tmp_path):
    frame = predictions_frame(stored, copies[:2], invariant_features, stored.properties["gap"].to_numpy(), "gap")
    frame["split"] = np.where(frame["id"].astype(int) % 2 == 0, "train", "test")
    path = tmp_path / "split.csv"
    frame.to_csv(path, index=False)
    record = run_audit(data_dir, "qm9", path, "split", settings=FAST)
    splits = {e["split"]: e["n"] for e in record["properties"]}
    assert splits[None] == stored.n_molecules and splits["train"] + splits["test"] == stored.n_molecules
    (everything,) = [e for e in record["properties"] if e["split"] is None]
    assert everything["n_train"] == splits["train"]


def test_ids_audit_only_those_molecules(data_dir, stored, copies, tmp_path):
    y = _pose_linked(stored)
    frame = predictions_frame(stored, copies[:2], lab_frame_features, y, "pose_linked", with_true=True)
    path = tmp_path / "lab.csv"
    frame.to_csv(path, index=False, float_format="%.17g")
    held_out = list(stored.ids[::4])
    record = run_audit(data_dir, "qm9", path, "held out", settings=FAST, ids=held_out)
    (entry,) = record["properties"]
    assert entry["n"] == len(held_out) == record["n_molecules"] and record["ids"]["n_ids"] == len(held_out)
    table = store.read_audit_molecules(data_dir, "qm9", record["id"]).to_pandas()
    assert sorted(table["id"]) == sorted(held_out)
    with pytest.raises(DatasetError, match=r"1 of the 2 ids to audit are not molecules of dataset 'qm9'"):
        run_audit(data_dir, "qm9", path, "bad", settings=FAST, ids=[held_out[0], "nosuch"])
    assert record["ids"]["n_ids_without_predictions"] == 0 and not any("no prediction" in w for w in record["warnings"])
    # Ids given whose rows the file lacks: audited without them, and said so where a script reads (warnings).
    frame[~frame["id"].isin(held_out[:3])].to_csv(path, index=False, float_format="%.17g")
    record = run_audit(data_dir, "qm9", path, "three lack rows", settings=FAST, ids=held_out)
    assert record["n_molecules"] == len(held_out) - 3 and record["ids"]["n_ids_without_predictions"] == 3
    assert record["warnings"][0] == (
        f"3 of the {len(held_out)} ids to audit have no prediction in the file and are not audited (e.g. "
        f"{[str(i) for i in held_out[:3]]}); the figures are of the other {len(held_out) - 3}"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("id,property,stored\n1,gap,0.1\n", r"lack the column\(s\) \['rotated'\]"),
        ("id,property,stored,rotated\n1,gap,0.1,nan\n", "'rotated' is NaN"),
        ("id,property,stored,rotated\n1,gap,0.1,0.2\n1,gap,0.3,0.2\n", "'stored' differs"),
        ("id,property,stored,rotated\n1,nosuch,0.1,0.2\n", "unknown property 'nosuch'"),
        ("\x00\x01junk\xff\xfe" * 40, "cannot read the predictions"),
        ("PK\x03\x04 a zip, not a table\n" * 20, "lack the column"),
    ],
)
def test_bad_predictions_fail_clearly_and_touch_nothing(data_dir, tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_bytes(content.encode("latin-1"))
    before = _files(data_dir)
    with pytest.raises(DatasetError, match=message):
        run_audit(data_dir, "qm9", path, "bad", settings=FAST)
    assert _files(data_dir) == before


def test_deleting_an_audit_leaves_the_others(data_dir, stored, copies, tmp_path):
    frame = predictions_frame(stored, copies[:1], invariant_features, stored.properties["gap"].to_numpy(), "gap")
    path = tmp_path / "p.csv"
    frame.to_csv(path, index=False)
    a = run_audit(data_dir, "qm9", path, "a", settings=FAST)["id"]
    b = run_audit(data_dir, "qm9", path, "b", settings=FAST)["id"]
    store.delete_audit(data_dir, "qm9", a)
    assert b in store.list_audit_ids(data_dir, "qm9") and a not in store.list_audit_ids(data_dir, "qm9")
