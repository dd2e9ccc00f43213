"""The fix loop in Python on the 400-molecule QM9 store: subset views, rotated copies keyed by identity,
the canonical frame with its noise snapped, featurize=, the gate, the comparison and the sweep."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import orientscope
from orientscope.core.dataset import MoleculeSet
from orientscope.core.errors import DatasetError
from orientscope.notebook.audit import PredictError
from orientscope.pipeline.export import export_dataset, rotate_properties
from orientscope.science.copy_rotations import copy_rotations
from orientscope.science.counter_rng import haar_rotations, id_counters
from orientscope.science.rotations import rotate_molecules
from orientscope.services.canonicalize import canonicalize as api_canonicalize
from orientscope.store.datasets import dataset_dir, load_dataset
from tests.audit_models import invariant_features, lab_frame_features, lab_x_share


@pytest.fixture(scope="module")
def data_dir(qm9_store, tmp_path_factory):
    target = tmp_path_factory.mktemp("fix-loop") / "data"
    shutil.copytree(qm9_store / "datasets", target / "datasets")
    return target


@pytest.fixture(scope="module")
def ds(data_dir):
    return orientscope.load("qm9", data_dir)


def _files(folder) -> dict:
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def _set(batch) -> MoleculeSet:
    return MoleculeSet(batch.numbers, batch.positions, batch.offsets, batch.ids)


# ------------------------------------------------------------------ subset views
def test_a_subset_is_a_view_that_recomputes_nothing(ds, data_dir):
    before = _files(dataset_dir(data_dir, "qm9"))
    ids = ds.ids[[300, 7, 42]]
    view = ds.subset(ids)
    assert (
        view.is_subset and view.n_molecules == len(view) == 3 and list(view.ids) == list(ds.ids[[7, 42, 300]])
    )  # set order
    assert len(ds) == ds.n_molecules > 300
    whole = load_dataset(data_dir, "qm9")
    sub = view.molecules()
    np.testing.assert_array_equal(sub.positions_angstrom, whole.subset([7, 42, 300]).positions_angstrom)
    assert [rows.tolist() for _, rows in view.row_parts()] == [[7, 42, 300]]
    assert view.location() == ds.location() and view.properties == ds.properties and view.saved
    assert view.ensure_computed(progress=False) == 0.0  # the whole set's results serve it
    assert list(view.subset(ids[:2]).ids) == list(ds.ids[[7, 300]])  # a view of a view
    with pytest.raises(ValueError, match="subset view of 'qm9' with no results of its own"):
        orientscope.report(view, progress=False)
    with pytest.raises(ValueError, match="save\\(\\) takes a whole set"):
        view.save("x")
    with pytest.raises(DatasetError, match=r"1 of the 2 ids are not molecules of dataset 'qm9', e.g. \['nosuch'\]"):
        ds.subset([ids[0], "nosuch"])
    with pytest.raises(DatasetError, match="given more than once"):
        ds.subset([ids[0], ids[0]])
    # A molecule of the whole set outside the view is named as outside the view, not as unknown to 'qm9'.
    outside = r"1 of the 1 ids are not molecules of the subset view 'QM9 \[3 of 400\]', e\.g\. \['" + ds.ids[0]
    with pytest.raises(DatasetError, match=outside):
        view.subset([ds.ids[0]])
    with pytest.raises(DatasetError, match=outside):
        orientscope.rotated_copies(view, 1, ids=[ds.ids[0]])
    assert _files(dataset_dir(data_dir, "qm9")) == before


# ------------------------------------------------------------------ rotated copies
def test_rotated_copies_of_a_subset_are_those_of_the_whole_set_and_rotate_tensors_as_export(ds, data_dir, tmp_path):
    ids = ds.ids[::7]
    whole = {(k, i): (b, j) for b in orientscope.rotated_copies(ds, 3, seed=2, batch_size=64)
             for k in [b.copy] for j, i in enumerate(b.ids)}  # fmt: skip
    part = list(orientscope.rotated_copies(ds, 3, seed=2, ids=ids[::-1], batch_size=5))
    assert sum(len(b) for b in part) == 3 * len(ids) == len(orientscope.rotated_copies(ds, 3, ids=ids))
    for batch in part:
        for j, i in enumerate(batch.ids):
            other, jj = whole[(batch.copy, i)]
            a = batch.positions[batch.offsets[j] : batch.offsets[j + 1]]
            b = other.positions[other.offsets[jj] : other.offsets[jj + 1]]
            np.testing.assert_array_equal(a, b)
            pd.testing.assert_series_equal(batch.properties.iloc[j], other.properties.iloc[jj], check_names=False)
    # The same poses and labels as `export --copies 3 --purpose augment --seed 2`, tensors rotated R A Rᵀ.
    info = export_dataset(data_dir, "qm9", "random", tmp_path / "c.npz", seed=2, fmt="npz", copies=3, ids=ids)
    exported = orientscope.read(info["paths"][1], progress=False).molecules()
    (copy1,) = [b for b in orientscope.rotated_copies(ds, 3, seed=2, ids=ids, batch_size=10_000) if b.copy == 1]
    np.testing.assert_allclose(copy1.positions, exported.positions_angstrom, atol=1e-12)
    for column in ("alpha_xx", "alpha_xy", "alpha_zz", "gap"):
        np.testing.assert_allclose(copy1.properties[column], exported.properties[column], rtol=1e-12)
    stored = load_dataset(data_dir, "qm9").subset(np.flatnonzero(np.isin(ds.ids, ids)))
    turns = copy_rotations(id_counters(ids), 2, 1, "augment")
    expected = rotate_properties(stored.properties, turns)
    np.testing.assert_allclose(copy1.properties["alpha_xy"], expected["alpha_xy"])
    assert not np.allclose(copy1.properties["alpha_xy"], stored.properties["alpha_xy"])


def test_the_audit_and_augment_streams_never_share_a_pose(ds):
    audit = copy_rotations(id_counters(ds.ids), 0, 0, "audit")
    for k in range(16):  # 16 training copies at the default seed against the audit's first copy
        augment = haar_rotations(0, f"augment:copy{k}", id_counters(ds.ids))
        cos = (np.einsum("nij,nij->n", audit, augment) - 1) / 2
        assert cos.max() < np.cos(np.radians(0.5))
    stored = list(orientscope.rotated_copies(ds, 0, batch_size=1000))
    assert [b.copy for b in stored] == [None] and len(stored[0]) == ds.n_molecules
    with pytest.raises(ValueError, match="unknown rotation purpose 'test'"):
        orientscope.rotated_copies(ds, 2, purpose="test")
    with pytest.raises(ValueError, match="n_copies must be between 0 and 100"):
        orientscope.rotated_copies(ds, 101)


def test_a_memoriser_of_the_default_training_copies_still_leans(ds):
    """A lookup table of every pose it was trained on (the stored poses and 4 copies at the default settings):
    exact on those, the mean elsewhere. Audited at the default settings, it leans, because the audit's copies
    are other poses; had it memorised the audit's own copies, the audit would see no increase."""
    mean = float(np.mean(load_dataset(ds.data_dir, "qm9").properties["gap"]))

    def memorise(poses_list):
        table = {}
        for poses in poses_list:
            for b in poses:
                for j in range(len(b)):
                    table[b.positions[b.offsets[j] : b.offsets[j + 1]].round(9).tobytes()] = b.properties["gap"][j]
        return lambda b: np.array([table.get(b.positions[b.offsets[j] : b.offsets[j + 1]].round(9).tobytes(), mean)
                                   for j in range(len(b))])  # fmt: skip

    trained = memorise([orientscope.rotated_copies(ds, 0), orientscope.rotated_copies(ds, 4)])
    audit = orientscope.audit_model(trained, ds, "gap", copies=4, progress=False)
    assert audit.verdicts == {"gap": "leans"}
    assert "unseen inputs" in audit.properties["text"][0]
    cheat = memorise([orientscope.rotated_copies(ds, 0), orientscope.rotated_copies(ds, 4, purpose="audit")])
    assert orientscope.audit_model(cheat, ds, "gap", copies=4, progress=False).verdicts == {"gap": "invariant"}


