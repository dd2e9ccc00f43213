"""A self-contained HTML report of one dataset: verdict, tables and figures, with plotly.js inlined.

It opens offline (no script or style is fetched from anywhere).
"""

from __future__ import annotations

import html as html_lib
import json

import plotly.graph_objects as go

from app.verdict import classifier_rows, regression_rows, similarity_rows, statistic_rows

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border-bottom:1px solid #ddd;padding:4px 10px;text-align:left}
.verdict{font-size:1.3em;font-weight:600}.meta{color:#555}
"""


def _table(header: list[str], rows: list[list[str]]) -> str:
    if not rows:
        return ""
    head = "".join(f"<th>{html_lib.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html_lib.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def static_report_html(report: dict, figures: list[go.Figure]) -> str:
    """The report page as one HTML string; the first figure carries plotly.js inline."""
    esc = html_lib.escape
    parts = [
        f"<h1>OrientScope report: {esc(str(report.get('name', report.get('dataset'))))}</h1>",
        f"<p class='verdict' id='verdict'>{esc((report.get('verdict') or {}).get('text', ''))}</p>",
        f"<p class='meta'>{report.get('n_molecules')} molecules · frame {esc(str(report.get('frame')))}/"
        f"{esc(str(report.get('sign_rule')))} · seed {report.get('seed')} · result {esc(str(report.get('result_key')))} · "
        f"version {esc(str(report.get('version')))}</p>",
        _table(["measure", "dataset", "control"], statistic_rows(report) + classifier_rows(report)),
        _table(["property", "MSE vs mean baseline", "improvement", "control"], regression_rows(report)),
        _table(["similarity–pose coupling", "dataset", "control"], similarity_rows(report)),
    ]
    for i, fig in enumerate(figures):
        parts.append(fig.to_html(full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False}))
    raw = json.dumps(report, default=str, indent=1)
    parts.append(f"<details><summary>Full report (JSON)</summary><pre>{esc(raw)}</pre></details>")
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>OrientScope report</title>"
        f"<style>{_STYLE}</style></head><body>{''.join(parts)}</body></html>"
    )
