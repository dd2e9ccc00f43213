"""Nearest molecules in pose and in chemistry on constructed data."""

import numpy as np
import pytest

from orientscope.science.frames import orientation_of, symmetry_kinds
from orientscope.science.rotations import geodesic_angle
from orientscope.services.cache import get_view
from orientscope.services.errors import InvalidInput, NotComputed
from orientscope.services.neighbors import neighbors


def test_pose_neighbours_match_brute_force(toy_dir):
    view = get_view(toy_dir, "toy")
    out = neighbors(toy_dir, "toy", "a1", "pose", k=7)  # a1's angles to the others have no ties
    i = view.row_of("a1")
    angles = np.degrees(geodesic_angle(view.rotations[i][None], view.rotations))
    angles[i] = np.inf
    # Only a full frame is a pose: methane (no orientation), CO2 and benzene (one axis) are nobody's neighbours.
    full = orientation_of(symmetry_kinds(np.asarray(view.reasons[np.arange(len(view))], dtype=str)))[0] == "full"
    assert {str(m) for m in view.ids[~full]} == {"methane", "co2", "benzene"}
    angles[~full] = np.inf
    order = np.argsort(angles)[: int(full.sum()) - 1]
    assert [n["id"] for n in out["items"]] == list(view.ids[order[:7]])
    np.testing.assert_allclose([n["angle_deg"] for n in out["items"]], angles[order[:7]], atol=1e-6)
    methane = neighbors(toy_dir, "toy", "methane", "pose", k=7)
    assert methane["items"] == [] and "no full frame" in methane["note"] and out["note"] is None


def test_tanimoto_known_answers(toy_dir):
    out = neighbors(toy_dir, "toy", "water", "chemistry", k=7)
    sims = {n["id"]: n["tanimoto"] for n in out["items"]}
    # a1 and a3 share no bit with water (Tanimoto 0): no chemistry at all in common, so not neighbours
    assert sims == pytest.approx({"a4": 1.0, "a2": 0.8, "co2": 0.75, "methane": 0.5, "benzene": 0.2})


def test_chemistry_needs_the_stage(toy_dir):
    with pytest.raises(NotComputed, match="chemistry"):
        neighbors(toy_dir, "plain", "water", "chemistry")


@pytest.mark.parametrize(("kwargs", "loc"), [({"k": 0}, "k"), ({"by": "size"}, "by")])
def test_bad_arguments(toy_dir, kwargs, loc):
    with pytest.raises(InvalidInput) as err:
        neighbors(toy_dir, "toy", "water", **kwargs)
    assert err.value.loc == ("query", loc)