# ------------------------------------------------------------------ canonical frame
def test_canonicalize_is_the_api_frame_with_its_noise_snapped_and_flags_what_it_cannot_promise(qm9_small):
    mols = qm9_small
    first = orientscope.canonicalize(*mols.atoms_of(0))
    api = api_canonicalize(mols.atoms_of(0)[0].tolist(), mols.atoms_of(0)[1].tolist())
    np.testing.assert_allclose(first.rotations, api["rotation"], atol=1e-12)
    np.testing.assert_allclose(first.centroids, api["centroid"], atol=1e-12)
    np.testing.assert_allclose(first.positions, api["canonical_positions"], atol=first.snap / 2)
    base = orientscope.canonicalize(mols.atomic_numbers, mols.positions_angstrom, mols.offsets)
    assert base.flagged.mean() < 0.1 and all(r for r in base.reasons[base.flagged])
    owner = mols.molecule_index
    for k in range(5):
        turned = rotate_molecules(mols.positions_angstrom, mols.offsets, haar_rotations(k, "canon", np.arange(400)))
        moved = orientscope.canonicalize(mols.atomic_numbers, turned + 3.0 * k, mols.offsets)
        same = (moved.positions == base.positions).all(axis=1)
        ok = ~base.flagged[owner]
        assert same[ok].all()  # bit for bit, for every unflagged molecule
    assert np.all(np.abs(base.positions / base.snap - np.round(base.positions / base.snap)) < 1e-6)


