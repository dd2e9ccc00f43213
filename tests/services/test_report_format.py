"""Display-ready figures: p-values that underflowed, gains that round to zero, frame-dependent properties, skips."""

import pytest

from orientscope.core.numbers import format_number, format_p, format_percent
from orientscope.services.report_format import (
    FRAME_DEPENDENT_NOTE,
    regression_rows,
    report_sections,
)
from tests.reports import constructed_report


@pytest.mark.parametrize(
    ("p", "text"), [(0.0, "< 1e-300"), (1e-320, "< 1e-300"), (3.2e-12, "3.2e-12"), (0.43, "0.43"), (None, "–")]
)
def test_p_values_never_read_zero(p, text):
    assert format_p(p) == text


@pytest.mark.parametrize(
    ("fraction", "text"),
    [(-5.9e-6, "0.0 %"), (-0.0, "0.0 %"), (0.219, "+21.9 %"), (-0.031, "-3.1 %"), (float("nan"), "–")],
)
def test_percentages_never_read_negative_zero(fraction, text):
    assert format_percent(fraction) == text


def test_numbers_never_read_negative_zero():
    assert format_number(-0.0004) == "0.000" and format_number(-0.001) == "-0.001"


def test_regression_rows_are_display_ready_and_flag_lab_frame_components():
    zpve, alpha = regression_rows(constructed_report())
    assert zpve["label"] == "zpve (Hartree)" and not zpve["frame_dependent"]
    assert zpve["gain"] == 0.219 and zpve["gain_text"] == "+21.9 % ± 0.4"
    assert zpve["control_gain_text"] == "0.0 %" and zpve["error_text"] == "0.781 vs 1.000 of variance"
    assert alpha["frame_dependent"] and alpha["gain_text"].startswith("+35.1 %")
    # Declared in the dataset's metadata after the result was computed: flagged all the same.
    (declared,) = regression_rows(
        {"regression": constructed_report()["regression"][:1], "frame_dependent_properties": ["zpve"]}
    )
    assert declared["frame_dependent"]


def test_sections_in_reading_order_with_control_columns():
    sections = {s.key: s for s in report_sections(constructed_report())}
    assert list(sections) == ["statistics", "classifiers", "regression", "similarity"]
    stats = dict((row[0], row[1:]) for row in sections["statistics"].rows)
    assert stats["KS p-value"] == ("< 1e-300", "0.6")
    assert stats["KL to uniform SO(3), 95% CI"] == ("0.907 [0.896, 0.918]", "-0.001 [-0.003, 0.002]")
    assert sections["regression"].rows[1][0] == "alpha_zz (bohr^3) *"
    assert sections["regression"].notes == [FRAME_DEPENDENT_NOTE]
    assert sections["similarity"].rows[-1] == ("enrichment (neighbours / random)", "4.00, p < 1e-300", "1.00, p 0.5")


def test_a_skipped_stage_gives_its_reason_instead_of_rows():
    report = {"skipped_stages": {"models": "needs 20 molecules", "chemistry.similarity": "needs 2 graphs"}}
    sections = {s.key: s for s in report_sections(report)}
    assert sections["classifiers"].rows == [] and sections["classifiers"].skipped == "needs 20 molecules"
    assert sections["regression"].skipped == "needs 20 molecules"
    assert sections["similarity"].skipped == "needs 2 graphs"
    assert sections["statistics"].skipped is None and sections["statistics"].rows == []


def test_control_report_shows_the_controls_own_figures_not_the_datasets():
    from orientscope.services.report_format import control_report

    report = constructed_report(name="QM9")
    shown = control_report(report)
    zpve, alpha = regression_rows(shown)
    # the control's gains (about 0), never the dataset's +21.9 % / +35.1 %
    assert zpve["gain_text"] == "0.0 %" and alpha["gain_text"] == "0.0 %"
    assert shown["kl"] == report["control"]["kl"] and shown["classifiers"] == report["control"]["classifiers"]
    assert shown["name"] == "QM9 · control" and shown["control"] == {}
    # the control's own verdict by the same rule: the built-in self-check
    assert shown["verdict"]["code"] == "not_detected" and shown["verdict"]["aligned"] is False


