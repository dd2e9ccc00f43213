"""The report's figures as text, shared by the CLI and the dashboard."""

from backend.services.report import format_kl


def test_format_kl():
    assert format_kl({"value": 0.9012, "ci95": [0.85, 0.951]}) == "0.901 [0.850, 0.951]"
    assert format_kl({"value": 0.5, "ci95": None}) == "0.500 [–, –]"
    assert format_kl({"value": float("nan"), "ci95": [0.1, 0.2]}, "-") == "- [0.100, 0.200]"
    assert format_kl(None) == "–" and format_kl({}, "-") == "-"