@pytest.mark.parametrize(
    ("numbers", "positions", "reason"),
    [
        ([8, 1, 1], [[0, 0, 0.1173], [0, 0.7572, -0.4692], [0, -0.7572, -0.4692]], "sign_tie_1"),  # water
        ([6, 8, 8], [[0, 0, 0], [0, 0, 1.16], [0, 0, -1.16]], "linear"),  # CO2
        (
            [6, 1, 1, 1, 1],
            [
                [0, 0, 0],
                [0.629, 0.629, 0.629],
                [-0.629, -0.629, 0.629],
                [-0.629, 0.629, -0.629],
                [0.629, -0.629, -0.629],
            ],
            "eigen_gap",
        ),  # methane  # fmt: skip
        ([11], [[1.0, 2.0, 3.0]], "single_atom"),  # a sodium ion
    ],
)
def test_ill_defined_frames_are_flagged_with_their_reason(numbers, positions, reason):
    c = orientscope.canonicalize(numbers, positions)
    assert c.flagged and reason in c.reasons and c.rotations.shape == (3, 3) and c.centroids.shape == (3,)


def test_a_coordinate_at_a_rounding_boundary_is_flagged():
    # A molecule in its own canonical frame (centroid 0, diagonal covariance) whose y = ±0.300005 Å lies half a
    # grid step (1e-5 Å) from two grid points: float noise decides its rounding.
    c = orientscope.canonicalize([6, 8, 8], [[1.0, 0, 0], [-0.5, 0.300005, 0], [-0.5, -0.300005, 0]])
    assert c.flagged and "rounding_boundary" in c.reasons.split(";")
    np.testing.assert_array_equal(np.abs(c.rotations), np.eye(3))
    plain = orientscope.canonicalize([6, 8, 8], [[1.0, 0, 0], [-0.5, 0.300002, 0], [-0.5, -0.300002, 0]])
    assert "rounding_boundary" not in plain.reasons
    with pytest.raises(ValueError, match="unknown frame method 'pcb'"):
        orientscope.canonicalize([6], [[0, 0, 0]], frame="pcb")
    with pytest.raises(ValueError, match=r"positions must have shape \(n_atoms, 3\) = \(2, 3\)"):
        orientscope.canonicalize([6, 8], [[0, 0, 0]])


# ------------------------------------------------------------------ featurize, the check, warnings
def test_a_scikit_learn_predict_works_through_featurize_and_a_wrong_signature_fails_first(ds, data_dir):
    from sklearn.linear_model import LinearRegression

    mols = load_dataset(data_dir, "qm9")
    model = LinearRegression().fit(invariant_features(mols), mols.properties["gap"])

    def features(batch):
        return invariant_features(_set(batch))

    held_out = ds.ids[::2]
    audit = orientscope.audit_model(model.predict, ds, "gap", copies=2, ids=held_out, featurize=features,
                                    progress=False)  # fmt: skip
    assert audit.verdicts == {"gap": "invariant"} and audit.to_dict()["n_molecules"] == len(held_out)
    assert audit.to_dict()["input"]["featurize"].endswith("features")
    with pytest.raises(PredictError, match=r"on a 2-molecule check batch .* needs featurize=") as err:
        orientscope.audit_model(model.predict, orientscope.load("qm9", data_dir), "gap", progress=False)
    assert "stages" not in str(err.value)


