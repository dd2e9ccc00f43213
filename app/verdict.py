"""The verdict panel: a badge, what to do (with the downloads), and the evidence one click away.

The page's own panel (:func:`first_screen_children`) leads with the verdict's badge and what to do about it,
with buttons that download the de-biased set and rotated copies (``app/downloads.py``); the answer that
names its tests, the control's own verdict, how strongly (KL on a scale from 0 = uniform) and every figure
behind them sit in a collapsed section below, so that the map is on the first screen. The frames the verdict
rests on, and why some are degenerate, are said under the map (:func:`frame_children`). Side by side in
Compare, both columns show everything. Wording and number formats come from
``orientscope.services.report_format`` (shared with the CLI and the HTML report); this module only lays them
out. Stages that did not run say why.
"""

from __future__ import annotations

from dash import html

from orientscope.app.downloads import download_buttons
from orientscope.services.report_format import (
    CLASSIFIERS_TOOLTIP,
    KL_TOOLTIP,
    VERDICT_TOOLTIP,
    Section,
    chemistry_lines,
    degeneracy_lines,
    headline,
    kl_mark_label,
    molecules_text,
    report_sections,
    warnings,
)
from orientscope.services.statistics import KL_KEY, REGRESSION_KEY

VERDICT_TEXT = "verdict-text"
VERDICT_BADGE = "verdict-badge"
VERDICT_EVIDENCE = "verdict-evidence"
SKIPPED = "skipped-stages"
CHEMISTRY_GRAPHS = "chemistry-graphs"
WARNINGS = "verdict-warnings"
# The badge's colour by the verdict's code (style.css .verdict-badge.*); a code not listed is "unknown".
BADGE_CLASSES = {"aligned": "aligned", "weakly_aligned": "weak", "not_detected": "not-aligned"}
EVIDENCE_SUMMARY = (
    "Why: the tests behind the verdict, how strongly, and every figure (statistics, classifiers, regression, "
    "similarity)"
)


def _dash_table(section: Section) -> html.Table:
    # A column with no value in any row (the control's own "control" column in Compare) is left out.
    keep = [0] + [i for i in range(1, len(section.header)) if any(row[i] != "–" for row in section.rows)]
    return html.Table(
        [html.Thead(html.Tr([html.Th(section.header[i]) for i in keep]))]
        + [
            html.Tbody(
                [
                    html.Tr(
                        [html.Td(row[i]) for i in keep],
                        className="frame-dependent"
                        if section.key == REGRESSION_KEY and row[0].endswith(" *")
                        else None,
                    )
                    for row in section.rows
                ]
            )
        ],
        className=f"figures {section.key}",
    )


def section_children(section: Section) -> list:
    """A section's title (its tooltip explains the measure), its table, its notes, or why it is empty."""
    if not section.rows and not section.skipped:
        return []
    out: list = [html.H4(section.title, title=section.tooltip, className="has-tooltip")]
    if section.rows:
        out.append(_dash_table(section))
    if section.skipped:
        out.append(html.P(f"Not computed: {section.skipped}", className="skipped"))
    out += [html.P(n, className="note") for n in section.notes]
    return out


def kl_scale(kl: float | None, control: float | None) -> html.Div | None:
    """A bar from 0 (uniform) with the set and its control marked.

    No landmark from another set: the estimate grows with N, so a set's KL is only
    comparable with one of the same size.
    """
    if kl is None:
        return None
    top = max(1.0, kl * 1.1, (control or 0) * 1.1)

    def at(value: float, cls: str, text: str, tip: str) -> html.Span:
        return html.Span(
            text, className=f"kl-mark {cls}", title=tip, style={"left": f"{100 * max(value, 0) / top:.1f}%"}
        )

    if control is not None and abs(kl - control) / top < 0.15:  # the two labels would overlap
        control = None

    marks = [
        at(0.0, "uniform", "0 = uniform", "0 = orientations as random as a uniform rotation"),
        at(kl, "dataset", kl_mark_label("this set", kl), "this dataset's KL to uniform"),
    ]
    if control is not None:
        marks.insert(
            1,
            at(control, "control", kl_mark_label("control", control), "the same molecules, randomly rotated"),
        )
    return html.Div([html.Div(className="kl-track"), *marks], className="kl-scale", title=KL_TOOLTIP)


def verdict_badge(report: dict) -> html.P:
    """The verdict in a few words: the verdict's own ``badge`` text (e.g. "Aligned — strong effect"), else its
    code. Nothing is derived here: the words are the verdict's."""
    code = headline(report).code
    text = (report.get("verdict") or {}).get("badge") or code
    kind = BADGE_CLASSES.get(code, "unknown")
    return html.P(text, id=VERDICT_BADGE, className=f"verdict-badge {kind}", title=VERDICT_TOOLTIP)


