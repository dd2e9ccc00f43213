"""A constant or all-missing property is left out of the orientation-only regression, with a note wherever the
regression table is shown (a zero-variance baseline read as "+100.0 % ± 0.0, control +100.0 %")."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from orientscope.pipeline.precompute import make_params, precompute
from orientscope.science.frames import compute_frames
from orientscope.services.report import build_report
from orientscope.services.report_format import report_sections
from orientscope.store.results import ResultStore
from orientscope.store.shards import save_sharded

N = 150  # above the regression's 100-molecule minimum


@pytest.fixture(scope="module")
def with_constants(qm9_small, tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("left-out")
    # molecules with a full frame only: the regression scores no other, and the test below refits on every row
    frames = compute_frames(qm9_small.positions_angstrom, qm9_small.offsets, qm9_small.atomic_numbers)
    mols = qm9_small.subset(np.flatnonzero(frames.orientation == "full")[:N])
    props = mols.properties[["zpve", "gap"]].copy()
    props["tag"] = 446.0  # what the server's old XYZ comment made of a dataset id: one value everywhere
    props["empty"] = np.nan
    props.loc[3, "empty_but_one"] = 2.5  # one value: constant over the molecules that have it
    mols = replace(mols, properties=props, frame_dependent=frozenset())
    save_sharded(data_dir, "consts", mols, name="Consts", source="constructed", shard_size=60)
    params = make_params(seed=0)
    precompute(data_dir, "consts", params, stages=["frames", "models"])
    return data_dir, params


def test_constant_and_missing_properties_are_left_out_with_their_reason(with_constants):
    data_dir, params = with_constants
    report = build_report(data_dir, "consts", params)
    assert [r["property"] for r in report["regression"]] == ["zpve", "gap"]
    assert report["regression_left_out"] == [
        {"property": "tag", "reason": "constant", "value": 446.0},
        {"property": "empty", "reason": "missing", "value": None},
        {"property": "empty_but_one", "reason": "constant", "value": 2.5},
    ]
    for row in report["regression"]:  # the kept columns are the ones scored: their control is about 0
        assert abs(row["control_improvement"]) < 0.05 and row["baseline_mse"] > 0


def test_the_kept_rows_are_the_regression_of_the_kept_columns(with_constants):
    """The columns are selected before the fit: each kept row is the regression on the arrays of its column."""
    from orientscope.pipeline.shard_regression import REGRESSION
    from orientscope.science.regression import orientation_regression
    from orientscope.science.rotations import derived_seed
    from orientscope.store.datasets import load_dataset

    data_dir, params = with_constants
    report = build_report(data_dir, "consts", params)
    y = load_dataset(data_dir, "consts").properties[["zpve", "gap"]].to_numpy(np.float64)
    table = ResultStore(data_dir, "consts", params).table("frames", "original").to_pandas()
    rotations = table[[f"r{i}{j}" for i in range(3) for j in range(3)]].to_numpy().reshape(-1, 3, 3)
    expected = orientation_regression(rotations, y, REGRESSION, derived_seed(0, "models:regression"))
    for j, row in enumerate(report["regression"]):
        assert row["improvement"] == pytest.approx(expected["improvement"][j], rel=1e-12, abs=1e-15)


def test_the_note_is_under_the_regression_table_on_every_surface(with_constants):
    from orientscope.app.static_report import static_report_html
    from orientscope.cli import format_report

    data_dir, params = with_constants
    report = build_report(data_dir, "consts", params)
    (section,) = [s for s in report_sections(report) if s.key == "regression"]
    note = (
        "Left out of the regression, as there is nothing to predict: tag (constant: 446 for every molecule), "
        "empty (no values), empty_but_one (constant: 2.5 for every molecule)."
    )
    assert note in section.notes
    assert [row[0] for row in section.rows] == ["zpve (Ha)", "gap (Ha)"]
    assert note in format_report(report)
    assert note in static_report_html(report, [])


def test_every_property_constant_skips_the_regression_and_says_why(qm9_small, tmp_path):
    mols = qm9_small.subset(np.arange(120))
    props = mols.properties[["zpve"]].copy()
    props["zpve"] = 1.0
    save_sharded(tmp_path, "flat", replace(mols, properties=props, frame_dependent=frozenset()), name="F", source="t")
    params = make_params(seed=0)
    precompute(tmp_path, "flat", params, stages=["frames", "models"])
    report = build_report(tmp_path, "flat", params)
    assert report["regression"] == []
    assert report["skipped_stages"]["models.regression"] == (
        "every numeric property is constant or missing: there is nothing to predict"
    )
    (section,) = [s for s in report_sections(report) if s.key == "regression"]
    assert section.notes == [
        "Left out of the regression, as there is nothing to predict: zpve (constant: 1 for every molecule)."
    ]