def test_progress_false_silences_the_stage_warnings_and_keeps_them(qm9_small, tmp_path, caplog):
    """The chemistry stage warns about molecules without a graph (here a methyl radical: no bond orders fit charge
    0); with progress=False no warning reaches the handlers (nothing is printed) and every one is in the audit's
    warnings."""
    qm9 = qm9_small.subset(np.arange(119))
    angles = np.deg2rad([0.0, 120.0, 240.0])
    methyl = np.vstack([[0.0, 0.0, 0.0], np.column_stack([1.08 * np.cos(angles), 1.08 * np.sin(angles), [0.0] * 3])])
    mols = SimpleNamespace(
        atomic_numbers=np.concatenate([qm9.atomic_numbers, [6, 1, 1, 1]]),
        positions_angstrom=np.vstack([qm9.positions_angstrom, methyl]),
        ids=[*qm9.ids, "methyl"],
        offsets=np.append(qm9.offsets, qm9.offsets[-1] + 4),
        properties={"gap": np.append(qm9.properties["gap"], 0.3)},
    )

    def noisy(batch):
        logging.getLogger("orientscope.pipeline").warning("warned while the audit ran")
        return np.zeros(len(batch))

    for progress in (True, False):
        ds = orientscope.from_arrays(
            mols.atomic_numbers,
            mols.positions_angstrom,
            ids=mols.ids,
            offsets=mols.offsets,
            properties={"gap": mols.properties["gap"]},
            data_dir=tmp_path / str(progress),
        )
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            audit = orientscope.audit_model(noisy, ds, "gap", copies=1, progress=progress)
        shown = [r.getMessage() for r in caplog.records if r.name.startswith("orientscope")]
        assert any("no molecular graph" in w for w in audit.warnings) and "warned while the audit ran" in audit.warnings
        assert bool(shown) is progress, shown


# ------------------------------------------------------------------ gate, comparison, sweep
def _pose_linked(mols: MoleculeSet) -> np.ndarray:
    return 3.0 * lab_x_share(mols) + np.random.default_rng(7).normal(0, 0.05, mols.n_molecules)


def test_molecules_without_a_true_value_are_named_where_the_header_counts_them(qm9_small, tmp_path):
    """A partly labelled set: the audit's header counts every molecule it was given; its figures, and a
    warning, say which ones had no value to score against."""
    mols = qm9_small.subset(np.arange(120))
    y = _pose_linked(mols)
    y[[3, 50, 51]] = np.nan
    ds = orientscope.from_arrays(mols.atomic_numbers, mols.positions_angstrom, ids=mols.ids, offsets=mols.offsets,
                                 properties={"pose_linked": y}, data_dir=tmp_path)  # fmt: skip
    audit = orientscope.audit_model(lambda b: np.zeros(len(b.ids)), ds, "pose_linked", progress=False)
    record = audit.to_dict()
    (entry,) = record["properties"]
    assert record["n_molecules"] == 120 and entry["n"] == 117
    missing = [str(mols.ids[i]) for i in (3, 50, 51)]
    assert (
        f"pose_linked: 3 molecule(s) have no true value (the dataset's is missing and the file gives none) and "
        f"are left out of its figures, e.g. {missing}"
    ) in audit.warnings


def test_compare_audits_says_why_it_cannot_compare(ds):
    audit = orientscope.audit_model(lambda b: np.zeros(len(b.ids)), ds, "gap", ids=ds.ids[:30], copies=2,
                                    progress=False)  # fmt: skip
    assert list(orientscope.compare_audits(audit).table["tier"]) == ["invariant"]  # one audit, not in a list
    # A failed job's record, as GET …/model-audits/{id} serves it.
    failed = {"id": "a0", "state": "failed", "message": "p.csv, line 7: 'rotated' is NaN", "properties": None}
    with pytest.raises(ValueError, match=r"audit 'a0' is 'failed', not done, .*: p\.csv, line 7: 'rotated' is NaN"):
        orientscope.compare_audits([audit, failed])
    with pytest.raises(ValueError, match="no audit has a 'test' split"):  # no split column, no train_ids
        orientscope.compare_audits([audit], split="test")


