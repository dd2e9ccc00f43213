"""The report object as figures a person reads: one home for the wording and number formats.

The CLI's text report, the dashboard's verdict panel and the offline HTML report
all show the same figures; they take them from here, already formatted, so a
p-value below the smallest float reads ``< 1e-300`` (never ``0``), a gain that
rounds to zero reads ``0.0 %`` (never ``-0.0 %``) and a stage that did not run
says why instead of leaving an empty table. The sentences about alignment (the
verdict, its badge, each test's line, how strongly, the control's self-check,
the compare view's KL difference) are built by
:mod:`orientscope.science.alignment_words` from the verdict's fields; this
module hands them on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orientscope.core.numbers import format_count, is_number
from orientscope.science import alignment_words as words
from orientscope.science import statistics_registry
from orientscope.science.classifiers import CLASSIFIERS_KEY
from orientscope.science.frames import DEGENERACY_CODES
from orientscope.science.regression import FRAME_DEPENDENT_NOTE as FRAME_DEPENDENT_NOTE
from orientscope.science.regression import REGRESSION_KEY
from orientscope.science.regression import left_out_note as left_out_note
from orientscope.science.regression import regression_rows as regression_rows  # display-ready rows
from orientscope.science.so3_stats import KL_KEY
from orientscope.science.verdict import CLASSIFIER_ROLE, DEFAULT_ALPHA

GROUP_COLUMN_NOTES = {
    "spread_deg": "spread: the median angle between a member's pose and the group's mean pose (degrees); only "
    "members with a full frame have a pose (blank: none has)",
    "concentration": "concentration: how tightly the members' axes point one way, 1 = one shared pose, "
    "about 1/√n for n random poses",
    "mean_score": "mean P(stored): the classifier's mean probability that a member's pose is the stored one",
}
ANGLE_PEAK_NOTE = (
    "A peak near 180° is axis-sign flips: a frame whose sign rule flipped two axes is the reference turned by 180°."
)


@dataclass(frozen=True)
class Section:
    """One table of the report: a title, a header, rows of display text, and why it is empty if it is.

    rows : tuples as long as ``header``; empty when ``skipped`` says why
    skipped : the reason the stage (or part) behind this table did not run, else None
    notes : lines to print under the table
    tooltip : what the table's measure means, for a hover on its title (None: nothing to add)
    """

    key: str
    title: str
    header: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)
    skipped: str | None = None
    notes: list[str] = field(default_factory=list)
    tooltip: str | None = None


def degeneracy_lines(reasons: dict) -> list[str]:
    """``code (count): what it means`` for each degeneracy code of a report's ``degenerate_reasons``."""
    return [
        f"{code} ({count}): {DEGENERACY_CODES.get(code, 'unknown code')}"
        for code, count in sorted((reasons or {}).items())
    ]


def chemistry_lines(report: dict) -> list[str]:
    """How many molecules have a chemical graph and, grouped by reason, why the others have none.

    The first line is the count; each reason follows as ``reason (count): what it means; e.g. ids``,
    then the ions kept out of every group and the molecules whose charge was assumed. Empty without
    the chemistry stage.
    """
    chem = report.get("chemistry") or {}
    if "n_ok" not in chem:
        return []
    total = chem["n_ok"] + chem.get("n_failed", 0)
    lines = [f"Chemical graphs: {format_count(chem['n_ok'])} of {format_count(total)} molecules"]
    reasons = chem.get("no_graph")
    if chem.get("n_failed") and reasons is None:
        lines.append(
            f"no graph: {format_count(chem['n_failed'])} (reasons not recorded: recompute the chemistry stage)"
        )
    for reason, entry in (reasons or {}).items():
        examples = f"; e.g. {', '.join(entry['examples'])}" if entry.get("examples") else ""
        lines.append(f"no graph, {reason} ({format_count(entry['count'])}): {entry['meaning']}{examples}")
    if n := chem.get("n_single_atoms"):
        lines.append(f"{_counted(n, 'single atom')} (ions): in no scaffold, formula or cluster group")
    if n := chem.get("n_charge_assumed"):
        lines.append(f"{_counted(n, 'molecule')} perceived from 3D without a charge in the file: charge 0 assumed")
    return lines


