"""The audit's statistics on constructed errors with known answers."""

from __future__ import annotations

import re

import numpy as np
import pytest

from orientscope.science import model_audit as sci
from orientscope.science.audit_verdict import AUDIT_RULE_VERSION, Decision, reread_verdict, verdict

SETTINGS = sci.AuditSettings(n_bootstrap=500, n_permutations=20_000)


def test_molecule_errors_average_over_copies_first():
    # Molecule 0 has two copies, molecule 5 one; true 1.0 everywhere.
    e = sci.molecule_errors([5, 0, 0], stored=[2.0, 1.0, 1.0], rotated=[3.0, 2.0, 4.0], true=[1.0, 1.0, 1.0])
    np.testing.assert_array_equal(e.molecule, [0, 5])
    np.testing.assert_array_equal(e.n_copies, [2, 1])
    np.testing.assert_allclose(e.se_stored, [0.0, 1.0])
    np.testing.assert_allclose(e.se_rotated, [(1 + 9) / 2, 4.0])
    np.testing.assert_allclose(e.ae_rotated, [2.0, 2.0])
    np.testing.assert_allclose(e.shift, [np.sqrt((1 + 9) / 2), 1.0])
    np.testing.assert_allclose(e.shift_max, [3.0, 1.0])  # the largest |rotated - stored| over each one's copies
    np.testing.assert_allclose(e.copy_spread[0], np.std([2.0, 4.0], ddof=1))
    assert np.isnan(e.copy_spread[1])


def test_holm_known_values():
    assert sci.holm([0.01, 0.04, 0.03, None]) == pytest.approx([0.03, 0.06, 0.06, None], nan_ok=True)
    assert sci.holm([0.5, 0.9]) == [1.0, 1.0]


def _errors(rng, n, extra):
    true = rng.normal(size=n)
    stored = true + rng.normal(0, 1, n)
    rotated = true + rng.normal(0, 1 + extra, n)
    return sci.molecule_errors(np.arange(n), stored, rotated, true)


def test_exchangeable_poses_are_robust_to_a_wide_margin_but_never_called_fixed():
    f = sci.audit_figures(_errors(np.random.default_rng(0), 500, 0.0), SETTINGS, seed=1)
    assert f["pvalue"] > 0.01 and f["ci95"]["reliance"][0] < 0 < f["ci95"]["reliance"][1]
    p = sci.holm([f["pvalue"]])[0]
    # ±1 %: the CI (about ±15 % on 500 molecules) straddles both margins, so nothing is settled.
    v = verdict(f, p, frame_dependent=False, regression=None)
    assert v["code"] == "inconclusive" and "both the -1.0 % and the +1.0 % margins" in v["text"]
    wide = verdict(f, p, False, None, Decision(margin=0.5))
    assert wide["code"] == "robust" and "rotation shift median" in wide["text"] and "max_shift" in wide["text"]
    assert "fixed" not in wide["text"] and "no reliance" not in wide["text"].lower()


def test_leans_when_rotated_errors_grow():
    f = sci.audit_figures(_errors(np.random.default_rng(0), 500, 0.5), SETTINGS, seed=1)
    assert f["reliance"] > 0.5 and f["pvalue"] < 1e-3 and f["test"]["method"].endswith("permutations")
    gain = {"improvement": 0.3, "improvement_std": 0.02, "control_improvement": 0.0}
    v = verdict(f, f["pvalue"], frame_dependent=False, regression=gain)
    assert v["code"] == "leans" and "shortcut through the pose is plausible" in v["text"]
    v = verdict(f, f["pvalue"], False, {"improvement": 0.0, "improvement_std": 0.01, "control_improvement": 0.0})
    assert "out of distribution" in v["text"]
    # On the training split, the same increase is unseen inputs, not a shortcut.
    v = verdict(f, f["pvalue"], False, gain, split="train")
    assert (
        v["code"] == "leans" and "never saw" in v["text"] and "shortcut through the pose is plausible" not in v["text"]
    )