def test_the_gate_raises_with_the_table_and_the_comparison_needs_no_dash(qm9_small, tmp_path):
    mols = qm9_small
    y = _pose_linked(mols)
    ds = orientscope.from_arrays(mols.atomic_numbers, mols.positions_angstrom, ids=mols.ids, offsets=mols.offsets,
                                 properties={"pose_linked": y}, data_dir=tmp_path)  # fmt: skip
    lab_w, *_ = np.linalg.lstsq(lab_frame_features(mols), y, rcond=None)
    inv_w, *_ = np.linalg.lstsq(invariant_features(mols), y, rcond=None)
    held_out = ds.ids[1::2]
    with pytest.raises(AssertionError) as err:
        orientscope.assert_pose_robust(lambda b: lab_frame_features(_set(b)) @ lab_w, ds, "pose_linked", ids=held_out)
    message = str(err.value)
    assert message.startswith("pose audit failed (--fail-on not-robust): {'pose_linked': 'leans'}")
    assert "rotation shift median" in message and "pose_linked: Leans on the pose" in message
    invariant = orientscope.assert_pose_robust(
        lambda b: invariant_features(_set(b)) @ inv_w, ds, "pose_linked", ids=held_out, max_shift=1e-9
    )
    assert invariant.verdicts == {"pose_linked": "invariant"}
    lab = orientscope.audit_model(lambda b: lab_frame_features(_set(b)) @ lab_w, ds, "pose_linked", ids=held_out,
                                  name="lab", progress=False)  # fmt: skip
    both = orientscope.compare_audits([lab, invariant], labels=["lab frame", "invariant"])
    assert list(both.table["audit"]) == ["lab frame", "invariant"] and list(both.table["tier"]) == [
        "leans",
        "invariant",
    ]
    assert both.table["shift_p95"].iloc[0] > 0.01 and both.table["shift_p95"].iloc[1] < 1e-12
    lo, mid, hi = (both.table[f"reliance{k}_percent"].iloc[0] for k in ("_ci_low", "", "_ci_high"))
    assert lo <= mid <= hi and mid == pytest.approx(100 * lab.to_dict()["properties"][0]["reliance"])
    figure = both.figure()
    assert {t.name for t in figure.data} >= {"pose_linked: reliance", "pose_linked: shift 95th pct"}
    html = both._repr_html_()
    assert "data-tier='leans'" in html and f"<td>{len(held_out)}</td>" in html
    code = "import sys, orientscope; orientscope.compare_audits; import orientscope.notebook.compare; " \
           "print('dash' in sys.modules)"  # fmt: skip
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"fail_on": "nah"}, r"unknown fail-on 'nah'; expected one of \['leans', 'not-robust', 'not-invariant'\]"),
        ({"max_reliance": -0.01}, r"max_reliance \(the audit's margin\): margin must be a fraction"),
        ({"max_shift": -1.0}, "max_shift must be a number >= 0"),
    ],
)
def test_the_gate_refuses_bad_bars_by_their_names_before_predict_runs(ds, options, message):
    calls = []

    def predict(batch):
        calls.append(len(batch.ids))
        return np.zeros(len(batch.ids))

    with pytest.raises(ValueError, match=message):
        orientscope.assert_pose_robust(predict, ds, "gap", ids=ds.ids[:20], **options)
    assert calls == []


@pytest.mark.parametrize(
    ("n_copies", "error", "message"),
    [
        ([0, 4, 200], ValueError, "n_copies must be between 0 and 100, got 200"),
        ([], ValueError, r"n_copies is empty: give the numbers of rotated copies to train on, e\.g\. \[0, 1, 4, 16\]"),
        ([0], TypeError, "train\\(poses\\) must return a predict function; with 0 copies it returned NoneType"),
    ],
)
def test_sweep_refuses_bad_copy_counts_before_training_and_a_train_without_predict(ds, n_copies, error, message):
    """The user's training is the slow part: a bad K is refused before the first run, not after the others."""
    trained = []

    def train(poses):
        trained.append(poses.n_copies)

    with pytest.raises(error, match=message):
        orientscope.sweep(train, ds, "gap", n_copies=n_copies, ids=ds.ids[:20], progress=False)
    assert trained == ([0] if error is TypeError else [])


