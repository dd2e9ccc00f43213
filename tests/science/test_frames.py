import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from orientscope.core.dataset import from_molecules
from orientscope.science.frames import (
    canonical_positions,
    compute_frames,
    frame_of_molecule,
    orientation_of,
    symmetry_kinds,
)
from orientscope.science.rotations import random_rotations
from tests.molecules import (
    ACETYLENE,
    CH3CL,
    CO2,
    HCN,
    METHANE,
    NH3,
    SF6,
    SODIUM_ION,
    WATER,
    asymmetric,
    benzene,
)


def _frame(mol, **kw):
    frames, canon = frame_of_molecule(*mol, **kw)
    return frames, canon


@pytest.mark.parametrize("method", ["pca", "pca-mass", "inertia"])
@pytest.mark.parametrize("sign_rule", ["max", "count"])
@given(seed=st.integers(0, 2**32 - 1), mol_seed=st.integers(0, 50))
@settings(max_examples=25, deadline=None)
def test_equivariance_under_rotation(method, sign_rule, seed, mol_seed):
    z, pos = asymmetric(mol_seed)
    f0, c0 = _frame((z, pos), method=method, sign_rule=sign_rule)
    assume(not f0.degenerate[0])
    Q = random_rotations(1, seed)[0]
    shift = np.array([3.0, -1.0, 7.0])
    f1, c1 = _frame((z, pos @ Q.T + shift), method=method, sign_rule=sign_rule)
    assert not f1.degenerate[0]
    np.testing.assert_allclose(f1.rotations[0], f0.rotations[0] @ Q.T, atol=1e-8)
    np.testing.assert_allclose(c1, c0, atol=1e-8)


def test_rotation_is_proper_and_orthonormal():
    f, _ = _frame(asymmetric(3))
    R = f.rotations[0]
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-12)
    assert np.linalg.det(R) == pytest.approx(1.0)
    assert np.all(np.diff(f.eigenvalues[0]) <= 0)  # PCA: descending


def test_atom_permutation_leaves_frame_unchanged():
    z, pos = asymmetric(7)
    perm = np.random.default_rng(0).permutation(len(z))
    for rule in ("max", "count"):
        f0, _ = _frame((z, pos), sign_rule=rule)
        f1, _ = _frame((np.array(z)[perm], pos[perm]), sign_rule=rule)
        np.testing.assert_allclose(f1.rotations, f0.rotations, atol=1e-12)


def test_sign_rules_point_axes_as_documented():
    z, pos = asymmetric(11)
    f, canon = _frame((z, pos), sign_rule="max")
    for k in range(2):
        assert canon[np.argmax(np.abs(canon[:, k])), k] > 0
    f, canon = _frame((z, pos), sign_rule="count")
    for k in range(2):
        assert (canon[:, k] > 0).sum() > (canon[:, k] < 0).sum()


def test_canonical_axes_are_principal_axes():
    z, pos = asymmetric(5)
    f, canon = _frame((z, pos))
    cov = np.cov(canon.T, bias=True)
    np.testing.assert_allclose(cov, np.diag(f.eigenvalues[0]), atol=1e-10)


@pytest.mark.parametrize(
    "name,mol,expected",
    [
        ("methane", METHANE, "eigen_gap"),
        ("benzene", benzene(), "eigen_gap_12"),
        ("co2", CO2, "linear"),
        ("acetylene", ACETYLENE, "linear"),
        ("water", WATER, "sign_tie"),
    ],
)
def test_symmetric_molecules_are_flagged(name, mol, expected):
    f, _ = _frame(mol)
    assert f.degenerate[0], name
    assert expected in f.reasons[0]


def test_one_atom_is_flagged_not_crashing():
    f, canon = _frame(([6], np.array([[1.0, 2.0, 3.0]])))
    assert f.degenerate[0] and "single_atom" in f.reasons[0]
    np.testing.assert_allclose(f.rotations[0], np.eye(3))
    np.testing.assert_allclose(canon, 0.0)


def test_asymmetric_molecule_is_not_flagged():
    f, _ = _frame(asymmetric(2))
    assert not f.degenerate[0] and f.reasons[0] == ""


def test_vectorised_matches_single_molecule_path():
    mols = [asymmetric(i, 5 + i) for i in range(6)] + [WATER, CO2]
    s = from_molecules(mols)
    f = compute_frames(s.positions_angstrom, s.offsets, s.atomic_numbers)
    canon = canonical_positions(s.positions_angstrom, s.offsets, f)
    for i, m in enumerate(mols):
        fi, ci = _frame(m)
        np.testing.assert_allclose(f.rotations[i], fi.rotations[0], atol=1e-12)
        np.testing.assert_allclose(canon[s.offsets[i] : s.offsets[i + 1]], ci, atol=1e-12)
        assert f.reasons[i] == fi.reasons[0]


