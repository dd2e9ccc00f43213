"""The groupings of molecules and what the molecules outside every group are called."""

GROUP_KINDS = ("scaffold", "formula", "cluster")

# Molecules in no group (cluster -1: no leader within the Tanimoto threshold; scaffold -1: no
# chemical graph; all three: a single atom, an ion) are reported apart under these names, never as one more group.
UNGROUPED = {
    "scaffold": "no scaffold (no chemical graph, or a single atom)",
    "formula": "no formula group (single atoms)",
    "cluster": "unclustered",
}
