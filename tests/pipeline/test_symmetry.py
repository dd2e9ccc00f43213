"""Orientation by symmetry through the whole pipeline, on constructed molecules with known answers.

Ions, linear molecules (CO2, HCN, acetylene), symmetric tops (NH3, benzene, CH3Cl) and spherical tops
(CH4, SF6), each turned by a seeded Haar rotation, salted into a Haar-rotated set of asymmetric
molecules: the set and its control are ``not_detected``; an ions-only set is not called aligned; symmetric
tops whose axes all point along z are found by Bingham's test, with z as the preferred direction; and a
control forced to fail says so before the verdict on every surface.
"""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from orientscope.app.verdict import WARNINGS, headline_children
from orientscope.cli import app
from orientscope.science.axial import watson_kl
from orientscope.science.frames import compute_frames
from orientscope.science.rotations import random_rotations
from orientscope.science.so3_partial import kl_exact
from orientscope.services.report import build_report
from orientscope.store.results import ResultStore
from tests.app.components import component_text
from tests.constructed_stores import PARAMS, store_a_failing_control, store_constructed
from tests.molecules import ACETYLENE, CH3CL, CO2, HCN, METHANE, NH3, SF6, SODIUM_ION, asymmetric, benzene

SALT = {"ion": SODIUM_ION, "CO2": CO2, "HCN": HCN, "acetylene": ACETYLENE, "NH3": NH3, "benzene": benzene(),
        "CH3Cl": CH3CL, "CH4": METHANE, "SF6": SF6}  # fmt: skip
SALT_CLASS = {"ion": "none", "CH4": "none", "SF6": "none"}  # every other salt molecule has only an axis


def _turned(mols, seed: int):
    """Each molecule turned by its own seeded Haar rotation about its centroid."""
    rotations = random_rotations(len(mols), seed)
    return [(z, (pos - pos.mean(axis=0)) @ Q.T) for (z, pos), Q in zip(mols, rotations, strict=True)]


def _salted(n_asymmetric: int, copies: int, seed: int):
    mols = [asymmetric(1000 + i) for i in range(n_asymmetric)]
    names = [name for name in SALT for _ in range(copies)]
    mols += [SALT[name] for name in names]
    return _turned(mols, seed), names


@pytest.fixture(scope="module")
def salted(tmp_path_factory):
    """240 Haar-rotated asymmetric molecules and 90 Haar-rotated symmetric ones (27 %), in shards of 100."""
    data = tmp_path_factory.mktemp("salted")
    mols, names = _salted(240, 10, seed=11)
    return data, mols, names, store_constructed(data, "salted", mols, shard_size=100)


def test_a_haar_set_salted_with_symmetric_molecules_is_not_detected_and_its_control_is_clean(salted):
    _, _, names, report = salted
    n_none = sum(SALT_CLASS.get(n) == "none" for n in names)
    for figures in (report, report["control"]):
        classes = figures["orientation_classes"]
        assert (classes["full"], classes["axis"], classes["none"]) == (240, len(names) - n_none, n_none)
        assert classes["by_symmetry"] == {"single_atom": 10, "spherical_top": 20, "linear": 30, "oblate_top": 20,
                                          "prolate_top": 10}  # fmt: skip
        assert figures["verdict"]["code"] == "not_detected"
        assert [e["test"] for e in figures["verdict"]["evidence"]][-1] == "Bingham axial"
    assert report["control_check"]["passed"] is True and report["verdict"]["control_check"]["passed"] is True
    assert report["kl"]["n_used"] == report["so3_molecules"] == 240 and report["axial"]["n"] == 60
    assert (
        "30 with no orientation" in report["orientation_note"] and "60 with only an axis" in report["orientation_note"]
    )
    assert report["stages"]["models"]["settings"]["molecules_with_full_frames"] == 240


def test_the_statistics_read_exactly_the_full_frames(salted):
    """The science functions on the full frames alone are the oracle of the stage's KL and Bingham test."""
    data, mols, names, report = salted
    z = np.concatenate([m[0] for m in mols])
    offsets = np.concatenate([[0], np.cumsum([len(m[0]) for m in mols])])
    frames = compute_frames(np.vstack([m[1] for m in mols]), offsets, z)
    full = frames.orientation == "full"
    assert report["kl"]["value"] == pytest.approx(kl_exact(frames.quaternions[full].copy(), 5)["value"], rel=1e-12)
    axis = frames.defined_axis
    v = frames.rotations[axis > 0, axis[axis > 0] - 1]
    T = v.T @ v / len(v)
    np.testing.assert_allclose(report["axial"]["eigenvalues"], np.linalg.eigvalsh(T)[::-1], atol=1e-12)
    # Molecules without a full frame get no classifier score.
    scores = ResultStore(data, "salted", PARAMS).table("models", "scores").to_pandas()
    assert scores["classifier_score"].isna().to_numpy().tolist() == (~full).tolist()