def warnings_div(report: dict, main: bool = True) -> html.Div | None:
    """A failed self-check (and a result of an older rule), read before the verdict it puts in doubt."""
    if not warnings(report):
        return None
    return html.Div(
        [html.P(w, className="warning") for w in warnings(report)],
        className="verdict-warnings",
        role="alert",
        **({"id": WARNINGS} if main else {}),
    )


def headline_children(report: dict, main: bool = True, remedy: bool = True, warn: bool = True) -> list:
    """The three answers: is it aligned, how strongly, what to do (unless ``remedy`` is false: the first screen
    says it beside its downloads); then what the classifiers rest on. ``warn``: the warnings first (the first
    screen shows them above its badge instead)."""
    h = headline(report)
    badge = "weak" if h.weak else {True: "aligned", False: "not-aligned"}.get(h.aligned, "unknown")
    control = ((report.get("control") or {}).get(KL_KEY) or {}).get("value")
    out: list = [
        None if not warn else warnings_div(report, main),
        html.P(
            h.answer,
            className=f"verdict-line {badge}",
            title=VERDICT_TOOLTIP,
            **({"id": VERDICT_TEXT} if main else {}),
        ),
        html.P(h.control_answer, className="answer self-check") if h.control_answer else None,
        html.P(["How strongly: ", h.strength], className="answer strength", title=KL_TOOLTIP),
        kl_scale(h.kl, control),
    ]
    if h.remedy and remedy:
        out.append(html.P(["What to do: ", h.remedy], className="answer remedy"))
    if h.evidence:
        out.append(
            html.Ul(
                [html.Li(e) for e in h.evidence],
                className="evidence",
                title=CLASSIFIERS_TOOLTIP,
            )
        )
    return [c for c in out if c is not None]


def skipped_children(report: dict, main: bool = True) -> list:
    """Each stage (or part) that did not run, with its reason, as a visible list."""
    skipped = report.get("skipped_stages") or {}
    if not skipped:
        return []
    return [
        html.Div(
            [
                html.Strong("Skipped stages"),
                html.Ul([html.Li([html.Code(stage), f": {reason}"]) for stage, reason in skipped.items()]),
            ],
            **({"id": SKIPPED} if main else {}),
            className="skipped-stages",
        )
    ]


def frame_children(report: dict, main: bool = True) -> list:
    """The frames the verdict rests on: size, frame, seed, how many are degenerate and why (the codes), the
    molecules without a chemical graph (by reason) and how many have an orientation."""
    out: list = [
        html.P(
            f"{report.get('name', report.get('dataset'))}: {molecules_text(report)}, "
            f"frame {report.get('frame')}/{report.get('sign_rule')}, seed {report.get('seed')}, "
            f"{report.get('n_degenerate')} degenerate frames",
            className="verdict-meta",
        )
    ]
    if lines := degeneracy_lines(report.get("degenerate_reasons") or {}):
        out.append(html.Ul([html.Li(line) for line in lines], className="note degeneracy-codes"))
    if lines := chemistry_lines(report):
        out.append(html.Div([html.Span(lines[0]), html.Ul([html.Li(line) for line in lines[1:]])],
                            className="note chemistry-graphs", **({"id": CHEMISTRY_GRAPHS} if main else {})))  # fmt: skip
    if report.get("orientation_note"):
        out.append(html.P(report["orientation_note"], className="note orientation-classes"))
    return out


def meta_children(report: dict, main: bool = True) -> list:
    """What the verdict rests on: size, frame, seed, degenerate frames, the molecules without a chemical graph
    (by reason) and the stages that did not run."""
    return frame_children(report, main) + skipped_children(report, main)


def _tables(report: dict) -> list:
    return [c for section in report_sections(report) for c in section_children(section)]


def first_screen_children(report: dict) -> list:
    """The page's own verdict panel: the badge; what to do, with the downloads; the stages that did not run;
    then, collapsed, the answer that names its tests, the control's verdict, how strongly, and every figure."""
    h = headline(report)
    todo = html.Div(
        [html.P(["What to do: ", h.remedy] if h.remedy else [], className="answer remedy"), *download_buttons()],
        className="what-to-do",
    )
    evidence = html.Details(
        [html.Summary(EVIDENCE_SUMMARY), *headline_children(report, True, remedy=False, warn=False), *_tables(report)],
        id=VERDICT_EVIDENCE,
        className="figures-details",
    )
    # A failed control check is loud: above the badge, never inside the collapsed evidence.
    first = [warnings_div(report, main=True), verdict_badge(report), todo, *skipped_children(report, main=True)]
    return [c for c in first if c is not None] + [evidence]


def verdict_children(report: dict, main: bool = True) -> list:
    """Children of the ``verdict`` panel for a report dict: the page's own (``main``, :func:`first_screen_children`:
    its parts have ids), or everything in reading order, as a Compare column shows it."""
    if main:
        return first_screen_children(report)
    # side by side in Compare, the tables are what is compared (and html.Details ignores open=True)
    return headline_children(report, main) + meta_children(report, main) + _tables(report)
