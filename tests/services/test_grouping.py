"""Group codes and the labels people read: formula, scaffold SMILES, cluster representative; unclustered apart."""

import numpy as np
import pandas as pd
import pytest

from orientscope.core.groups import UNGROUPED
from orientscope.services.bytecache import nbytes
from orientscope.services.cache import get_view
from orientscope.services.errors import InvalidInput
from orientscope.services.grouping import (
    chemistry_table,
    group_ids,
    group_label,
    group_label_map,
    group_rows,
    ungrouped_count,
)
from orientscope.services.groups import list_groups
from orientscope.services.molecules import list_molecules


@pytest.fixture(scope="module")
def qm9(qm9_store):
    return get_view(qm9_store, "qm9")


def test_group_codes_share_one_str_per_group_and_are_weighed_so(qm9):
    groups = group_ids(qm9)
    assert set(groups) == {"scaffold", "formula", "cluster"}
    n_distinct = 0
    for by, codes in groups.items():
        distinct = {c for c in codes if c is not None}
        assert len({id(c) for c in codes if c is not None}) == len(distinct), by  # one object per code
        assert distinct == set(chemistry_table(qm9)[f"{by}_group"].pipe(lambda s: s[s >= 0]).astype(str)), by
        n_distinct += len(distinct)
    pointers = sum(codes.nbytes for codes in groups.values())
    assert pointers <= nbytes(groups) <= pointers + 100 * (n_distinct + 3)  # not ~60 bytes per molecule


def test_formula_codes_are_labelled_by_their_members_formula(qm9):
    chem, codes = chemistry_table(qm9), group_ids(qm9)["formula"]
    labels = group_label_map(qm9, "formula")
    assert all(code.isdigit() for code in labels)  # the stage's codes ...
    for code, label in labels.items():  # ... each named by the one formula of its members
        assert set(chem["formula"][codes == code]) == {label}


def test_scaffold_codes_are_labelled_by_the_scaffold_smiles(qm9):
    chem, codes = chemistry_table(qm9), group_ids(qm9)["scaffold"]
    for code, label in group_label_map(qm9, "scaffold").items():
        scaffolds = set(chem["scaffold"][codes == code].replace("", "(acyclic)"))
        assert scaffolds == {label}
    assert "C1CC1" in group_label_map(qm9, "scaffold").values()


def test_clusters_are_labelled_by_their_representatives_smiles_and_unclustered_apart(qm9):
    chem, codes = chemistry_table(qm9), group_ids(qm9)["cluster"]
    table = qm9.store.table("chemistry", "groups_cluster").to_pandas()
    labels = group_label_map(qm9, "cluster")
    for row in table.itertuples():
        leader = qm9.row_of(row.leader_id)
        assert codes[leader] == str(row.group)  # the representative is a member of its cluster
        assert labels[str(row.group)] == chem["smiles"][leader]
    outside = int((chem["cluster_group"] < 0).sum())  # 0 here: the 400 molecules are all in the leader sample
    assert ungrouped_count(qm9, "cluster") == outside == sum(c is None for c in codes)
    assert group_label(qm9, "cluster", None) == "unclustered"


def test_groups_list_carries_labels_and_keeps_the_unclustered_out(qm9_store, qm9):
    out = list_groups(qm9_store, "qm9", "cluster")
    assert out["ungrouped"] == {"label": "unclustered", "size": ungrouped_count(qm9, "cluster")}
    assert all(g["group"] not in ("-1", "None") for g in out["groups"])
    assert sum(g["size"] for g in out["groups"]) + out["ungrouped"]["size"] == len(qm9)
    assert all(g["label"] == group_label(qm9, "cluster", g["group"]) for g in out["groups"])
    formula = list_groups(qm9_store, "qm9", "formula")
    assert formula["ungrouped"]["size"] == 0 and formula["groups"][0]["label"][0] == "C"


def test_group_filter_accepts_the_code_the_label_or_unclustered(qm9_store, qm9):
    code, label = next(iter(group_label_map(qm9, "formula").items()))
    by_code = list_molecules(qm9_store, "qm9", group_by="formula", group=code, limit=1000)
    by_label = list_molecules(qm9_store, "qm9", group_by="formula", group=label, limit=1000)
    assert by_code.total > 0 and by_code.items == by_label.items
    assert {m["group_labels"]["formula"] for m in by_label.items} == {label}
    np.testing.assert_array_equal(group_rows(qm9, "formula", label), group_ids(qm9)["formula"] == code)


def test_unknown_group_names_both_accepted_forms(qm9_store):
    with pytest.raises(InvalidInput, match="give a group code or its label") as err:
        list_molecules(qm9_store, "qm9", group_by="formula", group="C99")
    assert err.value.loc == ("query", "group")


def test_unclustered_molecules_are_apart_and_old_results_get_smiles_labels(tmp_path):
    """Cluster -1 is no group; old results named clusters 'cluster k (leader <id>)': the label is its SMILES."""
    from orientscope.core.dataset import from_molecules
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.store.results import ResultStore
    from orientscope.store.shards import save_sharded
    from tests.molecules import CO2, METHANE, WATER

    save_sharded(tmp_path, "old", from_molecules([WATER, CO2, METHANE], ids=["w", "c", "m"]), name="o", source="t")
    params = make_params(seed=0)
    precompute(tmp_path, "old", params, stages=["frames"])
    chem = pd.DataFrame({"id": ["w", "c", "m"], "smiles": ["O", "O=C=O", "C"], "cluster_group": [0, 0, -1]})
    groups = pd.DataFrame({"group": [0], "label": ["cluster 0 (leader c)"]})
    ResultStore(tmp_path, "old", params).write_stage(
        "chemistry", {"report": {}}, {"molecules": chem, "groups_cluster": groups}, 0.0
    )
    view = get_view(tmp_path, "old")
    assert group_label_map(view, "cluster") == {"0": "O=C=O"}
    assert list(group_ids(view)["cluster"]) == ["0", "0", None]
    out = list_groups(tmp_path, "old", "cluster")
    assert [(g["group"], g["label"], g["size"]) for g in out["groups"]] == [("0", "O=C=O", 2)]
    assert out["ungrouped"] == {"label": UNGROUPED["cluster"], "size": 1} and UNGROUPED["cluster"] == "unclustered"
    outside = list_molecules(tmp_path, "old", group_by="cluster", group="unclustered")
    assert [m["id"] for m in outside.items] == ["m"]
    assert (
        outside.items[0]["groups"]["cluster"] is None and outside.items[0]["group_labels"]["cluster"] == "unclustered"
    )
    by_label = list_molecules(tmp_path, "old", group_by="cluster", group="O=C=O")
    assert [m["id"] for m in by_label.items] == ["w", "c"]