def test_one_shard_four_or_a_dask_cluster_give_the_same_report(tmp_path, salted):
    _, mols, _, report = salted
    drop = {"engine", "stages", "dataset", "name", "result_key"}
    one = store_constructed(tmp_path / "one", "one", mols)
    assert {k: v for k, v in one.items() if k not in drop} == {k: v for k, v in report.items() if k not in drop}
    dask = store_constructed(tmp_path / "dask", "dask", mols, shard_size=100, cluster="local:2")
    assert dask["engine"]["statistics"] == {"where": "local:2", "workers": 2}
    assert {k: v for k, v in dask.items() if k not in drop} == {k: v for k, v in report.items() if k not in drop}


def test_an_ions_only_set_is_not_called_aligned(tmp_path):
    rng = np.random.default_rng(3)
    ions = [([int(z)], rng.normal(size=(1, 3))) for z in rng.choice([3, 11, 12, 17, 19, 20, 35], size=102)]
    report = store_constructed(tmp_path, "ions", ions)
    assert report["orientation_classes"] == {"none": 102, "axis": 0, "full": 0, "by_symmetry": {"single_atom": 102}}
    for figures in (report, report["control"]):
        assert figures["verdict"]["code"] == "too_few" and figures["verdict"]["aligned"] is None
        assert "102 have no orientation" in figures["verdict"]["text"]
        assert "kl" not in figures
    assert report["control_check"]["passed"] is None and report["control_check"]["text"] == ""
    assert "full frame, got 0" in report["skipped_stages"]["statistics.so3"]
    assert "with a full frame, got 0 of 102" in report["skipped_stages"]["models"]


def test_symmetric_tops_with_their_axes_along_z_are_found_by_the_axial_test(tmp_path):
    # Each top spun about z by a random angle and flipped end over end half of the time: only the axis is shared.
    rng = np.random.default_rng(8)
    tops = []
    for i in range(60):
        z, pos = (NH3, benzene(), CH3CL)[i % 3]
        a = rng.uniform(0, 2 * np.pi)
        spin = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
        flip = np.diag([1, -1, -1]) if rng.random() < 0.5 else np.eye(3)
        tops.append((z, (pos - pos.mean(axis=0)) @ (flip @ spin).T))
    report = store_constructed(tmp_path, "tops", tops + _turned([asymmetric(2000 + i) for i in range(40)], seed=4))
    axial = report["axial"]
    assert axial["n"] == 60 and axial["pvalue"] < 1e-30
    np.testing.assert_allclose(axial["preferred_direction"], [0, 0, 1], atol=1e-9)
    assert axial["eigenvalues"][0] == pytest.approx(1.0)
    bingham = {e["test"]: e for e in report["verdict"]["evidence"]}["Bingham axial"]
    assert bingham["p_holm"] < report["verdict"]["alpha"]
    assert "Bingham's S = " in report["verdict"]["text"]
    assert report["control"]["verdict"]["code"] == "not_detected" and report["control_check"]["passed"] is True
    # Every axis along z (T's eigenvalues 1, 0, 0): the axes' KL is the largest size, and with Bingham's test
    # the only one rejecting the verdict reads strong (under rule 5 it read "effect size uncertain").
    assert axial["size"]["value"] == pytest.approx(watson_kl(1.0)) and axial["size"]["shape"] == "bipolar"
    assert bingham["size"]["measure"] == "axial KL" and bingham["size"]["reading"] == "strong"
    assert [e["test"] for e in report["verdict"]["evidence"] if e["rejects"]] == ["Bingham axial"]
    assert (report["verdict"]["code"], report["verdict"]["badge"]) == ("aligned", "Aligned — strong effect")
    assert "The effect is strong: axial KL 8.90 [8.90, 8.90] lies above its bar of 0.20." in report["verdict"]["text"]
    control_size = {e["test"]: e for e in report["control"]["verdict"]["evidence"]}["Bingham axial"]["size"]
    assert control_size["ci95"][0] == 0.0  # the Haar-rotated tops: Bingham's p >= 0.05, the size reaches 0


