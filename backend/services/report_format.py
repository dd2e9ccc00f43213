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

from orientscope.core.numbers import format_count, format_number, format_p, format_percent, is_number
from orientscope.science import alignment_words as words
from orientscope.science.frames import DEGENERACY_CODES
from orientscope.science.verdict import CLASSIFIER_ROLE, DEFAULT_ALPHA
from orientscope.services.report import format_kl

KL_SCALE_NOTE = (
    "KL: 0 = uniform orientations (as the control should be); the estimate grows with N, so its interval is for "
    "the expected estimate at this N, and sets of different sizes compare through KL at n where both have it, "
    "else only at an equal N (report --limit)"
)
FRAME_DEPENDENT_NOTE = (
    "* lab-frame component: it changes with the orientation by definition, so a gain is expected, not a leak"
)
DATASET_VS_CONTROL = ("measure", "dataset", "control")
GROUP_COLUMN_NOTES = {
    "spread_deg": "spread: the median angle between a member's pose and the group's mean pose (degrees)",
    "concentration": "concentration: how tightly the members' axes point one way, 1 = one shared pose, "
    "about 1/√(size) for random poses",
    "mean_score": "mean P(stored): the classifier's mean probability that a member's pose is the stored one",
}
ANGLE_PEAK_NOTE = (
    "A peak near 180° is axis-sign flips: a frame whose sign rule flipped two axes is the reference turned by 180°."
)
REGRESSION_TITLE = "Orientation-only regression (predict the property from R alone)"


@dataclass(frozen=True)
class Section:
    """One table of the report: a title, a header, rows of display text, and why it is empty if it is.

    rows : tuples as long as ``header``; empty when ``skipped`` says why
    skipped : the reason the stage (or part) behind this table did not run, else None
    notes : lines to print under the table
    """

    key: str
    title: str
    header: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)
    skipped: str | None = None
    notes: list[str] = field(default_factory=list)


def regression_rows(report: dict) -> list[dict]:
    """The orientation-only regression per property, display-ready.

    Each row keeps the report's numbers and adds:

    - ``label``: property and unit, ``zpve (Hartree)``;
    - ``frame_dependent``: the property is a lab-frame component (e.g. alpha_xx), so it
      depends on the orientation by definition: flagged by the models stage, or declared
      in the dataset's metadata now (``frame_dependent_properties``, core/dataset);
    - ``error_text``: cross-validated MSE vs the mean baseline, as fractions of the
      property's variance (``0.781 vs 1.000 of variance``), readable whatever the unit;
    - ``gain``/``gain_text``: relative MSE reduction, ``+21.9 % ± 0.4``;
    - ``control_gain_text``: the same on the random-rotation control (about 0 %).
    """
    declared = set(report.get("frame_dependent_properties") or ())
    rows = []
    for r in report.get("regression") or []:
        unit = f" ({r['unit']})" if r.get("unit") else ""
        std = r.get("improvement_std")
        spread = f" ± {format_number(100 * std, '.1f')}" if is_number(std) else ""
        rows.append(
            {
                **r,
                "label": f"{r.get('property')}{unit}",
                "frame_dependent": bool(r.get("frame_dependent")) or r.get("property") in declared,
                "error_text": f"{format_number(r.get('mse_normalised'))} vs "
                f"{format_number(r.get('baseline_mse_normalised'))} of variance"
                if is_number(r.get("mse_normalised")) or is_number(r.get("baseline_mse_normalised"))
                else "–",
                "gain": r.get("improvement"),
                "gain_text": format_percent(r.get("improvement")) + spread,
                "control_gain_text": format_percent(r.get("control_improvement")),
            }
        )
    return rows


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


def _counted(n: int, noun: str) -> str:
    return f"{format_count(n)} {noun}{'' if n == 1 else 's'}"


def _skipped(report: dict, *names: str) -> str | None:
    skipped = report.get("skipped_stages") or {}
    return next((skipped[n] for n in names if n in skipped), None)


def _both(label: str, figures: dict, control: dict, key: str, fmt: str = ".3f") -> tuple[str, str, str]:
    """A dataset-vs-control row: ``key`` of both sets of figures, in ``fmt``."""
    return label, format_number(figures.get(key), fmt), format_number(control.get(key), fmt)