def molecules_text(report: dict) -> str:
    """``2,000 molecules``, saying when the result is of a ``--limit`` subset (``report --limit`` and ``precompute
    --limit`` make it the dataset's active result, so the dashboard then shows the subset, not the whole set)."""
    text = f"{format_count(report.get('n_molecules'))} molecules"
    limit = report.get("limit")
    return f"{text} (an evenly spread subset: --limit {format_count(limit)})" if is_number(limit) else text


def _counted(n: int, noun: str) -> str:
    return f"{format_count(n)} {noun}{'' if n == 1 else 's'}"


def _skipped(report: dict, *names: str) -> str | None:
    skipped = report.get("skipped_stages") or {}
    return next((skipped[n] for n in names if n in skipped), None)


def warnings(report: dict) -> list[str]:
    """What every surface says before the verdict: a failed self-check (the control is not ``not_detected``) and
    a result made under an older rule."""
    out = []
    check = report.get("control_check") or (report.get("verdict") or {}).get("control_check") or {}
    if check.get("passed") is False and check.get("text"):
        out.append(check["text"])
    if (report.get("older_rule") or {}).get("text"):
        out.append(report["older_rule"]["text"])
    return out


def report_sections(report: dict) -> list[Section]:
    """The report's tables in reading order (statistics, classifiers, regression, similarity), each with the
    rows of its registered statistics (``science/statistics_registry.py``), in registry order."""
    out = []
    for table in statistics_registry.TABLES:
        members = statistics_registry.for_table(table.key)
        rows = [row for stat in members for row in stat.rows(report)]
        notes = table.notes(report, rows) + [n for stat in members if stat.notes for n in stat.notes(report)]
        out.append(
            Section(
                table.key,
                table.title,
                table.header,
                rows,
                _skipped(report, *table.skipped_by),
                notes,
                statistics_registry.tooltip(table.key),
            )
        )
    return out


# ----------------------------------------------------------------- what the figures rest on
REMEDY = words.REMEDY
KL_TOOLTIP = statistics_registry.tooltip(KL_KEY)
CLASSIFIERS_TOOLTIP = statistics_registry.tooltip(CLASSIFIERS_KEY)
VERDICT_TOOLTIP = (
    "One rule for every screen: Holm's adjustment over every test of 'each pose is a uniform random "
    "rotation' (KL against its null at this N, each classifier, KS) at the stated alpha. Only a test that rejected "
    "sizes the effect: its estimate's interval against its bar reads strong (wholly above), small (wholly below) "
    "or uncertain (across the bar)."
)
# How each verdict's text begins; a verdict stored before codes existed is prefixed with it.
ANSWER_PREFIX = {
    "aligned": "Aligned",
    "weakly_aligned": "Weakly aligned",
    "not_detected": "Not detected",
    "too_few": "Too few",
}


@dataclass(frozen=True)
class Headline:
    """The three answers of the first screen, in plain words.

    code : the verdict's code (aligned, weakly_aligned, not_detected, too_few)
    aligned : True (aligned or weakly), False or None (too few molecules)
    weak : detected, with a small effect
    badge : the verdict in a few words (``Aligned — strong effect``, ``Not detected`` ...)
    answer : is it aligned: the verdict's text, which cites each test that rejected with its estimate
    control_answer : the control's own verdict by the same rule (the built-in self-check)
    strength : the KL with its interval at this N, the range uniform poses give, and the control's KL
    kl : the dataset's KL, for drawing it on a scale from 0 (None if not computed)
    remedy : what to do about it
    evidence : one sentence per test: its figure, p, Holm p, outcome and what it rests on
    rule_version : the version of the rule that made the verdict (None for a verdict stored before it)
    """

    aligned: bool | None
    answer: str
    strength: str
    kl: float | None
    remedy: str
    evidence: list[str] = field(default_factory=list)
    weak: bool = False
    code: str = "too_few"
    control_answer: str = ""
    badge: str = ""
    rule_version: int | None = None


def _code(v: dict) -> str:
    """The verdict's code; a verdict stored before codes existed is read from its ``aligned`` field."""
    if v.get("code") in ANSWER_PREFIX:
        return v["code"]
    return {True: "aligned", False: "not_detected"}.get(v.get("aligned"), "too_few")


def classifier_evidence(report: dict) -> list[str]:
    """One sentence per test behind the verdict: figure, p, Holm p, outcome, and what it rests on.

    Frame-only classifiers come before the atom-order one, which reads file order and
    must never stand alone as the headline.
    """
    order = {name: i for i, name in enumerate(("KL", *(f"{c} classifier" for c in CLASSIFIER_ROLE), "KS"))}
    v = report.get("verdict") or {}
    rows = v.get("evidence") or []
    alpha = v.get("alpha", DEFAULT_ALPHA)
    return [words.evidence_line(e, alpha) for e in sorted(rows, key=lambda e: order.get(e.get("test"), 99))]


