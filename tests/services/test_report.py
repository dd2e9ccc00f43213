"""The report's figures as text, shared by the CLI and the dashboard."""

from orientscope.services.report import format_kl


def test_format_kl():
    assert format_kl({"value": 0.9012, "ci95": [0.85, 0.951]}) == "0.901 [0.850, 0.951]"
    assert format_kl({"value": 0.5, "ci95": None}) == "0.500 [–, –]"
    assert format_kl({"value": float("nan"), "ci95": [0.1, 0.2]}, "-") == "- [0.100, 0.200]"
    assert format_kl(None) == "–" and format_kl({}, "-") == "-"


def test_report_names_the_frame_dependent_properties_and_the_rows_flag_them(qm9_store):
    from orientscope.services.report import build_report
    from orientscope.services.report_format import regression_rows

    report = build_report(qm9_store, "qm9")
    lab_frame = {f"alpha_{c}" for c in ("xx", "xy", "yy", "xz", "yz", "zz")}
    assert set(report["frame_dependent_properties"]) == lab_frame
    flagged = {r["property"] for r in regression_rows(report) if r["frame_dependent"]}
    assert flagged == lab_frame


def test_report_verdict_and_the_controls_by_one_rule(qm9_store):
    """The small QM9 store (seeded draw of QM9, its stored poses) and its Haar-rotated control."""
    from orientscope.science.verdict import CODES, DEFAULT_ALPHA, RULE_VERSION
    from orientscope.services.report import build_report

    report = build_report(qm9_store, "qm9")
    v, c = report["verdict"], report["control"]["verdict"]
    assert {"code", "text", "evidence", "alpha", "rule_version", "aligned"} <= set(v)
    assert v["code"] in CODES and v["alpha"] == DEFAULT_ALPHA and v["rule_version"] == RULE_VERSION
    assert v["code"] in ("aligned", "weakly_aligned") and v["aligned"] is True
    assert {e["test"] for e in v["evidence"]} == {
        "KL",
        "KS",
        *(f"{x['features']} classifier" for x in report["classifiers"]),
    }
    assert all({"test", "statistic", "pvalue", "p_holm", "role"} <= set(e) for e in v["evidence"])
    assert c["code"] == "not_detected" and c["aligned"] is False
    assert v["kl_null"]["n"] == report["kl"]["n"] and "seed" in v["kl_null"]["monte_carlo"]
    # the KL interval is for the expected estimate at this N, never narrower than the null's
    lo, hi = report["kl"]["ci95"]
    assert hi - lo >= 2 * 1.96 * v["kl_null"]["sd"] * 0.999


def test_verdict_of_a_uniform_set_says_so_without_negative_zero():
    from orientscope.services.report import verdict

    report = {
        "kl": {"value": -0.001, "ci95": [-0.003, 0.002], "n": 200, "k": 5},
        "ks": {"statistic": 0.04, "pvalue": 0.2},
    }
    out = verdict(report, 200)
    assert out["aligned"] is False and out["code"] == "not_detected"
    assert out["text"].startswith(
        "Not detected: none of the verdict's tests tells these poses from random orientations at α = 0.001"
    )
    assert "-0" not in out["text"]
