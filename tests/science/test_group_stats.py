import numpy as np
import pytest

from orientscope.science.group_stats import group_orientation_stats
from orientscope.science.rotations import matrix_to_quaternion, quaternion_angle, quaternion_to_matrix, random_rotations


def _around(center_q, n, sigma_rad, seed):
    rng = np.random.default_rng(seed)
    from scipy.spatial.transform import Rotation

    noise = Rotation.from_rotvec(rng.normal(0, sigma_rad, (n, 3)))
    return (noise * Rotation.from_quat(center_q)).as_quat()


def test_groups_with_planted_poses_have_small_spread_and_right_mean():
    centers = matrix_to_quaternion(random_rotations(2, 7))
    q = np.concatenate([_around(centers[0], 30, 0.05, 2), _around(centers[1], 20, 0.05, 3)])
    q *= np.where(np.arange(50) % 3 == 0, -1.0, 1.0)[:, None]
    groups = np.repeat([5, 9], [30, 20])
    groups[0] = -1  # ignored
    table = group_orientation_stats(groups, q, quaternion_to_matrix(q))
    assert table["group"].tolist() == [5, 9] and table["size"].tolist() == [29, 20]
    for row, c in zip(table.itertuples(), centers, strict=True):
        assert quaternion_angle(np.array([row.qx, row.qy, row.qz, row.qw]), c) < np.radians(5)
        assert row.spread_deg < 10
        assert row.concentration > 0.95
    assert table["typical_index"].iloc[0] in range(1, 30)
    uniform = group_orientation_stats(
        np.zeros(2000, int), matrix_to_quaternion(random_rotations(2000, 1)), random_rotations(2000, 1)
    )
    assert uniform["concentration"].iloc[0] < 0.1 and uniform["spread_deg"].iloc[0] > 90


def test_only_posed_members_make_a_group_pose_and_a_group_without_one_has_none():
    """Members without a full frame (identical symmetric tops in one pose) count in the size only."""
    center = matrix_to_quaternion(random_rotations(1, 4))[0]
    posed_q = _around(center, 15, 0.05, 5)
    q = np.concatenate([posed_q, np.tile([0.0, 0.0, 0.0, 1.0], (10, 1)), np.tile([0.0, 0.0, 0.0, 1.0], (4, 1))])
    groups = np.repeat([0, 1], [25, 4])
    posed = np.r_[np.ones(15, bool), np.zeros(14, bool)]
    table = group_orientation_stats(groups, q, quaternion_to_matrix(q), posed).set_index("group")
    alone = group_orientation_stats(np.zeros(15, int), posed_q, quaternion_to_matrix(posed_q)).iloc[0]
    assert table.loc[0, "size"] == 25 and table.loc[0, "n_posed"] == 15
    for col in ("qx", "qy", "qz", "qw", "spread_deg", "concentration"):
        assert table.loc[0, col] == pytest.approx(alone[col], abs=1e-9)
    assert table.loc[0, "typical_index"] == alone.typical_index  # one of the posed members
    assert table.loc[1, "size"] == 4 and table.loc[1, "n_posed"] == 0 and table.loc[1, "typical_index"] == -1
    assert np.isnan(table.loc[1, ["qx", "qy", "qz", "qw", "spread_deg", "concentration"]].to_numpy(float)).all()
