"""The verdict panel and the offline report: plain-words answers, readable figures, skipped stages with reasons."""

from __future__ import annotations

import re

from orientscope.app.dashboard import components_of
from orientscope.app.static_report import static_report_html
from orientscope.app.verdict import SKIPPED, VERDICT_TEXT, verdict_children
from orientscope.science.verdict import RULE_VERSION
from tests.app.components import component_text
from tests.reports import aligned_report


def _by_id(children, ident):
    return next(c for root in children for c in components_of(root) if getattr(c, "id", None) == ident)


def test_first_screen_answers_is_it_aligned_how_strongly_and_what_to_do():
    children = verdict_children(aligned_report())
    text = component_text(children)
    headline = _by_id(children, VERDICT_TEXT).children
    assert headline.startswith("Aligned")  # the strength rests on the frame classifier, not on atom order
    assert headline.endswith(
        "The effect is strong: the frame classifier's accuracy 68 % [67 %, 69 %] lies above its bar of 60 %."
    )
    assert "0 = uniform" in text and "0.91" in text and "QM9 0.90" not in text  # no landmark from another N
    assert "Self-check" in text and "Not detected" in text  # the control's own verdict beside it
    assert "random rotations" in text and "de-biased export" in text
    # each classifier's figure says what it rests on; the frame-only one comes first
    frame, atom = text.index("frame classifier: 68 %"), text.index("atom-order classifier: 95 %")
    assert text.index("KL: 0.91 [0.90, 0.92]") < frame
    assert frame < atom and "file order" in text[atom:]
    assert (
        not re.search(r"p 0(?![.0-9])", text) and "p < 1e-300" in text and "-0.0 %" not in text and "−0.0 %" not in text
    )


def test_regression_table_marks_lab_frame_components_and_reads_as_fractions_of_variance():
    children = verdict_children(aligned_report())
    rows = [c for root in children for c in components_of(root) if type(c).__name__ == "Tr"]
    alpha = next(r for r in rows if str(r.children[0].children).startswith("alpha_zz"))
    assert alpha.className == "frame-dependent" and alpha.children[0].children.endswith(" *")
    text = component_text(children)
    assert "lab-frame component" in text and "not a leak" in text
    assert "0.781 vs 1.000 of variance" in text and "e+0" not in text


def test_skipped_stages_are_listed_with_their_reasons_in_the_panel_and_the_report():
    skipped = {"statistics": "needs more than 6 molecules, got 3", "models": "needs at least 20 molecules, got 3"}
    report = {"name": "three small", "n_molecules": 3, "skipped_stages": skipped,
              "verdict": {"aligned": None, "text": "Not enough molecules for orientation statistics."}}  # fmt: skip
    children = verdict_children(report)
    listed = component_text([_by_id(children, SKIPPED)])
    assert "statistics" in listed and "got 3" in listed and "models" in listed and "at least 20" in listed
    page = static_report_html(report, [])
    assert "id='skipped-stages'" in page and "needs more than 6 molecules, got 3" in page
    assert "needs at least 20 molecules, got 3" in page


def test_html_report_names_the_active_group_and_smarts():
    page = static_report_html(
        aligned_report(), [], {"group": "C7H10O2 (formula)", "SMARTS highlight": "C=O (12 matching)"}
    )
    assert "id='active-view'" in page and "C7H10O2 (formula)" in page and "C=O (12 matching)" in page
    assert "Aligned: 4 of 4 tests reject " in page and "Self-check" in page
    assert "id='verdict-badge'>Aligned — strong effect<" in page and f"verdict rule {RULE_VERSION}" in page


def test_a_column_without_any_value_is_left_out():
    from orientscope.services.report_format import control_report

    children = verdict_children(control_report(aligned_report()), main=False)
    heads = [[th.children for th in t.children[0].children.children] for t in _tables(children)]
    assert heads and all("control" not in h and "control gain" not in h for h in heads)
    assert "– vs –" not in component_text(children) and "this set's own random-rotation control" not in component_text(
        children
    )


def _tables(children):
    return [c for root in children for c in components_of(root) if type(c).__name__ == "Table"]


def test_kl_scale_never_shows_a_negative_zero():
    from orientscope.app.verdict import kl_scale

    text = component_text(kl_scale(0.907, -0.0004))
    assert "control 0.00" in text and "-0.00" not in text and "this set 0.91" in text
