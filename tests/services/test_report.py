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


def _qm9_like(frame_acc=0.68, order_acc=0.95, ctl=-0.0004):
    return {
        "kl": {"value": 0.907, "ci95": [0.896, 0.918]},
        "ks": {"pvalue": 0.0},
        "control": {"kl": {"value": ctl}},
        "classifiers": [
            {"features": "frame", "accuracy": frame_acc, "pvalue": 0.0},
            {"features": "frame+composition", "accuracy": 0.73, "pvalue": 0.0},
            {"features": "atom-order", "accuracy": order_acc, "pvalue": 0.0},
        ],
    }


def test_verdict_leads_with_the_scale_and_the_frame_classifier_not_the_atom_order_one():
    from orientscope.services.report import verdict

    text = verdict(_qm9_like())["text"]
    assert text.startswith("Aligned: KL to uniform 0.91 (0 = uniform; control 0.00")
    assert text.index("68%") < text.index("95%") and "file order" in text
    assert "-0.00" not in text


def test_verdict_of_a_uniform_set_says_so_without_negative_zero():
    from orientscope.services.report import verdict

    report = {
        "kl": {"value": -0.001, "ci95": [-0.003, 0.002]},
        "ks": {"pvalue": 0.2},
        "control": {"kl": {"value": -0.002}},
    }
    out = verdict(report)
    assert out["aligned"] is False and out["text"] == "Not detectably aligned: KL 0.00 (control 0.00), KS p = 0.2"
