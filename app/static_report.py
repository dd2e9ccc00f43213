"""A self-contained HTML report of one dataset: verdict, tables and figures, with plotly.js inlined.

It opens offline (no script or style is fetched from anywhere). Wording and numbers come
from ``orientscope.services.report_format``, as in the dashboard and the CLI report.
"""

from __future__ import annotations

import html as html_lib
import json

import plotly.graph_objects as go

from orientscope.services.report_format import headline, report_sections, warnings

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border-bottom:1px solid #ddd;padding:4px 10px;text-align:left}
.badge{font-size:1.5em;font-weight:700;margin-bottom:0}.verdict{font-size:1.1em}.meta,.note{color:#555}.skipped{background:#fff4e0;padding:6px 10px}
"""


def _html_table(header, rows) -> str:
    if not rows:
        return ""
    head = "".join(f"<th>{html_lib.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html_lib.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _sections(report: dict) -> list[str]:
    esc = html_lib.escape
    parts = []
    for s in report_sections(report):
        if not s.rows and not s.skipped:
            continue
        parts.append(f"<h2>{esc(s.title)}</h2>{_html_table(s.header, s.rows)}")
        if s.skipped:
            parts.append(f"<p class='skipped'>Not computed: {esc(s.skipped)}</p>")
        parts += [f"<p class='note'>{esc(n)}</p>" for n in s.notes]
    return parts


def _skipped_html(report: dict) -> str:
    skipped = report.get("skipped_stages") or {}
    if not skipped:
        return ""
    items = "".join(f"<li><code>{html_lib.escape(k)}</code>: {html_lib.escape(v)}</li>" for k, v in skipped.items())
    return f"<div class='skipped' id='skipped-stages'><strong>Skipped stages</strong><ul>{items}</ul></div>"


def static_report_html(report: dict, figures: list[go.Figure], view: dict[str, str] | None = None) -> str:
    """The report page as one HTML string; the first figure carries plotly.js inline.

    ``view``: what the dashboard was showing when the report was made ({"SMARTS highlight": "C=O",
    "group": "C7H10O2 (formula)"}); the figures are of that view and the report says so.
    """
    esc = html_lib.escape
    h = headline(report)
    shown = "".join(f"<li>{esc(k)}: {esc(v)}</li>" for k, v in (view or {}).items() if v)
    parts = [
        f"<h1>OrientScope report: {esc(str(report.get('name', report.get('dataset'))))}</h1>",
        *(f"<p class='skipped warning'>{esc(w)}</p>" for w in warnings(report)),
        f"<p class='badge' id='verdict-badge'>{esc(h.badge)}</p>" if h.badge else "",
        f"<p class='verdict' id='verdict'>{esc(h.answer)}</p>",
        f"<p class='self-check'>{esc(h.control_answer)}</p>" if h.control_answer else "",
        f"<p>How strongly: {esc(h.strength)}</p>",
        f"<p>What to do: {esc(h.remedy)}</p>" if h.remedy else "",
        "<ul>" + "".join(f"<li>{esc(e)}</li>" for e in h.evidence) + "</ul>" if h.evidence else "",
        f"<p class='meta'>{report.get('n_molecules')} molecules · frame {esc(str(report.get('frame')))}/"
        f"{esc(str(report.get('sign_rule')))} · seed {report.get('seed')} · result {esc(str(report.get('result_key')))} · "
        f"version {esc(str(report.get('version')))} · verdict rule {esc(str(h.rule_version))}</p>",
        f"<div id='active-view'><strong>Figures of this view</strong><ul>{shown}</ul></div>" if shown else "",
        _skipped_html(report),
        *_sections(report),
    ]
    for i, fig in enumerate(figures):
        parts.append(fig.to_html(full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False}))
    raw = json.dumps(report, default=str, indent=1)
    parts.append(f"<details><summary>Full report (JSON)</summary><pre>{esc(raw)}</pre></details>")
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>OrientScope report</title>"
        f"<style>{_STYLE}</style></head><body>{''.join(parts)}</body></html>"
    )
