"""The report object as figures a person reads: one home for the wording and number formats.

The CLI's text report, the dashboard's verdict panel and the offline HTML report
all show the same figures; they take them from here, already formatted, so a
p-value below the smallest float reads ``< 1e-300`` (never ``0``), a gain that
rounds to zero reads ``0.0 %`` (never ``-0.0 %``) and a stage that did not run
says why instead of leaving an empty table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from orientscope.services.report import format_kl, format_number

# p-values under this are shown as a bound: below ~1e-300 a float p is 0 or denormal.
P_FLOOR = 1e-300
KL_SCALE_NOTE = "KL: 0 = uniform orientations (as the control should be); full QM9 as stored scores about 0.90"
FRAME_DEPENDENT_NOTE = (
    "* lab-frame component: it changes with the orientation by definition, so a gain is expected, not a leak"
)
DATASET_VS_CONTROL = ("measure", "dataset", "control")
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


def _finite(x) -> bool:
    return isinstance(x, int | float) and math.isfinite(x)


def format_p(p) -> str:
    """A p-value: 2 significant digits, or ``< 1e-300`` when it underflowed."""
    if not _finite(p):
        return "–"
    return f"< {P_FLOOR:.0e}" if p < P_FLOOR else f"{p:.2g}"


def format_percent(fraction, digits: int = 1, signed: bool = True) -> str:
    """A fraction as a percentage: ``+21.9 %``; one that rounds to zero is ``0.0 %``."""
    if not _finite(fraction):
        return "–"
    value = round(100 * fraction, digits)
    if value == 0:
        return f"{0:.{digits}f} %"
    return f"{value:{'+' if signed else ''}.{digits}f} %"


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
        spread = f" ± {format_number(100 * std, '.1f')}" if _finite(std) else ""
        rows.append(
            {
                **r,
                "label": f"{r.get('property')}{unit}",
                "frame_dependent": bool(r.get("frame_dependent")) or r.get("property") in declared,
                "error_text": f"{format_number(r.get('mse_normalised'))} vs "
                f"{format_number(r.get('baseline_mse_normalised'))} of variance"
                if _finite(r.get("mse_normalised")) or _finite(r.get("baseline_mse_normalised"))
                else "–",
                "gain": r.get("improvement"),
                "gain_text": format_percent(r.get("improvement")) + spread,
                "control_gain_text": format_percent(r.get("control_improvement")),
            }
        )
    return rows


def _skipped(report: dict, *names: str) -> str | None:
    skipped = report.get("skipped_stages") or {}
    return next((skipped[n] for n in names if n in skipped), None)


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
        label = f"KL at n = {at['subsample_size']:,} (comparable across sizes)"
        rows.append((label, format_kl(at), format_kl(c.get("kl_at_n"))))
    if "ks" in report:
        ks, cks = report["ks"] or {}, c.get("ks") or {}
        rows.append(
            (
                "KS vs Haar angle law: D",
                format_number(ks.get("statistic"), ".4f"),
                format_number(cks.get("statistic"), ".4f"),
            )
        )
        rows.append(("KS p-value", format_p(ks.get("pvalue")), format_p(cks.get("pvalue"))))
    notes = [KL_SCALE_NOTE] if rows else []
    return Section(
        "statistics", "Orientation statistics", DATASET_VS_CONTROL, rows, _skipped(report, "statistics"), notes
    )


def _accuracy_ci(clf: dict) -> list:
    ci = clf.get("ci95") or [None, None]
    return (ci.get("accuracy") or [None, None]) if isinstance(ci, dict) else ci


def _classifiers(report: dict) -> Section:
    control = {x.get("features"): x for x in (report.get("control") or {}).get("classifiers") or []}
    rows = []
    for clf in report.get("classifiers") or []:
        lo, hi = _accuracy_ci(clf)
        auc = f", AUC {format_number(clf['auc'])}" if _finite(clf.get("auc")) else ""
        other = control.get(clf.get("features"))
        rows.append(
            (
                f"accuracy, {clf.get('features')} features",
                f"{format_number(clf.get('accuracy'))} [{format_number(lo)}, {format_number(hi)}]{auc}, "
                f"p {format_p(clf.get('pvalue'))}",
                f"{format_number(other.get('accuracy'))}, p {format_p(other.get('pvalue'))}" if other else "–",
            )
        )
    return Section(
        "classifiers",
        "Rotation classifiers (stored pose vs a random rotation; 0.5 = cannot tell)",
        DATASET_VS_CONTROL,
        rows,
        _skipped(report, "models"),
    )


def _regression(report: dict) -> Section:
    rows, flagged = [], False
    for r in regression_rows(report):
        flagged |= r["frame_dependent"]
        name = r["label"] + (" *" if r["frame_dependent"] else "")
        rows.append((name, r["error_text"], r["gain_text"], r["control_gain_text"]))
    return Section(
        "regression",
        REGRESSION_TITLE,
        ("property", "MSE vs mean baseline", "gain", "control gain"),
        rows,
        _skipped(report, "models", "models.regression"),
        [FRAME_DEPENDENT_NOTE] if flagged else [],
    )


def _similarity(report: dict) -> Section:
    s = report.get("similarity") or {}
    c = (report.get("control") or {}).get("similarity") or {}
    rows = []
    if s:
        rows = [
            ("pairs sampled", str(s.get("n_pairs", "–")), str(c.get("n_pairs", "–"))),
            (
                "chemical neighbours within 30°",
                format_number(s.get("nn_within_30deg")),
                format_number(c.get("nn_within_30deg")),
            ),
            (
                "random pairs within 30°",
                format_number(s.get("random_within_30deg")),
                format_number(c.get("random_within_30deg")),
            ),
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
# The paper's figure for full QM9 as stored: a landmark on the KL scale (0 = uniform).
KL_LANDMARK = 0.90
CLASSIFIER_BASIS = {
    "frame": "reads only the canonical frame R (pure orientation); any model sees this",
    "frame+composition": "reads R plus rotation-invariant size and composition; any model sees this",
    "atom-order": "also reads lab-frame directions between the first atoms in file order; "
    "only models that see atoms in order (sequence or list models) can exploit it",
}
REMEDY = (
    "Before training a model that is not rotation-invariant, augment with random rotations, "
    "or train on the de-biased export (orientscope export: every molecule randomly rotated)."
)
NO_REMEDY = "Nothing to do for orientation: models trained on it cannot learn a preferred pose."
TOOLTIPS = {
    "kl": "Kullback–Leibler divergence of the orientations from a uniform distribution over rotations (SO(3)), "
    "k-nearest-neighbour estimate with a bootstrap 95% interval. 0 = uniform; full QM9 as stored scores about 0.90.",
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
}


@dataclass(frozen=True)
class Headline:
    """The three answers of the first screen, in plain words.

    aligned : True, False or None (not enough molecules)
    weak : not aligned by the orientation statistics, yet a frame-only classifier finds the stored pose
    answer : is it aligned (one sentence)
    strength : how strongly, on the KL scale with its landmarks
    kl : the dataset's KL, for drawing it on a 0..landmark scale (None if not computed)
    remedy : what to do about it
    evidence : one sentence per classifier: its accuracy and what it rests on
    """

    aligned: bool | None
    answer: str
    strength: str
    kl: float | None
    remedy: str
    evidence: list[str] = field(default_factory=list)
    weak: bool = False


def classifier_evidence(report: dict) -> list[str]:
    """One sentence per rotation classifier: accuracy, p, and what the figure rests on.

    Frame-only classifiers come first: the atom-order figure reads file order and must
    never stand alone as the headline.
    """
    order = {name: i for i, name in enumerate(CLASSIFIER_BASIS)}
    out = []
    for clf in sorted(report.get("classifiers") or [], key=lambda c: order.get(c.get("features"), 99)):
        name = clf.get("features")
        basis = CLASSIFIER_BASIS.get(name, "")
        out.append(
            f"{name} classifier: {format_percent(clf.get('accuracy'), 0, signed=False)} accuracy "
            f"(p {format_p(clf.get('pvalue'))}; 50 % = cannot tell)" + (f"; it {basis}" if basis else "")
        )
    return out


def headline(report: dict) -> Headline:
    """Is the set aligned, how strongly, and what to do: the first screen's plain words."""
    v = report.get("verdict") or {}
    aligned = v.get("aligned")
    kl = (report.get("kl") or {}).get("value")
    ctl = ((report.get("control") or {}).get("kl") or {}).get("value")
    weak = False
    if aligned is None:
        answer = v.get("text") or "Not enough molecules to say."
    elif aligned:
        answer = "Yes: the stored poses are aligned (far from random orientations)."
    else:
        answer = "Not detectably: the stored poses look like random orientations."
        frame_only = [
            c
            for c in report.get("classifiers") or []
            if c.get("features") != "atom-order" and _finite(c.get("pvalue")) and c["pvalue"] < 1e-3
        ]
        if frame_only:
            weak = True
            best = max(frame_only, key=lambda c: c.get("accuracy") or 0)
            answer = (
                "Weakly: the orientation statistics find no clear preference, but the "
                f"{best['features']} classifier tells stored poses from random ones "
                f"({format_percent(best.get('accuracy'), 0, signed=False)}, p {format_p(best.get('pvalue'))})."
            )
    if _finite(kl):
        own = f" (this set's own random-rotation control: {format_number(ctl, '.2f')})" if _finite(ctl) else ""
        strength = (
            f"KL to uniform {format_number(kl, '.2f')} on a scale where 0 = uniform{own} "
            f"and full QM9 as stored = {KL_LANDMARK:.2f}."
        )
    else:
        strength = "Orientation statistics were not computed: " + (
            _skipped(report, "statistics") or "not enough molecules."
        )
    return Headline(
        aligned=aligned,
        answer=answer,
        strength=strength,
        kl=float(kl) if _finite(kl) else None,
        remedy=REMEDY if aligned or weak else NO_REMEDY if aligned is False else "",
        evidence=classifier_evidence(report),
        weak=weak,
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
        }
        for r in report.get("regression") or []
    ]
    shown = {k: v for k, v in report.items() if k not in ("kl", "kl_sign_invariant", "ks", "classifiers", "similarity")}
    shown.update({k: v for k, v in c.items() if k != "description"})
    shown.update(
        {
            "name": f"{report.get('name', report.get('dataset'))} · control",
            "regression": regression,
            "control": {},
            "verdict": {"aligned": None, "text": "Control: every molecule rotated by a seeded Haar-uniform rotation"},
        }
    )
    return shown
