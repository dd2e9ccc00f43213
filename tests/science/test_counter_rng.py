import numpy as np
import pytest
from scipy.stats import kstest

from orientscope.science.counter_rng import (
    axis_angle_rotations,
    haar_rotations,
    half_split,
    normals,
    random_bits,
    subsample,
    uniforms,
    unit_vectors,
)
from orientscope.science.rotations import geodesic_angle
from orientscope.science.so3_stats import haar_angle_cdf

N = 20_000


@pytest.mark.parametrize("cuts", [[N], [1, 999, 7000, N], list(range(0, N + 1, 4096))[1:] + [N]])
def test_any_cut_of_the_index_range_gives_identical_draws(cuts):
    whole_u = uniforms(3, "control", np.arange(N), 3)
    whole_r = haar_rotations(3, "control", np.arange(N))
    bounds = [0, *cuts]
    parts_u = [uniforms(3, "control", np.arange(a, b), 3) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    parts_r = [haar_rotations(3, "control", np.arange(a, b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    np.testing.assert_array_equal(np.concatenate(parts_u), whole_u)
    np.testing.assert_array_equal(np.concatenate(parts_r), whole_r)
    # Order of the indices does not matter either: each draw depends on its own index only.
    rev = np.arange(N)[::-1]
    np.testing.assert_array_equal(uniforms(3, "control", rev, 3), whole_u[::-1])


def test_streams_and_seeds_differ():
    idx = np.arange(1000)
    a = random_bits(0, "control", idx)
    assert not np.array_equal(a, random_bits(0, "split", idx))
    assert not np.array_equal(a, random_bits(1, "control", idx))
    assert np.array_equal(a, random_bits(0, "control", idx))
    u, v = uniforms(0, "control", idx)[:, 0], uniforms(0, "split", idx)[:, 0]
    assert abs(np.corrcoef(u, v)[0, 1]) < 0.1


def test_uniforms_are_uniform_and_in_the_open_interval():
    u = uniforms(7, "u", np.arange(N), 2)
    assert (u > 0).all() and (u < 1).all()
    assert kstest(u[:, 0], "uniform").pvalue > 1e-3
    assert kstest(u[:, 1], "uniform").pvalue > 1e-3
    # Neighbouring indices are not correlated (a bad hash of a counter would be).
    assert abs(np.corrcoef(u[:-1, 0], u[1:, 0])[0, 1]) < 0.05
    assert kstest(normals(7, "n", np.arange(N))[:, 0], "norm").pvalue > 1e-3


def test_haar_rotations_are_proper_and_follow_the_haar_angle_law():
    R = haar_rotations(11, "control", np.arange(N))
    np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=1e-12)
    np.testing.assert_allclose(R @ np.transpose(R, (0, 2, 1)), np.broadcast_to(np.eye(3), R.shape), atol=1e-12)
    angles = geodesic_angle(R, np.eye(3)[None])
    assert kstest(angles, haar_angle_cdf).pvalue > 1e-3
    # Uniform on SO(3) also means each column is uniform on the sphere: mean ~ 0.
    assert np.abs(R.mean(axis=0)).max() < 0.03


def test_axis_angle_rotations_turn_by_the_given_angle():
    axes = unit_vectors(0, "axis", np.arange(500))
    np.testing.assert_allclose(np.linalg.norm(axes, axis=1), 1.0)
    angles = uniforms(0, "angle", np.arange(500))[:, 0] * np.pi
    R = axis_angle_rotations(axes, angles)
    np.testing.assert_allclose(geodesic_angle(R, np.eye(3)[None]), angles, atol=1e-7)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", R, axes), axes, atol=1e-12)  # the axis is fixed


def test_half_split_is_a_fair_coin_and_cut_independent():
    a = half_split(5, "split", np.arange(N))
    assert abs(a.mean() - 0.5) < 0.02
    np.testing.assert_array_equal(np.concatenate([half_split(5, "split", np.arange(0, 777)),
                                                  half_split(5, "split", np.arange(777, N))]), a)  # fmt: skip


def test_subsample_merges_across_shards():
    whole = subsample(2, "train", np.arange(N), 1500)
    assert len(whole) == 1500 and len(np.unique(whole)) == 1500
    per_shard = [subsample(2, "train", np.arange(a, min(a + 3000, N)), 1500) for a in range(0, N, 3000)]
    np.testing.assert_array_equal(subsample(2, "train", np.concatenate(per_shard), 1500), whole)
    # Spread over the whole range, not the first rows.
    assert abs(np.median(whole) - N / 2) < N * 0.05
    np.testing.assert_array_equal(subsample(2, "train", np.arange(10), 50), np.arange(10))


def test_id_counters_are_blake2b_of_the_id_and_key_haar_draws_by_identity():
    # The documented rule: the first 8 bytes, little-endian, of BLAKE2b-64 of the id's UTF-8.
    import hashlib

    from orientscope.science.counter_rng import id_counters

    ids = np.array(["1", "gdb_17", "é-ion", "0001"])
    expected = [int.from_bytes(hashlib.blake2b(i.encode(), digest_size=8).digest(), "little") for i in ids]
    assert id_counters(ids).tolist() == expected and id_counters(ids).dtype == np.uint64
    assert id_counters(["1"])[0] != id_counters(["01"])[0]  # ids are text: "01" is not "1"
    keys = id_counters(np.arange(N).astype(str))
    assert len(np.unique(keys)) == N
    whole = haar_rotations(0, "audit:copy0", keys)
    shuffled = np.random.default_rng(1).permutation(N)
    np.testing.assert_array_equal(haar_rotations(0, "audit:copy0", keys[shuffled]), whole[shuffled])
    # Haar-uniform: the rotation angle follows the Haar law.
    assert kstest(geodesic_angle(whole, np.eye(3)), haar_angle_cdf).pvalue > 1e-3
    with pytest.raises(ValueError, match="must be >= 0"):
        uniforms(0, "x", np.array([-1]))