def _statistics(report: dict) -> Section:
    c = report.get("control") or {}
    rows = []
    if "kl" in report:
        rows.append(("KL to uniform SO(3), 95% CI", format_kl(report.get("kl")), format_kl(c.get("kl"))))
    if "kl_sign_invariant" in report:
        rows.append(
            ("KL, axis signs ignored", format_kl(report["kl_sign_invariant"]), format_kl(c.get("kl_sign_invariant")))
        )
    if (report.get("kl_at_n") or {}).get("value") is not None:
        at = report["kl_at_n"]
        label = f"KL at n = {format_count(at['subsample_size'])} (comparable across sizes)"
        rows.append((label, format_kl(at), format_kl(c.get("kl_at_n"))))
    if "ks" in report:
        ks, cks = report["ks"] or {}, c.get("ks") or {}
        rows.append(_both("KS vs Haar angle law: D", ks, cks, "statistic", ".4f"))
        rows.append(("KS p-value", format_p(ks.get("pvalue")), format_p(cks.get("pvalue"))))
    rows += _axial_rows(report.get("axial") or {}, c.get("axial") or {})
    notes = [KL_SCALE_NOTE] if rows else []
    notes += [n for n in (report.get("orientation_note"),) if n]
    return Section(
        "statistics", "Orientation statistics", DATASET_VS_CONTROL, rows, _skipped(report, "statistics"), notes
    )


def _classifier_p(clf: dict) -> str:
    """``p 0.012``; a model that predicted one class tests nothing, and says so instead of a p."""
    if clf.get("constant"):
        return "no test (it predicted one class)"
    return f"p {format_p(clf.get('pvalue'))}"


def _axial_rows(axial: dict, control: dict) -> list[tuple[str, str, str]]:
    """Bingham's test of the axis-only molecules, dataset vs control (nothing when no molecule has only an axis)."""
    if not axial.get("n"):
        return []

    def test(a: dict) -> str:
        if not a.get("n"):
            return "–"
        text = f"S = {format_number(a.get('statistic'), '.2f')}, p {format_p(a.get('pvalue'))}"
        return text + (" (not in the verdict: too few)" if a.get("skipped") else "")

    def direction(a: dict) -> str:
        v, ev = a.get("preferred_direction"), a.get("eigenvalues")
        if not v or not ev:
            return "–"
        return f"({', '.join(format_number(x, '.2f') for x in v)}), eigenvalues {', '.join(format_number(x, '.2f') for x in ev)}"

    return [
        (f"Bingham axial test, {format_count(axial['n'])} axis-only molecules (χ²₅)", test(axial), test(control)),
        (
            "axial: preferred direction (x, y, z), T's eigenvalues (1/3 each = uniform)",
            direction(axial),
            direction(control),
        ),
    ]


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


def _accuracy_ci(clf: dict) -> list:
    ci = clf.get("ci95") or [None, None]
    return (ci.get("accuracy") or [None, None]) if isinstance(ci, dict) else ci


def _classifiers(report: dict) -> Section:
    control = {x.get("features"): x for x in (report.get("control") or {}).get("classifiers") or []}
    rows = []
    for clf in report.get("classifiers") or []:
        lo, hi = _accuracy_ci(clf)
        auc = f", AUC {format_number(clf['auc'])}" if is_number(clf.get("auc")) else ""
        other = control.get(clf.get("features"))
        rows.append(
            (
                f"accuracy, {clf.get('features')} features",
                f"{format_number(clf.get('accuracy'))} [{format_number(lo)}, {format_number(hi)}]{auc}, "
                + _classifier_p(clf),
                f"{format_number(other.get('accuracy'))}, {_classifier_p(other)}" if other else "–",
            )
        )
    return Section(
        "classifiers",
        "Rotation classifiers (stored pose vs a random rotation; 0.5 = cannot tell)",
        DATASET_VS_CONTROL,
        rows,
        _skipped(report, "models"),
    )


def left_out_note(report: dict) -> str | None:
    """The sentence that names the properties the regression left out (constant or missing), if any."""
    left_out = report.get("regression_left_out") or []
    if not left_out:
        return None
    named = ", ".join(f"{e['property']} ({_left_out_reason(e)})" for e in left_out)
    return f"Left out of the regression, as there is nothing to predict: {named}."


def _left_out_reason(entry: dict) -> str:
    if entry.get("reason") == "constant":
        return f"constant: {format_number(entry.get('value'), '.6g')} for every molecule"
    return "no values" if entry.get("reason") == "missing" else str(entry.get("reason"))


def _regression(report: dict) -> Section:
    rows, flagged = [], False
    for r in regression_rows(report):
        flagged |= r["frame_dependent"]
        name = r["label"] + (" *" if r["frame_dependent"] else "")
        rows.append((name, r["error_text"], r["gain_text"], r["control_gain_text"]))
    notes = [FRAME_DEPENDENT_NOTE] if flagged else []
    note = left_out_note(report)
    return Section(
        "regression",
        REGRESSION_TITLE,
        ("property", "MSE vs mean baseline", "gain", "control gain"),
        rows,
        _skipped(report, "models", "models.regression"),
        notes + ([note] if note else []),
    )


