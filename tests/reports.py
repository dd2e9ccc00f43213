"""Constructed reports with the shape the pipeline writes, for the tests of what turns them into words."""

from __future__ import annotations

from orientscope.services.report import verdict


def constructed_report(**extra) -> dict:
    """A constructed report with the shape the pipeline writes, its verdicts by the service's rule."""
    report = {
        "n_molecules": 1000,
        "kl": {"value": 0.907, "ci95": [0.896, 0.918], "n": 1000, "k": 5},
        "kl_sign_invariant": {"value": 0.5, "ci95": [0.45, 0.55]},
        "ks": {"statistic": 0.31, "pvalue": 0.0},
        "classifiers": [{"features": "frame", "accuracy": 0.68, "auc": 0.74, "ci95": {"accuracy": [0.67, 0.69]}, "pvalue": 0.0}],
        "regression": [
            {"property": "zpve", "unit": "Hartree", "frame_dependent": False, "improvement": 0.219,
             "improvement_std": 0.004, "mse_normalised": 0.781, "baseline_mse_normalised": 1.0,
             "control_improvement": -5.9e-6},
            {"property": "alpha_zz", "unit": "bohr^3", "frame_dependent": True, "improvement": 0.351,
             "improvement_std": 0.01, "mse_normalised": 0.649, "baseline_mse_normalised": 1.0,
             "control_improvement": 0.0002},
        ],
        "similarity": {"n_pairs": 2000, "nn_within_30deg": 0.4, "random_within_30deg": 0.1, "enrichment": 4.0, "pvalue": 1e-320},
        "control": {
            "kl": {"value": -0.001, "ci95": [-0.003, 0.002], "n": 1000, "k": 5},
            "ks": {"statistic": 0.01, "pvalue": 0.6},
            "classifiers": [{"features": "frame", "accuracy": 0.5, "pvalue": 0.43}],
            "similarity": {"n_pairs": 2000, "nn_within_30deg": 0.1, "random_within_30deg": 0.1, "enrichment": 1.0, "pvalue": 0.5},
        },
        "skipped_stages": {},
    }  # fmt: skip
    report = {**report, **extra}
    report.setdefault("verdict", verdict(report, report["n_molecules"]))
    report["control"].setdefault("verdict", verdict(report["control"], report["n_molecules"]))
    return report


def aligned_report(**extra) -> dict:
    """The constructed report with an atom-order classifier that the frame classifier's strength stands beside."""
    frame = {"features": "frame", "accuracy": 0.68, "auc": 0.74, "ci95": {"accuracy": [0.67, 0.69]}, "pvalue": 0.0}
    return constructed_report(classifiers=[{"features": "atom-order", "accuracy": 0.95, "pvalue": 0.0}, frame], **extra)