def test_sweep_takes_one_copy_count_as_an_int(ds):
    zero = lambda poses: lambda batch: np.zeros(len(batch.ids))  # noqa: E731
    result = orientscope.sweep(zero, ds, "gap", n_copies=2, ids=ds.ids[:40], copies=2, progress=False)
    assert list(result.table["n_copies"]) == [2] and list(result.table["tier"]) == ["invariant"]


def test_sweep_trains_on_rotated_copies_and_audits_the_held_out_molecules(qm9_small, tmp_path):
    mols = qm9_small
    y = _pose_linked(mols)
    ds = orientscope.from_arrays(mols.atomic_numbers, mols.positions_angstrom, ids=mols.ids, offsets=mols.offsets,
                                 properties={"pose_linked": y}, data_dir=tmp_path)  # fmt: skip
    held_out = ds.ids[::3]
    seen = []

    def train(poses):
        arrays = poses.to_arrays()
        seen.append((poses.n_copies, len(poses), set(arrays["copy"]), poses.rotations.get("purpose")))
        x = lab_frame_features(MoleculeSet(arrays["numbers"], arrays["positions"], arrays["offsets"],
                                           np.arange(len(arrays["ids"])).astype(str)))  # fmt: skip
        w, *_ = np.linalg.lstsq(x, arrays["properties"]["pose_linked"].to_numpy(), rcond=None)
        return lambda batch: lab_frame_features(_set(batch)) @ w

    result = orientscope.sweep(train, ds, "pose_linked", n_copies=[0, 4], ids=held_out, progress=False, margin=0.1)
    n_train = ds.n_molecules - len(held_out)
    assert seen == [(0, n_train, {-1}, None), (4, 4 * n_train, {0, 1, 2, 3}, "augment")]
    table = result.table
    assert list(table["n_copies"]) == [0, 4] and (table["n"] == len(held_out)).all()
    # Trained on copies, the least-squares model keeps a small lab-x weight (about +5 % reliance here, inside the
    # ±10 % margin), and its predictions move 40x less with the pose.
    assert list(table["tier"]) == ["leans", "robust"] and (table["margin"] == 0.1).all()
    assert table["reliance_percent"].iloc[1] < table["reliance_percent"].iloc[0] / 100
    assert table["shift_p95"].iloc[1] < table["shift_p95"].iloc[0] / 10
    with pytest.raises(ValueError, match="sweep needs the held-out ids"):
        orientscope.sweep(train, ds, "pose_linked", n_copies=[0])


def test_train_ids_split_the_audit_and_its_text_names_the_training_molecules(ds, data_dir):
    mols = load_dataset(data_dir, "qm9")
    w, *_ = np.linalg.lstsq(lab_frame_features(mols), mols.properties["gap"].to_numpy(), rcond=None)
    train = ds.ids[::4]
    audit = orientscope.audit_model(lambda b: lab_frame_features(_set(b)) @ w, ds, "gap", copies=2, train_ids=train,
                                    progress=False)  # fmt: skip
    table = audit.properties.set_index("split", drop=False)
    assert list(table["split"].fillna("all")) == ["all", "train", "test"]
    assert table.loc["train", "n"] == len(train) and table.loc["test", "n"] == ds.n_molecules - len(train)
    everything = audit.to_dict()["properties"][0]
    assert everything["n_train"] == len(train)
    assert (
        f"Training molecules are included: {len(train)} of the {ds.n_molecules} molecules"
        in everything["verdict"]["text"]
    )
    assert set(audit.predictions["split"]) == {"train", "test"}
    with pytest.raises(ValueError, match=r"1 train_ids are not molecules of 'qm9', e.g. \['nosuch'\]"):
        orientscope.audit_model(np.zeros, ds, "gap", train_ids=["nosuch"], progress=False)
