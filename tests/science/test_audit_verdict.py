"""The model audit's tiers on constructed figures: each tier, the figure that decided it, and its words."""

from __future__ import annotations

import numpy as np
import pytest

from orientscope.science import model_audit as sci
from orientscope.science.audit_verdict import FAIL_ON, TIERS, Decision, passes, verdict

SETTINGS = sci.AuditSettings(n_bootstrap=400, n_permutations=20_000)


def _figures(reliance, ci, shift_p95=0.02, shift_max=0.05, unit="Ha", **more) -> dict:
    return {
        "n": 1000, "unit": unit, "mse_stored": 1.0, "mse_rotated": 1.0 + reliance, "reliance": reliance,
        "ci95": {"reliance": ci}, "shift_median": shift_p95 / 2, "shift_median_ci95": [shift_p95 / 2.2, shift_p95 / 1.8],
        "shift_p95": shift_p95, "shift_p95_ci95": [shift_p95 * 0.9, shift_p95 * 1.1], "shift_max": shift_max,
        "shift_tolerance": 1e-9, **more,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("reliance", "ci", "p", "decision", "code", "decided_by"),
    [
        (0.47, [0.39, 0.55], 1e-20, Decision(), "leans", "reliance_ci95"),
        (0.47, [0.39, 0.55], 0.01, Decision(), "inconclusive", "reliance_ci95"),  # p not below α
        (0.02, [0.005, 0.035], 1e-6, Decision(), "inconclusive", "reliance_ci95"),  # may be under the margin
        (-0.003, [-0.008, 0.006], 0.5, Decision(), "robust", "reliance_ci95"),
        (-0.003, [-0.008, 0.006], 0.5, Decision(max_shift=0.05), "robust", "shift_p95"),
        (-0.003, [-0.008, 0.006], 0.5, Decision(max_shift=0.01), "inconclusive", "shift_p95"),
        (-0.003, [-0.025, 0.018], 0.5, Decision(), "inconclusive", "reliance_ci95"),  # straddles both margins
        (-0.003, [-0.025, 0.018], 0.5, Decision(margin=0.03), "robust", "reliance_ci95"),
        (-0.048, [-0.082, -0.011], 1e-4, Decision(), "better_rotated", "reliance_ci95"),
        (-0.048, [-0.082, -0.005], 1e-4, Decision(), "inconclusive", "reliance_ci95"),  # negative, not wholly below
    ],
)
def test_tier_and_the_figure_that_decided_it(reliance, ci, p, decision, code, decided_by):
    v = verdict(_figures(reliance, ci), p, False, None, decision)
    assert (v["code"], v["decided_by"]) == (code, decided_by), v["text"]
    assert v["code"] in TIERS and v["margin"] == decision.margin and v["max_shift"] == decision.max_shift
    # The figure that decided is in the words: the interval, or the shift against max_shift.
    if decided_by == "reliance_ci95" and code != "leans":
        assert "reliance CI" in v["text"]
    if decided_by == "shift_p95":
        assert "95th percentile 0.02 Ha is within" in v["text"] or "exceeds max_shift 0.01 Ha" in v["text"]


@pytest.mark.parametrize(
    ("ci", "p", "decision", "code", "says"),
    [
        # A bound within 0.05 points of the ±1 % margin: one decimal would print it as the margin itself.
        ([-0.0096, 0.0097], 0.5, Decision(), "robust", "Robust to the ±1.00 % margin: the reliance CI lies inside it"),
        ([0.0104, 0.02], 1e-5, Decision(), "leans", "the reliance CI lies above the +1.00 % margin"),
        ([-0.005, 0.0102], 0.5, Decision(), "inconclusive", "the reliance CI reaches above the +1.00 % margin"),
        (
            [-0.005, 0.005],
            0.5,
            Decision(max_shift=0.233),
            "inconclusive",
            "percentile 0.2333 Ha exceeds max_shift 0.233 Ha",
        ),
        (
            [-0.005, 0.005],
            0.5,
            Decision(max_shift=0.2334),
            "robust",
            "percentile 0.2333 Ha is within max_shift 0.2334 Ha",
        ),
    ],
)
def test_a_bound_beside_its_bar_is_written_on_the_side_the_words_say(ci, p, decision, code, says):
    """Words never contradict the numbers beside them: "+1.0 %" never "reaches above" a "+1.0 %" margin."""
    v = verdict(_figures(0.0, ci, shift_p95=0.2333), p, False, None, decision)
    assert v["code"] == code and says in v["text"], v["text"]
    if decision.max_shift is None:
        low, high = (f"{100 * x:+.2f} %" for x in ci)
        assert f"[{low}, {high}]" in v["text"]
    else:
        assert "95th percentile 0.2333 Ha [0.21, 0.257]" in v["text"]  # the shift figure in the same digits


