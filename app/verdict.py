"""The verdict panel: one plain-words line, then each figure next to its control.

Renders whatever keys the report has (stages that have not run are simply absent).
"""

from __future__ import annotations

import math

from dash import html

from backend.services.report import format_kl


def _num(x, fmt: str = ".3f") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return format(x, fmt)


def _p(x) -> str:
    return "–" if x is None else f"{x:.2g}"


def _table(header: list[str], rows: list[list[str]], cls: str) -> html.Table:
    return html.Table(
        [html.Thead(html.Tr([html.Th(h) for h in header]))]
        + [html.Tbody([html.Tr([html.Td(c) for c in r]) for r in rows])],
        className=f"figures {cls}",
    )


def statistic_rows(report: dict) -> list[list[str]]:
    c = report.get("control", {})
    rows = []
    if "kl" in report:
        rows.append(["KL to uniform SO(3), 95% CI", format_kl(report.get("kl")), format_kl(c.get("kl"))])
    if "kl_sign_invariant" in report:
        rows.append(
            [
                "KL, axis signs ignored",
                format_kl(report.get("kl_sign_invariant")),
                format_kl(c.get("kl_sign_invariant")),
            ]
        )
    if "ks" in report:
        rows.append(["KS p-value (angle law)", _p(report["ks"].get("pvalue")), _p((c.get("ks") or {}).get("pvalue"))])
    return rows


def classifier_rows(report: dict) -> list[list[str]]:
    ctl = {x.get("features"): x for x in report.get("control", {}).get("classifiers", []) or []}
    rows = []
    for clf in report.get("classifiers", []) or []:
        other = ctl.get(clf.get("features"), {})
        ci = clf.get("ci95") or [None, None]
        if isinstance(ci, dict):  # {"accuracy": [lo, hi], "auc": [lo, hi]}
            ci = ci.get("accuracy") or [None, None]
        auc = f", AUC {_num(clf['auc'])}" if clf.get("auc") is not None else ""
        rows.append(
            [
                f"classifier accuracy: {clf.get('features')}",
                f"{_num(clf.get('accuracy'))} [{_num(ci[0])}, {_num(ci[1])}]{auc} (p {_p(clf.get('pvalue'))})",
                f"{_num(other.get('accuracy'))} (p {_p(other.get('pvalue'))})" if other else "–",
            ]
        )
    return rows


def regression_rows(report: dict) -> list[list[str]]:
    rows = []
    for r in report.get("regression", []) or []:
        unit = f" ({r['unit']})" if r.get("unit") else ""
        imp, std = r.get("improvement"), r.get("improvement_std")
        rows.append(
            [
                f"{r.get('property')}{unit}",
                f"{_num(r.get('mse'), '.4g')} vs {_num(r.get('baseline_mse'), '.4g')}",
                f"{_num(None if imp is None else 100 * imp, '.1f')}% ± {_num(None if std is None else 100 * std, '.1f')}",
                f"{_num(None if r.get('control_improvement') is None else 100 * r['control_improvement'], '.1f')}%",
            ]
        )
    return rows


def similarity_rows(report: dict) -> list[list[str]]:
    s = report.get("similarity")
    if not s:
        return []
    return [
        ["pairs sampled", str(s.get("n_pairs", "–")), ""],
        ["chemical neighbours within 30°", _num(s.get("nn_within_30deg")), ""],
        ["random pairs within 30°", _num(s.get("random_within_30deg")), ""],
        [
            "enrichment (p)",
            f"{_num(s.get('enrichment'), '.2f')} (p {_p(s.get('pvalue'))})",
            _num(s.get("control_enrichment"), ".2f"),
        ],
    ]


def verdict_children(report: dict) -> list:
    """Children of the ``verdict`` panel for a report dict."""
    v = report.get("verdict") or {}
    aligned = v.get("aligned")
    badge = {True: "aligned", False: "not-aligned"}.get(aligned, "unknown")
    out: list = [
        html.P(v.get("text", "No verdict yet."), id="verdict-text", className=f"verdict-line {badge}"),
        html.P(
            f"{report.get('name', report.get('dataset'))}: {report.get('n_molecules')} molecules, "
            f"frame {report.get('frame')}/{report.get('sign_rule')}, seed {report.get('seed')}, "
            f"{report.get('n_degenerate')} degenerate frames",
            className="verdict-meta",
        ),
    ]
    stats = statistic_rows(report) + classifier_rows(report)
    if stats:
        out.append(_table(["measure", "dataset", "control"], stats, "stats"))
    reg = regression_rows(report)
    if reg:
        out += [
            html.H4("Orientation-only property regression"),
            _table(["property", "MSE vs mean baseline", "improvement", "control"], reg, "regression"),
        ]
    sim = similarity_rows(report)
    if sim:
        out += [html.H4("Similarity–pose coupling"), _table(["measure", "dataset", "control"], sim, "similarity")]
    skipped = report.get("skipped_stages") or {}
    if skipped:
        out.append(html.P("Skipped: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()), className="note"))
    return out
