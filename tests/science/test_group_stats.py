import numpy as np

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
