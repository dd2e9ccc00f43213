"""The "only group" search (issue 40): a SMILES or formula is matched as typed."""

from __future__ import annotations

from orientscope.app.panels import group_search_options
from orientscope.figures.state import ViewState


def test_the_group_search_takes_smiles_as_typed(rings_store):
    """ "c1ccccc1" is benzene, never cyclohexane (C1CCCCC1): the dropdown's own search ignores case."""
    data_dir, dataset = rings_store
    st = ViewState(dataset=dataset, grouping="scaffold")
    default = [o["label"] for o in group_search_options(data_dir, st, "", None)]
    assert default == ["C1CCCCC1 (6)", "c1ccccc1 (4)"]  # no text: the largest first
    assert [o["label"] for o in group_search_options(data_dir, st, "c1ccccc1", None)] == ["c1ccccc1 (4)"]
    assert [o["label"] for o in group_search_options(data_dir, st, "C1CCC", None)] == ["C1CCCCC1 (6)"]
    # the chosen group stays a choice, or the dropdown would drop it
    benzene = group_search_options(data_dir, st, "c1ccccc1", None)[0]["value"]
    assert benzene in [o["value"] for o in group_search_options(data_dir, st, "C1CCC", benzene)]
    formula = ViewState(dataset=dataset, grouping="formula")
    assert [o["label"] for o in group_search_options(data_dir, formula, "C7H8", None)] == ["C7H8 (1)"]
    assert group_search_options(data_dir, formula, "c7h8", None) == []