def _similarity(report: dict) -> Section:
    s = report.get("similarity") or {}
    c = (report.get("control") or {}).get("similarity") or {}
    rows = []
    if s:
        rows = [
            ("pairs sampled", str(s.get("n_pairs", "–")), str(c.get("n_pairs", "–"))),
            _both("chemical neighbours within 30°", s, c, "nn_within_30deg"),
            _both("random pairs within 30°", s, c, "random_within_30deg"),
            (
                "enrichment (neighbours / random)",
                f"{format_number(s.get('enrichment'), '.2f')}, p {format_p(s.get('pvalue'))}",
                f"{format_number(c.get('enrichment'), '.2f')}, p {format_p(c.get('pvalue'))}" if c else "–",
            ),
        ]
    return Section(
        "similarity",
        "Similarity–pose coupling (do chemical neighbours share a pose?)",
        DATASET_VS_CONTROL,
        rows,
        _skipped(report, "chemistry", "chemistry.similarity"),
    )


def report_sections(report: dict) -> list[Section]:
    """The report's tables in reading order: statistics, classifiers, regression, similarity."""
    return [_statistics(report), _classifiers(report), _regression(report), _similarity(report)]


# ----------------------------------------------------------------- what the figures rest on
REMEDY = (
    "Before training a model that is not rotation-invariant, augment with random rotations, "
    "or train on the de-biased export (orientscope export: every molecule randomly rotated)."
)
NO_REMEDY = "Nothing to do for orientation: models trained on it cannot learn a preferred pose."
TOOLTIPS = {
    "kl": "Kullback–Leibler divergence of the orientations from a uniform distribution over rotations (SO(3)), "
    "k-nearest-neighbour estimate. 0 = uniform. The estimate grows with N (QM9 subsets: 0.31 at 100 molecules, "
    "0.54 at 1,000, 0.91 for all 130,831), so its 95% interval is for the expected estimate at this N, and "
    "sets of different sizes compare through 'KL at n' (shown for sets of 100,000 molecules or more), else only "
    "at an equal N.",
    "kl_sign_invariant": "The same divergence with the sign of each axis ignored: what is left when a frame's axis "
    "directions are only defined up to sign.",
    "ks": "Kolmogorov–Smirnov test of the angles to the reference orientation against the law of uniform rotations "
    "(Haar). A small p says the angles are not those of random poses.",
    "classifiers": "A gradient-boosted classifier tries to tell each stored pose from a randomly rotated copy; "
    "0.5 accuracy = it cannot tell, 1.0 = it always can.",
    "regression": "How much of each property's variance a model predicts from the orientation R alone "
    "(cross-validated, against predicting the mean). Near 0 % = the pose carries no information about it.",
    "similarity": "Whether chemically similar molecules (nearest Tanimoto neighbours) share a pose more often "
    "than random pairs.",
    "verdict": "One rule for every screen: Holm's adjustment over every test of 'each pose is a uniform random "
    "rotation' (KL against its null at this N, each classifier, KS) at the stated alpha. Only a test that rejected "
    "sizes the effect: its estimate's interval against its bar reads strong (wholly above), small (wholly below) "
    "or uncertain (across the bar).",
}
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
    kl = report.get("kl") or {}
    if not is_number(kl.get("value")):
        return "Orientation statistics were not computed: " + (
            _skipped(report, "statistics") or "not enough molecules."
        )
    null = (report.get("verdict") or {}).get("kl_null")
    return words.strength_text(kl, null, (report.get("control") or {}).get("kl"))


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
    kl = (report.get("kl") or {}).get("value")
    answer = v.get("text") or ANSWER_PREFIX[code]
    if "code" not in v and not answer.startswith(ANSWER_PREFIX[code]):
        answer = f"{ANSWER_PREFIX[code]}: {answer}"
    return Headline(
        aligned=aligned,
        answer=answer,
        strength=_strength(report),
        kl=float(kl) if is_number(kl) else None,
        remedy=REMEDY if aligned else NO_REMEDY if aligned is False else "",
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
        for r in report.get("regression") or []
    ]
    shown = {k: v for k, v in report.items() if k not in ("kl", "kl_sign_invariant", "ks", "classifiers", "similarity")}
    shown.update({k: v for k, v in c.items() if k != "description"})
    shown.update(
        {
            "name": f"{report.get('name', report.get('dataset'))} · control",
            "regression": regression,
            "frame_dependent_properties": [],
            "control": {},
            "verdict": c.get("verdict")
            or {"aligned": None, "code": "too_few", "text": "Control: no verdict was computed for it"},
        }
    )
    return shown