def evidence_figures(report: dict) -> list[tuple[str, str]]:
    """``(test, figure)`` per test behind the verdict, for a compact table: estimate, interval, p, Holm p and
    outcome; then the classifiers left out of the family, saying why."""
    v = report.get("verdict") or {}
    alpha = v.get("alpha", DEFAULT_ALPHA)
    rows = [(e.get("test", ""), words.evidence_figure(e, alpha)) for e in v.get("evidence") or []]
    left_out = v.get("not_tests") or {}
    return rows + [(name, "not a test: it predicted one class") for name in left_out.get("tests") or []]


def _strength(report: dict) -> str:
    kl = report.get(KL_KEY) or {}
    if not is_number(kl.get("value")):
        return "Orientation statistics were not computed: " + (
            _skipped(report, "statistics") or "not enough molecules."
        )
    null = (report.get("verdict") or {}).get("kl_null")
    return words.strength_text(kl, null, (report.get("control") or {}).get(KL_KEY))


def control_answer(report: dict) -> str:
    """The control's verdict by the same rule, as the self-check sentence shown beside the dataset's."""
    return words.control_text((report.get("control") or {}).get("verdict"))


def kl_difference(a: dict, b: dict) -> str | None:
    """The compare view's KL difference of two reports, A − B, each KL with its interval (None unless both have
    one); sets of different sizes say what compares them instead."""
    return words.kl_difference_text(a, b)


def kl_mark_label(who: str, value) -> str:
    """A mark's label on the KL scale (``this set 0.51``)."""
    return words.kl_mark_label(who, value)


def headline(report: dict) -> Headline:
    """Is the set aligned, how strongly, and what to do: the first screen's plain words."""
    v = report.get("verdict") or {}
    code = _code(v)
    aligned = {"aligned": True, "weakly_aligned": True, "not_detected": False}.get(code)
    kl = (report.get(KL_KEY) or {}).get("value")
    answer = v.get("text") or ANSWER_PREFIX[code]
    if "code" not in v and not answer.startswith(ANSWER_PREFIX[code]):
        answer = f"{ANSWER_PREFIX[code]}: {answer}"
    return Headline(
        aligned=aligned,
        answer=answer,
        strength=_strength(report),
        kl=float(kl) if is_number(kl) else None,
        remedy=words.remedy_text({**v, "code": code}),
        evidence=classifier_evidence(report),
        weak=code == "weakly_aligned",
        code=code,
        control_answer=control_answer(report),
        badge=v.get("badge") or words.verdict_badge({**v, "code": code}),
        rule_version=v.get("rule_version"),
    )


def control_report(report: dict) -> dict:
    """The report as seen from its random-rotation control: the control's figures in the dataset's place.

    Used where the control is shown as a dataset of its own (the compare view): its
    regression gains are the ``control_improvement`` of each property (about 0), never the
    dataset's own gains; it has no control of its own.
    """
    c = report.get("control") or {}
    regression = [
        {
            **r,
            "improvement": r.get("control_improvement"),
            "improvement_std": r.get("control_improvement_std"),
            "mse_normalised": None,
            "baseline_mse_normalised": None,
            "control_improvement": None,
            "control_improvement_std": None,
            # The control fits the stored values on randomly rotated poses: no gain is expected there, not
            # even for a lab-frame component, so its rows carry no lab-frame mark and no "gain expected" note.
            "frame_dependent": False,
        }
        for r in report.get(REGRESSION_KEY) or []
    ]
    # The dataset's figures that the control has its own of are not shown in its place, even where it lacks one.
    own = {f.name for stat in statistics_registry.statistics() if stat.has_control for f in stat.fields}
    shown = {k: v for k, v in report.items() if k not in own}
    shown.update({k: v for k, v in c.items() if k != "description"})
    shown.update(
        {
            "name": f"{report.get('name', report.get('dataset'))} · control",
            REGRESSION_KEY: regression,
            "frame_dependent_properties": [],
            "control": {},
            "verdict": c.get("verdict")
            or {"aligned": None, "code": "too_few", "text": "Control: no verdict was computed for it"},
        }
    )
    return shown