def test_headline_answers_in_plain_words_and_names_what_each_classifier_rests_on():
    from orientscope.science.verdict import RULE_VERSION
    from orientscope.services.report_format import REMEDY, headline

    atom_order = {"features": "atom-order", "accuracy": 0.95, "pvalue": 0.0}
    frame = {"features": "frame", "accuracy": 0.68, "ci95": {"accuracy": [0.67, 0.69]}, "pvalue": 0.0}
    h = headline(constructed_report(classifiers=[atom_order, frame]))
    assert h.code == "aligned" and h.aligned is True and h.answer.startswith("Aligned: 4 of 4 tests reject ")
    assert h.badge == "Aligned — strong effect" and h.rule_version == RULE_VERSION
    # the strength comes from the frame-only classifier, never the atom-order figure when another will do
    effect = h.answer[h.answer.index("The effect is") :]
    assert (
        effect == "The effect is strong: the frame classifier's accuracy 68 % [67 %, 69 %] lies above its bar of 60 %."
    )
    assert "0 = uniform" in h.strength and "KL to uniform 0.91 [0.90, 0.92] at N = 1,000" in h.strength
    # what uniform poses give at this N, with enough decimals to be read; the control's KL with its interval
    assert "uniform poses give 95 % of their estimates in [-0.04, 0.04]" in h.strength and "QM9" not in h.strength
    assert "control: -0.001 [-0.003, 0.002]" in h.strength and "about half of its values fall below 0" in h.strength
    assert h.remedy == REMEDY and "random rotations" in h.remedy and "de-biased export" in h.remedy
    # KL first, then the frame-only figure; the atom-order one says it reads file order
    assert h.evidence[0].startswith("KL: 0.91 [0.90, 0.92] against its null at this N (p = ")
    assert h.evidence[1].startswith(
        "frame classifier: 68 % [67 %, 69 %] accuracy (p < 1e-300, Holm p < 1e-300: rejects"
    )
    assert h.evidence[2].startswith("atom-order classifier: 95 %") and "file order" in h.evidence[2]
    assert h.control_answer.startswith("Self-check, the same molecules randomly rotated: Not detected")


def test_the_headline_never_contradicts_the_figures_it_shows():
    """The 290-molecule upload of issue 28: KL far above its control, both classifiers far above chance, KS p 0.62."""
    from orientscope.services.report_format import headline

    report = constructed_report(
        n_molecules=290,
        kl={"value": 0.40, "ci95": [0.29, 0.50], "n": 290, "k": 5},
        ks={"statistic": 0.05, "pvalue": 0.62},
        classifiers=[
            {"features": "frame", "accuracy": 0.63, "pvalue": 1e-10},
            {"features": "atom-order", "accuracy": 0.87, "pvalue": 1e-79},
        ],
    )
    h = headline(report)
    assert report["verdict"]["aligned"] is True and h.code == "aligned"
    assert "no clear preference" not in h.answer and "Not detectably" not in h.answer
    assert h.answer.startswith("Aligned: 3 of 4 tests reject random orientations at α = 0.001 after Holm's adjustment")
    assert (
        "KL 0.40 [0.29, 0.50] (Holm p = " in h.answer
        and "frame classifier's accuracy 63 % (Holm p = 2e-10)" in h.answer
    )
    assert h.answer.index("frame classifier") < h.answer.index("atom-order classifier") and "KS" not in h.answer
    assert h.answer.endswith("The effect is strong: KL 0.40 [0.29, 0.50] at N = 290 lies above its bar of 0.20.")


def test_headline_of_a_set_too_small_for_statistics_says_why():
    from orientscope.services.report_format import headline

    report = {"verdict": {"aligned": None, "text": "Not enough molecules for orientation statistics."},
              "skipped_stages": {"statistics": "needs more than 6 molecules, got 3"}}  # fmt: skip
    h = headline(report)
    assert h.aligned is None and h.kl is None and "got 3" in h.strength and h.remedy == ""


