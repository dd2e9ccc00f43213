"""The words for the molecules without a chemical graph: counts by reason, ions, assumed charges, old results."""

from __future__ import annotations

from orientscope.science.perception import NO_GRAPH_REASONS
from orientscope.services.report_format import chemistry_lines


def test_reasons_come_with_their_counts_meanings_and_first_ids():
    chem = {
        "n_ok": 8364,
        "n_failed": 289,
        "no_graph": {
            "metal": {"count": 143, "meaning": NO_GRAPH_REASONS["metal"], "examples": ["11R", "2I2"]},
            "budget": {"count": 1, "meaning": NO_GRAPH_REASONS["budget"], "examples": []},
        },
        "n_single_atoms": 84,
        "n_charge_assumed": 1,
    }
    assert chemistry_lines({"chemistry": chem}) == [
        "Chemical graphs: 8,364 of 8,653 molecules",
        f"no graph, metal (143): {NO_GRAPH_REASONS['metal']}; e.g. 11R, 2I2",
        f"no graph, budget (1): {NO_GRAPH_REASONS['budget']}",
        "84 single atoms (ions): in no scaffold, formula or cluster group",
        "1 molecule perceived from 3D without a charge in the file: charge 0 assumed",
    ]


def test_a_result_stored_before_reasons_says_so_and_no_stage_says_nothing():
    assert chemistry_lines({"chemistry": {"n_ok": 10, "n_failed": 2}}) == [
        "Chemical graphs: 10 of 12 molecules",
        "no graph: 2 (reasons not recorded: recompute the chemistry stage)",
    ]
    assert chemistry_lines({"chemistry": {"n_ok": 12, "n_failed": 0}}) == ["Chemical graphs: 12 of 12 molecules"]
    assert chemistry_lines({}) == []