def test_normal_approximation_agrees_with_permutations():
    d = np.random.default_rng(3).normal(0.08, 1.0, 1500)
    exact = sci.sign_flip_test(d, sci.AuditSettings(n_permutations=50_000, max_permutation_molecules=2000), 0)
    approx = sci.sign_flip_test(d, sci.AuditSettings(max_permutation_molecules=10), 0)
    assert approx["method"] == "sign-flip, normal approximation" and approx["n_permutations"] == 0
    assert approx["pvalue"] == pytest.approx(exact["pvalue"], abs=0.01)


def test_bootstrap_is_seeded():
    values = np.random.default_rng(0).normal(size=(300, 2))
    np.testing.assert_array_equal(sci.bootstrap_means(values, 50, 4), sci.bootstrap_means(values, 50, 4))
    assert not np.array_equal(sci.bootstrap_means(values, 50, 4), sci.bootstrap_means(values, 50, 5))


def test_invariant_and_zero_error_cases():
    n = 50
    true = np.linspace(1, 2, n)
    e = sci.molecule_errors(np.arange(n), true, true, true)  # a perfect, invariant model
    f = sci.audit_figures(e, SETTINGS, seed=0)
    assert f["invariant"] and f["reliance"] == 0 and f["ci95"]["reliance"] == [0, 0] and f["reliance_floored"]
    assert f["shift_max"] == 0 and f["shift_median"] == 0 and f["shift_p95_ci95"][0] == 0
    v = verdict(f, 1.0, False, None)
    assert v["code"] == "invariant" and v["decided_by"] == "shift_max"
    assert verdict(f, 1.0, True, None)["code"] == "frame_dependent"
    # A prediction that moves by 1e-5 on one molecule is no longer invariant (the tolerance is 1e-6 of ~1.5).
    moved = true.copy()
    moved[3] += 1e-5
    f = sci.audit_figures(sci.molecule_errors(np.arange(n), true, moved, true), SETTINGS, seed=0)
    assert not f["invariant"] and f["shift_max"] == pytest.approx(1e-5)
    assert verdict(f, 1.0, False, None)["code"] != "invariant"


def test_spearman_and_deciles_with_missing_scores():
    rng = np.random.default_rng(2)
    e = _errors(rng, 400, 0.3)
    scores = e.shift + rng.normal(0, 0.01, 400)
    scores[:10] = np.nan
    f = sci.audit_figures(e, SETTINGS, seed=0, scores=scores, control_scores=rng.uniform(size=400))
    assert f["shift_vs_score"]["rho"] > 0.9 and f["shift_vs_score"]["n"] == 390
    lo, hi = f["shift_vs_control_score"]["ci95"]
    assert lo < 0 < hi
    assert [d["decile"] for d in f["reliance_by_decile"]] == list(range(1, 11))
    assert sum(d["n"] for d in f["reliance_by_decile"]) == 390
    missing = sci.audit_figures(e, SETTINGS, seed=0)
    assert missing["shift_vs_score"]["rho"] is None and "models stage" in missing["shift_vs_score"]["reason"]


def test_units_warning_names_its_split():
    assert "units" in sci.units_warning(10.0, 1.0, "eV") and "over all molecules" in sci.units_warning(10.0, 1.0)
    assert "on split 'test'" in sci.units_warning(10.0, 1.0, "eV", "test")
    assert sci.units_warning(0.5, 1.0) is None


def test_a_constant_prediction_at_the_mean_is_no_units_warning():
    # Predicting the mean has an MSE equal to the variance; in floating point it lands just above it on
    # about a third of such sets (seed 3 here), and the warning then read "(0.00285) is above the
    # property's variance (0.00285)".
    y = np.random.default_rng(3).normal(0.25, 0.05, 150)
    mean = np.full(450, y.mean())
    errors = sci.molecule_errors(np.repeat(np.arange(150), 3), mean, mean, np.repeat(y, 3))
    mse = sci.audit_figures(errors, SETTINGS, seed=0)["mse_stored"]
    assert mse > np.var(y)  # the rounding this guards against
    assert sci.units_warning(mse, float(np.var(y))) is None
    # A model a hair worse than the mean is flagged with numbers that read apart.
    text = sci.units_warning(0.0028512, 0.0028504)
    shown = [float(x) for x in re.findall(r"\(([0-9.e+-]+)\)", text)]
    assert shown == [0.002851, 0.00285] and shown[0] > shown[1]


