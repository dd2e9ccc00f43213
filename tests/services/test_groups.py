"""Groups with statistics, with and without the chemistry stage."""

import pytest

from orientscope.services.errors import InvalidInput, NotComputed
from orientscope.services.groups import list_groups


def test_formula_groups_without_chemistry(toy_dir):
    out = list_groups(toy_dir, "plain", "formula")
    sizes = {g["group"]: g["size"] for g in out["groups"]}
    assert sizes["H2O"] == 1 and sum(sizes.values()) == 8
    co2 = next(g for g in out["groups"] if g["group"] == "CO2")
    assert co2["n_degenerate"] == 1 and co2["mean_classifier_score"] is None and co2["statistics"] == {}


def test_scaffold_groups_merge_stage_statistics(toy_dir):
    out = list_groups(toy_dir, "toy", "scaffold")
    s2 = next(g for g in out["groups"] if g["group"] == "s2")
    assert s2 == {
        "group": "s2",
        "label": "s2",
        "size": 1,
        "n_degenerate": 0,
        "mean_classifier_score": 0.8,
        "statistics": {"kl": 0.2},
    }


def test_errors(toy_dir):
    with pytest.raises(NotComputed):
        list_groups(toy_dir, "plain", "cluster")
    with pytest.raises(InvalidInput):
        list_groups(toy_dir, "plain", "colour")
