"""The report's figures as text, shared by the CLI and the dashboard."""

from backend.services.report import format_kl


def test_format_kl():
    assert format_kl({"value": 0.9012, "ci95": [0.85, 0.951]}) == "0.901 [0.850, 0.951]"
    assert format_kl({"value": 0.5, "ci95": None}) == "0.500 [–, –]"
    assert format_kl({"value": float("nan"), "ci95": [0.1, 0.2]}, "-") == "- [0.100, 0.200]"
    assert format_kl(None) == "–" and format_kl({}, "-") == "-"


def test_report_names_the_frame_dependent_properties_and_the_rows_flag_them(qm9_store):
    from backend.services.report import build_report
    from backend.services.report_format import regression_rows

    report = build_report(qm9_store, "qm9")
    lab_frame = {f"alpha_{c}" for c in ("xx", "xy", "yy", "xz", "yz", "zz")}
    assert set(report["frame_dependent_properties"]) == lab_frame
    flagged = {r["property"] for r in regression_rows(report) if r["frame_dependent"]}
    assert flagged == lab_frame
