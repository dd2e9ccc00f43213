import numpy as np
import pandas as pd
import pytest

from orientscope.core.errors import DatasetError
from orientscope.core.orientations_schema import R_COLUMNS
from orientscope.loaders.detect import load_path
from orientscope.pipeline.export import EXPORT_FORMATS, check_stream, debias, export_molecules, rotate_properties
from orientscope.science.frames import canonical_positions, compute_frames
from orientscope.science.rotations import random_rotations


@pytest.fixture()
def mols(qm9_small):
    return qm9_small.subset(np.arange(0, 400, 10))


def _centred(m):
    owner = m.molecule_index
    centroid = np.stack([np.bincount(owner, m.positions_angstrom[:, k]) for k in range(3)], 1) / m.n_atoms[:, None]
    return m.positions_angstrom - centroid[owner]


@pytest.mark.parametrize("fmt", EXPORT_FORMATS)
def test_random_export_round_trips_with_recorded_rotations(tmp_path, mols, fmt):
    info = export_molecules(mols, tmp_path / f"out.{fmt}", "random", fmt, seed=5)
    back = load_path(tmp_path / f"out.{fmt}", fmt).mols
    assert list(back.ids) == list(mols.ids) and back.n_molecules == mols.n_molecules
    if fmt != "xyz":  # plain XYZ has no properties
        assert set(mols.properties.columns) <= set(back.properties.columns)
        np.testing.assert_allclose(back.properties["gap"], mols.properties["gap"])
    # QM9's frame-dependent polarizability components form a tensor: all of them turn with the molecule.
    assert info["frame_dependent"] == sorted(mols.frame_dependent) and info["frame_dependent_not_rotated"] == []
    rot = pd.read_csv(info["rotations_path"])
    assert list(rot["id"].astype(str)) == list(mols.ids) and (rot["seed"] == 5).all()
    R = rot[R_COLUMNS].to_numpy().reshape(-1, 3, 3)
    expected = np.einsum("aij,aj->ai", R[mols.molecule_index], _centred(mols))
    np.testing.assert_allclose(_centred(back), expected, atol=1e-4)


def test_random_rotations_are_seeded_and_uniform(mols):
    a, ra = debias(mols, "random", seed=1)
    b, rb = debias(mols, "random", seed=1)
    _, rc = debias(mols, "random", seed=2)
    np.testing.assert_array_equal(ra, rb)
    assert not np.allclose(ra, rc)
    np.testing.assert_allclose(np.linalg.det(ra), 1.0)
    # Haar-uniform rotations have E[trace] = 0... on 40 draws the mean is near 0.
    assert abs(np.trace(ra, axis1=1, axis2=2).mean()) < 0.5


def test_canonical_export_is_the_canonical_pose(mols):
    posed, R = debias(mols, "canonical")
    frames = compute_frames(mols.positions_angstrom, mols.offsets)
    np.testing.assert_allclose(
        posed.positions_angstrom, canonical_positions(mols.positions_angstrom, mols.offsets, frames)
    )
    again = compute_frames(posed.positions_angstrom, posed.offsets)
    ok = ~frames.degenerate
    np.testing.assert_allclose(again.rotations[ok], np.broadcast_to(np.eye(3), (ok.sum(), 3, 3)), atol=1e-6)


def test_tensor_and_vector_properties_rotate_with_the_molecule():
    A = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 0.5]])
    props = pd.DataFrame({
        **{f"alpha_{s}": [A[i, j]] for s, (i, j) in zip(("xx", "xy", "xz", "yy", "yz", "zz"), [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)], strict=True)},
        "mu_x": [1.0], "mu_y": [2.0], "mu_z": [3.0], "gap": [0.25],
    })  # fmt: skip
    R = random_rotations(1, 3)
    out = rotate_properties(props, R)
    B = R[0] @ A @ R[0].T
    assert out["alpha_xy"].iat[0] == pytest.approx(B[0, 1]) and out["alpha_zz"].iat[0] == pytest.approx(B[2, 2])
    np.testing.assert_allclose(out[["mu_x", "mu_y", "mu_z"]].to_numpy()[0], R[0] @ [1.0, 2.0, 3.0])
    assert out["gap"].iat[0] == 0.25


@pytest.mark.parametrize("fmt", ["extxyz", "sdf"])
def test_stored_export_is_the_stored_poses_for_a_model_outside_python(tmp_path, mols, fmt):
    """The poses an audit compares its rotated copies with, as a file: nothing moved, the side file says so."""
    info = export_molecules(mols, tmp_path / f"stored.{fmt}", "stored", fmt, seed=5)
    back = load_path(tmp_path / f"stored.{fmt}", fmt).mols
    assert list(back.ids) == list(mols.ids) and info["mode"] == "stored"
    np.testing.assert_allclose(back.positions_angstrom, mols.positions_angstrom, atol=1e-4)
    # lab-frame tensors stay as they are, with the molecule
    np.testing.assert_allclose(back.properties["alpha_xx"], mols.properties["alpha_xx"], rtol=1e-6)
    rot = pd.read_csv(info["rotations_path"])
    assert (rot["mode"] == "stored").all() and list(rot["id"].astype(str)) == list(mols.ids)
    np.testing.assert_array_equal(rot[R_COLUMNS].to_numpy(), np.tile(np.eye(3).ravel(), (mols.n_molecules, 1)))
    with pytest.raises(ValueError, match="purpose 'audit' gives the rotated copies"):
        check_stream("stored", "audit")