def test_not_detected_on_a_small_set_never_says_there_is_nothing_to_do():
    """Issue 28's false reassurance: 25 molecules (12 full frames) of a truly aligned set, KL 0.29 [-0.07, 1.11].

    Nothing rejects at N = 12, but the KL interval reaches far above its bar: the first screen must not say that
    models cannot learn a preferred pose. A large Haar-like set, whose every size lies below its bar, is cleared.
    """
    from orientscope.services.report_format import headline

    small = constructed_report(
        n_molecules=25,
        kl={"value": 0.29, "ci95": [-0.07, 1.11], "n": 12, "k": 5},
        ks={"statistic": 0.19, "pvalue": 0.93},
        classifiers=[],
    )
    assert small["verdict"]["code"] == "not_detected"
    h = headline(small)
    assert "Nothing to do" not in h.remedy and "cannot learn" not in h.remedy
    assert h.remedy.startswith("None of the verdict's tests detects a preferred pose, but at this size an effect that")
    assert "KL 0.29 [-0.07, 1.11] at N = 12 straddles its bar of 0.20" in h.remedy and "augment" in h.remedy

    uniform = constructed_report(
        kl={"value": 0.01, "ci95": [-0.03, 0.05], "n": 1000, "k": 5},
        ks={"statistic": 0.02, "pvalue": 0.7},
        classifiers=[{"features": "frame", "accuracy": 0.51, "ci95": {"accuracy": [0.48, 0.54]}, "pvalue": 0.3}],
    )
    assert uniform["verdict"]["code"] == "not_detected"
    h = headline(uniform)
    assert h.remedy.startswith("Nothing to do for orientation: none of the verdict's tests detects a preferred pose")
    # the size it cites is one whose interval lies below its bar, with its own numbers
    assert "lies below its bar" in h.remedy and "straddles" not in h.remedy
    # one classifier whose interval reaches its bar is enough to keep the advice to augment
    reaching = constructed_report(
        kl={"value": 0.01, "ci95": [-0.03, 0.05], "n": 1000, "k": 5},
        ks={"statistic": 0.02, "pvalue": 0.7},
        classifiers=[{"features": "frame", "accuracy": 0.56, "ci95": {"accuracy": [0.50, 0.62]}, "pvalue": 0.01}],
    )
    assert reaching["verdict"]["code"] == "not_detected"
    assert "the frame classifier's accuracy 56 % [50 %, 62 %] straddles its bar of 60 %" in headline(reaching).remedy


def test_the_kl_scale_note_stands_only_beside_a_kl():
    """A set of 9 (3 full frames, 5 axes): Bingham's rows but no KL; the note explaining KL's scale has nothing to
    explain there."""
    from orientscope.science.statistics_registry import KL_SCALE_NOTE

    with_kl = {s.key: s for s in report_sections(constructed_report())}["statistics"]
    assert KL_SCALE_NOTE in with_kl.notes
    axial_only = {
        "n_molecules": 9,
        "axial": {"n": 5, "statistic": 5.14, "pvalue": 0.4, "eigenvalues": [0.61, 0.31, 0.09],
                  "preferred_direction": [-0.13, 0.98, 0.15]},
        "control": {"axial": {"n": 5, "statistic": 6.76, "pvalue": 0.24, "eigenvalues": [0.65, 0.29, 0.06],
                              "preferred_direction": [-0.15, 0.95, 0.26]}},
        "skipped_stages": {"statistics.so3": "the SO(3) statistics (KL, KS) need more than 6 molecules"},
    }  # fmt: skip
    stats = {s.key: s for s in report_sections(axial_only)}["statistics"]
    assert stats.rows and all(not row[0].startswith("KL") for row in stats.rows)
    assert KL_SCALE_NOTE not in stats.notes
