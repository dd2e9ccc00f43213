"""Groups read as people name them (formula, scaffold SMILES, representative's SMILES), never as codes;
molecules in no group are counted apart and drawn muted, never as one more group."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from orientscope.app import panels
from orientscope.core.palette import GROUP_COLORS, UNGROUPED_GREY
from orientscope.figures.mapview import map_layers, map_query, shown_points
from orientscope.figures.state import ViewState
from orientscope.services.cache import get_view
from orientscope.services.grouping import group_ids, group_label_map
from orientscope.services.map_view import view_points
from orientscope.store.shards import shard_table_path


@pytest.fixture(scope="module")
def unclustered_store(qm9_store, tmp_path_factory):
    """The small QM9 store with every singleton cluster turned into 'unclustered' (cluster -1), as on full QM9."""
    data_dir = tmp_path_factory.mktemp("unclustered") / "store"
    shutil.copytree(qm9_store, data_dir)
    result = next((data_dir / "datasets" / "qm9" / "results").iterdir())
    molecules = shard_table_path(result, "chemistry", "molecules", 0)  # 400 molecules: one shard
    mols = pd.read_parquet(molecules)
    groups = pd.read_parquet(result / "chemistry.groups_cluster.parquet")
    singles = set(groups.loc[groups["size"] == 1, "group"])
    mols.loc[mols["cluster_group"].isin(singles), "cluster_group"] = -1
    mols.to_parquet(molecules)
    groups[groups["size"] > 1].to_parquet(result / "chemistry.groups_cluster.parquet")
    return data_dir


def _codes_and_labels(data_dir, by):
    view = get_view(data_dir, "qm9")
    labels = group_label_map(view, by)
    return {c for c, lab in labels.items() if c != lab}, set(labels.values()), group_ids(view)[by]


@pytest.mark.parametrize("by", ["formula", "scaffold", "cluster"])
def test_groups_table_and_filter_show_labels_never_codes(qm9_store, by):
    codes, labels, _ = _codes_and_labels(qm9_store, by)
    assert codes  # the stage stores numeric codes, so a code shown would be visible
    out = panels.group_outputs(qm9_store, ViewState(dataset="qm9", grouping=by))
    assert out.rows and {r["label"] for r in out.rows} <= labels
    shown = [o["label"].rsplit(" (", 1)[0] for o in out.options]
    assert set(shown) <= labels and not set(shown) & codes
    # the code travels as the value only: picking a row filters by it
    first = out.rows[0]
    assert first["group"] in codes and out.options[0]["value"] == first["group"]


def test_molecule_panel_names_groups_by_label(qm9_store):
    st = ViewState(dataset="qm9")
    mol = str(map_layers(qm9_store, st).md.ids[0])
    table = panels.molecule_outputs(qm9_store, st, mol).info[0]
    rows = {tr.children[0].children: tr.children[1].children for tr in table.children}
    view = get_view(qm9_store, "qm9")
    for by, row in panels.GROUP_ROW_NAMES.items():
        code = group_ids(view)[by][0]
        assert rows[row] == group_label_map(view, by)[code] != code


def test_map_legend_names_groups_and_draws_unclustered_muted_apart(unclustered_store):
    _, labels, ids = _codes_and_labels(unclustered_store, "cluster")
    outside = np.array([c is None for c in ids])
    assert 0 < outside.sum() < len(ids)
    layers = map_layers(unclustered_store, ViewState(dataset="qm9", view="map", color="group", grouping="cluster"))
    spec = layers.color
    ungrouped = spec.labels.index(f"unclustered ({int(outside.sum()):,}, not a group)")
    assert spec.colors[ungrouped] == UNGROUPED_GREY and UNGROUPED_GREY not in GROUP_COLORS
    codes_drawn = np.asarray(spec.values)
    np.testing.assert_array_equal(codes_drawn == ungrouped, outside[layers.rows])
    named = [lab.rsplit(" (", 1)[0] for lab in spec.labels[:ungrouped]]  # each colour names its largest group
    assert named and set(named) <= labels  # SMILES of the representatives, not codes


def test_unclustered_is_listed_apart_and_filterable(unclustered_store):
    st = ViewState(dataset="qm9", grouping="cluster")
    out = panels.group_outputs(unclustered_store, st)
    n_out = sum(c is None for c in _codes_and_labels(unclustered_store, "cluster")[2])
    assert "unclustered" not in {r["label"] for r in out.rows}
    assert out.options[-1]["value"] == "unclustered" and "not a group" in out.options[-1]["label"]
    assert f"{n_out:,} molecules unclustered" in out.summary
    layers = map_layers(unclustered_store, st.with_(group="unclustered"))
    assert layers.n_molecules == n_out and layers.errors == []


def test_groups_summary_says_when_the_table_is_truncated():
    listing = {"total": 399, "groups": [{}] * 200, "ungrouped": {"label": "unclustered", "size": 0}}
    assert panels.groups_summary(listing, 200) == "showing the 200 largest of 399 groups."
    assert panels.groups_summary({"total": 12}, 12) == "12 groups."


def test_the_map_image_of_group_colours_is_the_services_view_with_the_dashboards_legend(unclustered_store):
    """One palette and one group table: the image the server draws for colour-by-group is the
    services' resolved view (no second copy of the points), coloured exactly as the legend says."""
    st = ViewState(dataset="qm9", view="map", color="group", grouping="cluster")
    layers = map_layers(unclustered_store, st)
    points = shown_points(unclustered_store, st, layers)
    assert points is view_points(unclustered_store, map_query(st, "group"))
    assert list(points.colors.labels) == list(layers.color.labels)
    assert list(points.colors.colors) == list(layers.color.colors)
    drawn = dict(zip(layers.rows.tolist(), np.asarray(layers.color.values).tolist(), strict=True))
    served = dict(zip(points.rows.tolist(), points.colors.codes.tolist(), strict=True))
    assert drawn == served