def test_unknown_mode_and_format(tmp_path, mols):
    with pytest.raises(ValueError, match="unknown export mode 'sideways'"):
        debias(mols, "sideways")
    with pytest.raises(ValueError, match="unknown export format 'pdb'"):
        export_molecules(mols, tmp_path / "x.pdb", "random", "pdb")


def test_copies_keep_ids_and_copy_zero_is_the_single_export(tmp_path, mols):
    from orientscope.pipeline.export import export_copies

    single = export_molecules(mols, tmp_path / "one.npz", "random", "npz", seed=3)
    info = export_copies(mols, tmp_path / "many.npz", "npz", copies=3, seed=3)
    assert [p.split("/")[-1] for p in info["paths"]] == ["many.copy0.npz", "many.copy1.npz", "many.copy2.npz"]
    side = pd.read_csv(info["rotations_path"])
    assert list(side.columns[:2]) == ["copy", "id"] and len(side) == 3 * mols.n_molecules
    first = pd.read_csv(single["rotations_path"])
    np.testing.assert_allclose(side[side["copy"] == 0][R_COLUMNS].to_numpy(), first[R_COLUMNS].to_numpy())
    assert not np.allclose(side[side["copy"] == 1][R_COLUMNS].to_numpy(), first[R_COLUMNS].to_numpy())
    for path in info["paths"]:
        assert list(load_path(path, "npz").mols.ids) == list(mols.ids)


def test_frame_dependent_property_that_cannot_be_rotated_is_named(tmp_path, mols):
    from dataclasses import replace

    odd = replace(mols, frame_dependent=mols.frame_dependent | {"gap"})
    info = export_molecules(odd, tmp_path / "out.npz", "random", "npz", seed=1)
    assert info["frame_dependent_not_rotated"] == ["gap"]


def test_a_copy_is_keyed_by_purpose_seed_copy_and_molecule_id(tmp_path, qm9_small):
    """Copy k of a molecule is a pure function of (purpose, seed, k, id): the single export is copy 0, a subset,
    a reordering or a cut of the set gives each molecule the rotation it has in the whole set, and the audit
    and augment streams never share a rotation."""
    from orientscope.pipeline.export import ROTATION_RULE, copy_rotations, debias, export_copies
    from orientscope.science.counter_rng import haar_rotations, id_counters

    mols = qm9_small.subset(np.arange(20))
    _, single = debias(mols, "random", seed=3)
    np.testing.assert_array_equal(single, haar_rotations(3, "augment:copy0", id_counters(mols.ids)))
    keys = id_counters(mols.ids)
    whole = copy_rotations(keys, 3, 2, "augment")
    np.testing.assert_array_equal(copy_rotations(keys[5:], 3, 2, "augment"), whole[5:])
    backwards = debias(mols.subset(np.arange(19, -1, -1)), "random", seed=3, copy=2)[1]
    np.testing.assert_array_equal(backwards, whole[::-1])
    audit = copy_rotations(keys, 3, 2, "audit")
    # Two independent Haar draws: no rotation of one stream is within 1 degree of the other's for the same molecule.
    cos = (np.einsum("nij,nij->n", audit, whole) - 1) / 2
    assert np.all(cos < np.cos(np.radians(1.0)))
    info = export_copies(mols, tmp_path / "c.npz", "npz", copies=2, seed=3)
    assert info["rotation_rule"] == ROTATION_RULE and info["purpose"] == "augment" and info["seed"] == 3
    table = pd.read_csv(tmp_path / "c.npz.rotations.csv", dtype={"id": str})
    assert list(table.columns[:5]) == ["copy", "id", "mode", "purpose", "seed"]
    assert set(table["purpose"]) == {"augment"}
    with pytest.raises(ValueError, match="unknown rotation purpose 'train'.*'audit', 'augment'"):
        copy_rotations(keys, 3, 0, "train")


def test_export_of_ids_and_a_limit_gives_each_molecule_its_whole_set_pose(tmp_path, qm9_store):
    from orientscope.loaders.detect import load_path
    from orientscope.pipeline.export import export_dataset
    from orientscope.store.datasets import load_dataset

    export_dataset(qm9_store, "qm9", "random", tmp_path / "all.npz", seed=5, purpose="audit")
    ids = list(load_dataset(qm9_store, "qm9").ids[[7, 3, 100, 42]])
    part = export_dataset(qm9_store, "qm9", "random", tmp_path / "part.npz", seed=5, purpose="audit", ids=ids)
    assert part["n_molecules"] == 4 and part["purpose"] == "audit"
    every, some = (load_path(tmp_path / f, "npz").mols for f in ("all.npz", "part.npz"))
    for i in ids:
        np.testing.assert_array_equal(some.atoms_of(some.index_of(i))[1], every.atoms_of(every.index_of(i))[1])
    limited = export_dataset(qm9_store, "qm9", "random", tmp_path / "lim.npz", ids=ids, limit=2)
    assert limited["n_molecules"] == 2
    with pytest.raises(DatasetError, match=r"1 of the 2 ids are not molecules of dataset 'qm9', e.g. \['nosuch'\]"):
        export_dataset(qm9_store, "qm9", "random", tmp_path / "bad.npz", ids=[ids[0], "nosuch"])