def test_the_table_writes_the_reliance_in_the_digits_of_its_tier_text():
    from orientscope.services.audit_table import audit_rows

    figures = _figures(0.002, [-0.005, 0.0102])
    entry = {**figures, "property": "gap", "split": None, "verdict": verdict(figures, 0.5, False, None)}
    (row,) = audit_rows({"properties": [entry]})
    assert (row["reliance"], row["reliance_ci"], row["tier"]) == ("+0.20 %", "[-0.50 %, +1.02 %]", "inconclusive")
    far = {**entry, **_figures(0.47, [0.39, 0.55])}
    assert audit_rows({"properties": [far]})[0]["reliance_ci"] == "[+39.0 %, +55.0 %]"  # one decimal where it does
    from orientscope import compare_audits  # the notebook's comparison writes it alike

    html = compare_audits({"name": "m", "properties": [{**entry, "n": 1000}]})._repr_html_()
    assert "<td>+0.20 % [-0.50 %, +1.02 %]</td>" in html and "data-tier='inconclusive'" in html


def test_a_moving_prediction_is_never_called_fixed_and_a_robust_text_gives_the_shift():
    for reliance, ci in ((0.0, [-0.005, 0.005]), (-0.3, [-0.4, -0.2]), (0.01, [-0.02, 0.04])):
        text = verdict(_figures(reliance, ci), 0.5, False, None)["text"]
        assert "fixed" not in text and "no reliance" not in text.lower() and "no detectable" not in text.lower()
        assert "rotation shift median 0.01 Ha [0.00909, 0.0111], 95th percentile 0.02 Ha [0.018, 0.022]" in text


def test_a_negative_reliance_says_the_model_does_better_on_rotated_copies():
    inconclusive = verdict(_figures(-0.048, [-0.082, -0.005]), 1e-4, False, None)["text"]
    assert "the error is lower on rotated copies than on the stored poses" in inconclusive
    assert "reliance -4.8 % [-8.2 %, -0.5 %]" in inconclusive
    # A CI that reaches below the margin but also above 0 claims no direction.
    open_ = verdict(_figures(-0.002, [-0.014, 0.0097]), 0.7, False, None)["text"]
    # (+0.97 % is written +0.97 %, not +1.0 % beside the margin, so the margin reads -1.00 %)
    assert "lower on rotated copies than" not in open_ and "reaches below the -1.00 % margin" in open_
    better = verdict(_figures(-0.048, [-0.082, -0.011]), 1e-4, False, None)["text"]
    assert better.startswith("Better on rotated copies") and "does worse on the stored poses" in better


def test_the_training_split_and_included_training_molecules_are_named():
    f = _figures(2.02, [1.8, 2.2], n_train=800)
    assert "never saw" in verdict(f, 1e-9, False, None, split="train")["text"]
    text = verdict(f, 1e-9, False, None)["text"]
    assert "Training molecules are included: 800 of the 1,000 molecules are marked train" in text
    assert "Training molecules are included" not in verdict(_figures(2.02, [1.8, 2.2]), 1e-9, False, None)["text"]


def test_stored_special_ratio_is_never_read_against_the_tier():
    """A lab-frame model fitted on the stored poses leans while its stored prediction sits no further from the
    copies than the copies from one another (ratio ~1): the words read the errors, never the ratio."""
    rng = np.random.default_rng(3)
    n, k = 800, 5
    true = rng.normal(size=n)
    pose = rng.normal(size=(n, k + 1))  # the model's prediction moves with the pose ...
    stored = true + 0.1 * rng.normal(size=n)  # ... and is accurate at the stored pose, where it was fitted
    rotated = stored[:, None] + pose[:, 1:] - pose[:, :1]
    e = sci.molecule_errors(np.repeat(np.arange(n), k), np.repeat(stored, k), rotated.ravel(), np.repeat(true, k))
    f = sci.audit_figures(e, SETTINGS, seed=0)
    assert 0.8 < f["stored_special_ratio"] < 1.2
    v = verdict(f, f["pvalue"], False, None)
    assert v["code"] == "leans" and "merely not invariant" not in v["text"] and "special" not in v["text"]


def test_decision_and_gate_refuse_bad_values_by_name():
    with pytest.raises(ValueError, match="margin must be a fraction"):
        Decision(margin=-0.1)
    with pytest.raises(ValueError, match="max_shift must be a number >= 0"):
        Decision(max_shift=float("nan"))
    with pytest.raises(ValueError, match=r"unknown fail-on 'lean'; expected one of \['leans', 'not-robust'"):
        passes("leans", "lean")
    assert [t for t in TIERS if passes(t, "not-robust")] == ["invariant", "robust"]
    assert not passes("leans", "leans") and passes("inconclusive", "leans")
    assert set(FAIL_ON) == {"leans", "not-robust", "not-invariant"}