def test_real_qm9_frames_equivariant(qm9_small):
    m = qm9_small
    f0 = compute_frames(m.positions_angstrom, m.offsets, m.atomic_numbers)
    from orientscope.science.rotations import rotate_molecules

    Q = random_rotations(m.n_molecules, 123)
    f1 = compute_frames(rotate_molecules(m.positions_angstrom, m.offsets, Q), m.offsets, m.atomic_numbers)
    ok = ~f0.degenerate
    assert ok.sum() > 300
    np.testing.assert_allclose(f1.rotations[ok], f0.rotations[ok] @ np.transpose(Q[ok], (0, 2, 1)), atol=1e-8)
    assert f0.degenerate[0]  # QM9 #1 is methane


def test_unknown_options_raise():
    with pytest.raises(ValueError, match="expected one of"):
        _frame(asymmetric(0), method="svd")
    with pytest.raises(ValueError, match="expected one of"):
        _frame(asymmetric(0), sign_rule="first")


# ---------------------------------------------------------------------- orientation by symmetry
SYMMETRY_CASES = [
    ("sodium ion", SODIUM_ION, "single_atom", "none", 0),
    ("CH4", METHANE, "spherical_top", "none", 0),
    ("SF6", SF6, "spherical_top", "none", 0),
    ("CO2", CO2, "linear", "axis", 1),
    ("HCN", HCN, "linear", "axis", 1),
    ("acetylene", ACETYLENE, "linear", "axis", 1),
    ("CH3Cl", CH3CL, "prolate_top", "axis", 1),
    ("NH3", NH3, "oblate_top", "axis", 3),
    ("benzene", benzene(), "oblate_top", "axis", 3),
    ("water", WATER, "", "full", 0),
    ("asymmetric", asymmetric(2), "", "full", 0),
]
# The symmetry axis of each axis-only molecule as constructed (tests/molecules.py).
SYMMETRY_AXIS = {"CO2": [1, 0, 0], "HCN": [0, 0, 1], "acetylene": [1, 0, 0], "CH3Cl": [0, 0, 1], "NH3": [0, 0, 1],
                 "benzene": [0, 0, 1]}  # fmt: skip


@pytest.mark.parametrize("method", ["pca", "pca-mass", "inertia"])
@pytest.mark.parametrize("name,mol,kind,cls,axis", SYMMETRY_CASES, ids=[c[0] for c in SYMMETRY_CASES])
def test_orientation_class_is_the_symmetry_s_and_invariant_under_rotation(method, name, mol, kind, cls, axis):
    z, pos = mol
    rotations = random_rotations(20, seed=42)
    stacked = np.vstack([pos] + [pos @ Q.T + 1.5 for Q in rotations])
    offsets = np.arange(len(rotations) + 2) * len(z)
    frames = compute_frames(stacked, offsets, np.tile(z, len(rotations) + 1), method=method)
    assert set(frames.symmetry) == {kind}, name
    assert set(frames.orientation) == {cls} and set(frames.defined_axis) == {axis}
    if cls == "axis":  # the defined axis is the symmetry axis, turned with the molecule (as an axial direction)
        expected = np.vstack([SYMMETRY_AXIS[name]] + [Q @ SYMMETRY_AXIS[name] for Q in rotations])
        got = frames.rotations[:, axis - 1]
        np.testing.assert_allclose(np.abs(np.einsum("ai,ai->a", got, expected)), 1.0, atol=1e-9)


def test_the_symmetry_kind_follows_from_the_stored_reasons_alone():
    mols = [m for _, m, *_ in SYMMETRY_CASES]
    z = np.concatenate([m[0] for m in mols])
    offsets = np.concatenate([[0], np.cumsum([len(m[0]) for m in mols])])
    frames = compute_frames(np.vstack([m[1] for m in mols]), offsets, z)
    np.testing.assert_array_equal(symmetry_kinds(frames.reasons), frames.symmetry)
    classes, axes = orientation_of(frames.symmetry)
    np.testing.assert_array_equal(classes, [c[3] for c in SYMMETRY_CASES])
    np.testing.assert_array_equal(axes, [c[4] for c in SYMMETRY_CASES])
    with pytest.raises(ValueError, match="unknown symmetry kind"):
        orientation_of(np.array(["helix"]))