def test_the_axial_size_is_served_and_printed_beside_bingham_s(tmp_path):
    """The API summary (real HTTP) and the CLI's evidence show the axes' KL and its interval beside S and p."""
    from orientscope.server import create_app
    from tests.api.conftest import ServerThread

    co2_along_z = (CO2[0], CO2[1][:, ::-1])  # CO2 lies along x, HCN along z: both along z, either end up
    tops = [(z, sign * (pos - pos.mean(axis=0))) for z, pos in (co2_along_z, HCN) * 15 for sign in (1, -1)]
    store_constructed(tmp_path, "rods", tops + _turned([asymmetric(3000 + i) for i in range(30)], seed=6))
    with ServerThread(create_app(tmp_path, dashboard=False)) as server:
        r = httpx.get(f"{server.url}/api/datasets/rods/summary", timeout=30)
    assert r.status_code == 200
    body = r.json()
    row = {e["test"]: e for e in body["verdict"]["evidence"]}["Bingham axial"]
    assert row["size"]["measure"] == "axial KL" and row["size"]["ci95"] == body["axial"]["size"]["ci95"]
    assert body["verdict"]["effect"] == "strong" and body["verdict"]["rule_version"] >= 6  # sized from rule 6
    result = CliRunner().invoke(app, ["report", "rods", "--seed", "5", "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    # The dashboard's headline: its evidence list shows the size beside S, its answer cites it.
    shown = component_text(headline_children(build_report(tmp_path, "rods", PARAMS)))
    assert "Bingham axial: S = " in shown and ", axial KL 8.90 [8.90, 8.90] (p " in shown
    assert "The effect is strong: axial KL 8.90 [8.90, 8.90] lies above its bar of 0.20." in shown
    size_row = next(line for line in result.output.splitlines() if line.startswith("axial: effect size"))
    assert "(bar 0.20)" in size_row and "| 8.90 [8.90, 8.90] (bipolar)" in size_row
    assert "S = " in result.output and "axial KL 8.90 [8.90, 8.90] lies above its bar of 0.20" in result.output


@pytest.fixture(scope="module")
def failed_control(tmp_path_factory):
    data = tmp_path_factory.mktemp("failed")
    return data, store_a_failing_control(data)


def test_a_control_forced_to_fail_is_loud_in_the_report(failed_control):
    _, report = failed_control
    assert report["control"]["verdict"]["code"] in ("aligned", "weakly_aligned")
    check = report["control_check"]
    assert check["passed"] is False and check["text"].startswith("Control check failed")
    assert "Likely cause: chance" in check["text"] and "another --seed" in check["text"]
    keys = list(report)
    assert keys.index("control_check") < keys.index("verdict")
    assert list(report["verdict"])[0] == "control_check"


def test_the_cli_and_the_dashboard_say_it_before_the_verdict(failed_control):
    data, report = failed_control
    result = CliRunner().invoke(app, ["report", "forced", "--seed", "5", "--data-dir", str(data)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    warning = next(i for i, line in enumerate(lines) if line.startswith("WARNING: Control check failed"))
    assert warning < next(i for i, line in enumerate(lines) if line.startswith("Verdict:"))
    children = headline_children(report)
    assert children[0].id == WARNINGS and children[0].children[0].children == report["control_check"]["text"]
    assert "verdict-line" in children[1].className


def test_the_api_serves_it_before_the_verdict(failed_control):
    from orientscope.server import create_app
    from tests.api.conftest import ServerThread

    data, report = failed_control
    with ServerThread(create_app(data, dashboard=False)) as server:
        r = httpx.get(f"{server.url}/api/datasets/forced/summary", timeout=30)
    assert r.status_code == 200
    body = r.json()
    assert body["control_check"] == report["control_check"] and body["control_check"]["passed"] is False
    assert r.text.index('"control_check"') < r.text.index('"verdict"')
    assert json.loads(r.text)["verdict"]["control_check"]["passed"] is False


def test_results_of_an_older_rule_say_so_and_a_rerun_updates_them(tmp_path):
    from orientscope.pipeline.stage import STAGE_RULES
    from orientscope.services.molecules import molecule_detail
    from orientscope.store.atomic import atomic_write_json, read_json

    mols, _ = _salted(40, 2, seed=6)
    store_constructed(tmp_path, "rules", mols)
    store = ResultStore(tmp_path, "rules", PARAMS)
    assert {s: store.stage_rule(s) for s in store.completed_stages()} == STAGE_RULES
    # As a result of the rule before symmetry: no rule recorded (rule 1) for frames and statistics.
    path = store.dir / "manifest.json"
    manifest = read_json(path)
    for stage in ("frames", "statistics"):
        del manifest["stages"][stage]["rule"]
    atomic_write_json(path, manifest)
    before = {s: read_json(path)["stages"][s]["completed_at"] for s in STAGE_RULES}
    old = build_report(tmp_path, "rules", PARAMS)
    assert set(old["older_rule"]["stages"]) == {"frames", "statistics"}
    assert "Computed under an older rule: frames (rule 1, now 2)" in old["older_rule"]["text"]
    result = CliRunner().invoke(app, ["report", "rules", "--seed", "5", "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    after = read_json(path)["stages"]
    assert {s: after[s]["completed_at"] != before[s] for s in STAGE_RULES} == {
        "frames": True, "statistics": True, "chemistry": False, "models": False
    }  # fmt: skip
    assert "older_rule" not in build_report(tmp_path, "rules", PARAMS) and "older rule" not in result.output
    ion = molecule_detail(tmp_path, "rules", "41")  # the first salt molecule: a single ion
    assert ion["orientation"] == {"class": "none", "defined_axis": None, "symmetry": "single_atom"}


def test_a_group_pose_is_made_of_its_members_with_a_full_frame_only(tmp_path):
    """Copies of one symmetric molecule in one pose (the CCD's ideal sulfates SO4 and SUL) read as one shared
    pose (spread 0.005°, concentration 1.0) when their arbitrary frames counted. A group's mean, spread,
    concentration and typical member come from its members with a full frame; the others count in its size."""
    from orientscope.science.group_stats import group_orientation_stats
    from orientscope.services.groups import list_groups

    rng = np.random.default_rng(3)
    # CH4 of two kinds: 6 tetrahedral methanes in one pose (no orientation) and 6 distorted ones, Haar-turned.
    distorted = [(METHANE[0], METHANE[1] + rng.normal(0, 0.08, METHANE[1].shape)) for _ in range(6)]
    turned = _turned(distorted, seed=21)
    mols = _turned([asymmetric(2000 + i) for i in range(40)], seed=20) + [METHANE] * 6 + turned + [CO2] * 5
    report = store_constructed(tmp_path, "posed", mols)
    groups = {g["label"]: g for g in list_groups(tmp_path, "posed", "formula")["groups"]}
    co2, ch4 = groups["CO2"], groups["CH4"]
    assert co2["size"] == 5
    assert all(co2["statistics"].get(k) is None for k in ("spread_deg", "concentration", "typical_id", "qw"))
    assert co2["statistics"]["n_posed"] == 0
    z = np.concatenate([m[0] for m in turned])
    offsets = np.concatenate([[0], np.cumsum([len(m[0]) for m in turned])])
    frames = compute_frames(np.vstack([m[1] for m in turned]), offsets, z)
    assert (frames.orientation == "full").all()
    oracle = group_orientation_stats(np.zeros(6, int), frames.quaternions, frames.rotations).iloc[0]
    stats = ch4["statistics"]
    assert stats["concentration"] == pytest.approx(oracle.concentration, abs=1e-9) and stats["concentration"] < 0.9
    assert ch4["size"] == 12 and stats["n_posed"] == 6
    assert abs(stats["spread_deg"] - oracle.spread_deg) <= 0.005 + 1e-9 and stats["spread_deg"] > 20
    assert stats["typical_id"] in {str(i) for i in range(47, 53)}  # a distorted methane (ids count from 1)
    largest = {g["label"]: g for g in report["groups"]["formula"]["largest"]}
    assert largest["CO2"]["n_posed"] == 0 and largest["CO2"]["concentration"] is None
    assert largest["CH4"]["concentration"] == pytest.approx(oracle.concentration, abs=1e-9)
    json.dumps(report, allow_nan=False)  # no NaN reaches the report


@pytest.mark.parametrize("skipped_in_tree", [4096, 0])
def test_pose_neighbours_are_the_nearest_full_frames_and_a_molecule_without_one_has_none(
    salted, monkeypatch, skipped_in_tree
):
    """Every ion's stored frame is the identity: ions were each other's pose neighbours at 0°. Checked against
    every pair's angle, with the tree over every row (skipping the others) and over the full frames only."""
    from orientscope.science.rotations import quaternion_angle
    from orientscope.services import neighbors as nb
    from orientscope.services.cache import clear_cache

    data, mols, names, _ = salted
    monkeypatch.setattr(nb, "SKIPPED_IN_TREE_MAX", skipped_in_tree, raising=False)
    clear_cache()
    z = np.concatenate([m[0] for m in mols])
    offsets = np.concatenate([[0], np.cumsum([len(m[0]) for m in mols])])
    frames = compute_frames(np.vstack([m[1] for m in mols]), offsets, z)
    full = np.flatnonzero(frames.orientation == "full")
    ids = [str(i + 1) for i in range(len(mols))]
    ion = ids[240 + names.index("ion")]
    assert nb.neighbors(data, "salted", ion, "pose", 5)["items"] == []
    for i in (0, 17, 239):
        got = nb.neighbors(data, "salted", ids[i], "pose", 6)["items"]
        others = full[full != i]
        angles = np.degrees(quaternion_angle(frames.quaternions[others], frames.quaternions[i]))
        order = np.argsort(angles, kind="stable")[:6]
        assert [g["id"] for g in got] == [ids[j] for j in others[order]]
        np.testing.assert_allclose([g["angle_deg"] for g in got], angles[order], atol=1e-6)
    clear_cache()