def test_units_warning_writes_the_mse_above_the_variance_as_it_says():
    """A constant near the mean: MSE = variance + bias², here 1.3812 against 1.3800, both 1.38 at .3g."""
    text = sci.units_warning(1.3812, 1.38)
    assert "(1.381) is above the property's variance (1.38)" in text
    assert "(1.3e-05) is above the property's variance (1.2e-05)" in sci.units_warning(1.3e-5, 1.2e-5)


def test_a_memoriser_leans_on_the_pose():
    # Exact on its training set (stored-pose MSE 0), a little off on the rotated copies.
    rng = np.random.default_rng(4)
    true = rng.normal(size=300)
    e = sci.molecule_errors(np.arange(300), true, true + rng.normal(0, 0.05, 300), true)
    f = sci.audit_figures(e, SETTINGS, seed=0)
    assert f["mse_stored"] == 0 and f["reliance_floored"] and f["mse_increase"] == pytest.approx(f["mse_rotated"])
    assert f["reliance"] > 100 and f["ci95"]["reliance"][0] > 0.01
    v = verdict(f, f["pvalue"], False, None)
    assert v["code"] == "leans" and "n/a" not in v["text"] and "floor" in v["text"]
    # the ratio is capped in words, never "+100000000.0 %"; the reason is unseen inputs
    assert "> +1,000 %" in v["text"] and "unseen inputs" in v["text"] and "00000" not in v["text"]
    # the floor the ratio reads against is stated: 10⁻⁶ of the property's variance
    assert f["mse_floor"] == pytest.approx(1e-6 * np.var(true), rel=0.01)
    assert f"against the stored-pose MSE's floor of {f['mse_floor']:.3g}" in v["text"]
    # an audit stored before the floor (reliance null) is re-read by the current rule
    old = {**f, "reliance": None, "ci95": {**f["ci95"], "reliance": None}, "pvalue_holm": f["pvalue"],
           "verdict": {"code": "no_reliance", "text": "change the MSE by n/a", "rule_version": 1}}  # fmt: skip
    reread = reread_verdict(old, frame_dependent=False)
    assert reread["code"] == "leans" and reread["reread"] and reread["stored_rule_version"] == 1


def test_suggestive_but_not_significant_is_inconclusive():
    f = {"mse_stored": 1.0, "mse_rotated": 1.138, "reliance": 0.138, "invariant": False, "shift_max": 0.9,
         "shift_tolerance": 1e-12, "ci95": {"reliance": [0.060, 0.232]}}  # fmt: skip
    v = verdict(f, 0.0033, False, None)
    assert v["code"] == "inconclusive" and v["text"].startswith("Inconclusive") and "+13.8 %" in v["text"]
    assert "is not below α = 0.001" in v["text"] and v["rule_version"] == AUDIT_RULE_VERSION
    f["ci95"]["reliance"] = [-0.02, 0.3]
    assert verdict(f, 0.03, False, None)["code"] == "inconclusive"
    assert verdict(f, 1e-5, False, None)["code"] == "inconclusive"  # significant, but may be under the margin


def test_quantile_interval_covers_the_true_quantile():
    """The order-statistic CI of the median and of the 95th percentile covers the truth (exponential, known
    quantiles) in at least ~95 % of 400 seeded samples of 300 values."""
    rng = np.random.default_rng(11)
    truth = {0.5: np.log(2.0), 0.95: -np.log(0.05)}
    for q, value in truth.items():
        covered = 0
        for _ in range(400):
            est, (low, high) = sci.quantile_ci(rng.exponential(size=300), q)
            covered += low <= value <= high
        assert covered / 400 >= 0.93, (q, covered)
    # Too few values beyond the 95th percentile for an upper bound: None, not a made-up number.
    est, (low, high) = sci.quantile_ci(np.arange(20.0), 0.95)
    assert high is None and low is not None and est == pytest.approx(18.05)
