"""The first screen's pieces (issue 40): the verdict's badge, what to do with its downloads, the evidence
collapsed below, the frames' notes apart from it; the downloads' export requests."""

from __future__ import annotations

import pytest
from dash import html

from orientscope.app import downloads, ids
from orientscope.app.dashboard import components_of
from orientscope.app.verdict import (
    VERDICT_BADGE,
    VERDICT_EVIDENCE,
    VERDICT_TEXT,
    first_screen_children,
    frame_children,
    verdict_badge,
)
from orientscope.pipeline.export import ExportRequest
from tests.app.components import component_text
from tests.reports import aligned_report


def test_the_badge_shows_the_verdicts_own_words_else_its_code():
    report = aligned_report()
    report["verdict"].pop("badge", None)  # a result without the verdict's own words: its code
    assert verdict_badge(report).children == "aligned" and "aligned" in verdict_badge(report).className.split()
    report["verdict"]["badge"] = "Aligned — strong effect"
    assert verdict_badge(report).children == "Aligned — strong effect"
    quiet = {"verdict": {"aligned": False, "code": "not_detected", "text": "Not detected: no test rejects."}}
    assert verdict_badge(quiet).children == "not_detected" and "not-aligned" in verdict_badge(quiet).className


def test_the_first_screen_leads_with_the_badge_and_what_to_do_and_keeps_the_evidence_one_click_away():
    report = aligned_report(degenerate_reasons={"eigen_gap_12": 3})
    children = first_screen_children(report)
    assert children[0].id == VERDICT_BADGE
    todo = children[1]
    buttons = [c for c in todo.children if isinstance(c, html.Button)]
    assert "What to do" in component_text(todo) and "de-biased" in component_text(todo)
    assert [b.id for b in buttons] == [{"type": ids.DOWNLOAD, "kind": kind} for kind in downloads.DOWNLOADS]
    evidence = children[-1]
    assert (
        isinstance(evidence, html.Details) and evidence.id == VERDICT_EVIDENCE and not getattr(evidence, "open", None)
    )
    # the answer that names its tests and their p-values is inside it, not on the first screen
    shown = [c for c in children if c is not evidence]
    assert "Holm p" not in component_text(shown) and "Holm p" in component_text(evidence)
    assert any(getattr(c, "id", None) == VERDICT_TEXT for c in components_of(evidence))
    # the frames' notes (and the degeneracy codes) are said under the map, not here
    assert "eigen_gap_12" not in component_text(children) and "eigen_gap_12" in component_text(frame_children(report))


def test_each_download_asks_for_the_export_the_cli_writes():
    assert downloads.export_request("debiased") == ExportRequest("random")
    copies = downloads.export_request("copies")
    assert copies == ExportRequest("random", "extxyz", copies=downloads.AUDIT_COPIES)
    with pytest.raises(ValueError, match="unknown download 'all'; known: debiased, copies"):
        downloads.export_request("all")


def test_a_limited_result_says_it_is_a_subset_in_the_dashboard_and_the_cli():
    # `orientscope report qm9 --limit 2000` makes that result the active one: the dashboard then showed
    # "QM9: 2000 molecules" beside a dataset listed with 130,831, without a word on the subset.
    from orientscope.cli import format_report
    from tests.reports import constructed_report

    report = constructed_report(name="QM9", dataset="qm9", n_molecules=2000, limit=2000, frame="pca",
                                sign_rule="max", seed=1, n_degenerate=3, degenerate_reasons={"sign_tie_1": 3})  # fmt: skip
    said = "2,000 molecules (an evenly spread subset: --limit 2,000)"
    assert component_text(frame_children(report)).startswith(f"QM9: {said}, frame pca/max, seed 1")
    assert format_report(report).splitlines()[0] == f"QM9 (qm9): {said}, frame pca/max, seed 1"
    whole = {**report, "limit": None, "n_molecules": 130_831}
    assert component_text(frame_children(whole)).startswith("QM9: 130,831 molecules, frame")
