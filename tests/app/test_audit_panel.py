"""The "Model audit" section: table rows beside the regression, the first view, and the shift colour."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from orientscope.app import ids
from orientscope.app.audit_panel import audit_rows, first_view_props
from orientscope.app.initial_view import color_options
from orientscope.figures.mapview import map_layers
from orientscope.figures.state import ViewState
from orientscope.pipeline.model_audit import run_audit
from orientscope.science.model_audit import AuditSettings
from orientscope.store.datasets import load_dataset


@pytest.fixture(scope="module")
def audited(qm9_store, tmp_path_factory):
    """A store copy with one audit of 'gap' covering every other molecule (a model off by a pose term)."""
    data_dir = tmp_path_factory.mktemp("audit-panel") / "data"
    shutil.copytree(qm9_store / "datasets", data_dir / "datasets")
    mols = load_dataset(data_dir, "qm9")
    half = np.arange(0, mols.n_molecules, 2)
    gap = mols.properties["gap"].to_numpy()[half]
    rng = np.random.default_rng(0)
    rows = [
        f"{mols.ids[i]},gap,{g + 0.001 * rng.normal():.9g},{g + 0.01 * rng.normal():.9g}\n"
        for i, g in zip(half, gap, strict=True)
    ]
    path = data_dir / "p.csv"
    path.write_text("id,property,stored,rotated\n" + "".join(rows))
    record = run_audit(data_dir, "qm9", path, "half", settings=AuditSettings(n_bootstrap=200, n_permutations=5000))
    return data_dir, record, half


def test_rows_put_the_pose_alone_gain_beside_the_reliance(audited):
    _, record, half = audited
    (row,) = audit_rows(record)
    assert row["property"] == "gap" and row["split"] == "all" and row["n"] == f"{len(half):,}"
    assert row["pose_alone"].endswith("%") and row["tier"] == "leans"
    assert row["reliance"] == "> +1,000 %"  # 1e-6 on stored poses, 1e-4 on copies: the percent cap
    # The rotation shift beside the reliance, in the property's unit (gap: Ha), with its interval.
    (entry,) = record["properties"]
    assert row["shift_median"] == f"{entry['shift_median']:.3g} Ha" and row["shift_p95_ci"].startswith("[")


def test_first_view_shows_the_newest_audit(audited):
    data_dir, record, _ = audited
    props = first_view_props(data_dir, "qm9")
    assert props[ids.AUDIT_SELECT]["value"] == record["id"]
    assert props[ids.AUDIT_TABLE]["data"][0]["tier"] == "leans"
    texts = str(props[ids.AUDIT_TEXT]["children"])
    assert "Tiers by audit rule 3 (margin ±1.0 %, no max_shift)" in texts and "predictions file" in texts
    assert first_view_props(data_dir, None)[ids.AUDIT_TABLE]["data"] == []


def test_prediction_shift_colour_greys_molecules_outside_the_audit(audited):
    data_dir, record, half = audited
    value = f"shift:{record['id']}:gap"
    assert value in [o["value"] for o in color_options(data_dir, "qm9")]
    layers = map_layers(data_dir, ViewState(dataset="qm9", view="map", color=value))
    assert layers.color.kind == "continuous" and "prediction shift" in layers.color.title
    shown = layers.color.values
    n_nan = int(np.isnan(shown).sum())
    assert 0 < n_nan < shown.size and n_nan == 3 * (layers.n_molecules - len(half))  # three axes per molecule
    bad = map_layers(data_dir, ViewState(dataset="qm9", view="map", color="shift:anosuch:gap"))
    assert bad.color.title == "axis" and any("anosuch" in n for n in bad.notes)
