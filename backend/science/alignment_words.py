"""Every sentence about a set's alignment, built from the verdict's fields alone: one home for the words.

The verdict's text and badge, one line per test, the headline's "how strongly", the control's self-check,
the compare view's KL difference and the KL scale's labels come from here; ``services.report_format``
hands them to the CLI, the REST texts, the dashboard, the notebook and the HTML report. The words follow
three rules:

* a test is cited as evidence only when it rejected (its Holm p below α), and always with its own
  estimate and interval, never with another test's;
* an effect is "strong" or "small" only when its interval lies wholly above or below its bar; an
  interval across the bar reads "uncertain", and N alone never decides;
* every number is written by :mod:`orientscope.core.numbers`, with enough decimals that an estimate, its
  bounds and the bar they are judged against read apart, so a word never contradicts a number beside it.

Each function reads only the fields of an evidence row (``test``, ``statistic``, ``ci95``, ``pvalue``,
``p_holm``, ``rejects``, ``role``, ``size``) or of a report, so a new test in the family (a new row) is
written by the same rules. ``tests/sentences.py`` parses every number these sentences write.
"""

from __future__ import annotations

from orientscope.core.numbers import (
    decimals_apart,
    format_count,
    format_estimate,
    format_interval,
    format_number,
    format_p_clause,
    format_percent,
    is_number,
)
from orientscope.science.frames import SYMMETRY_KINDS, SYMMETRY_TEXT
from orientscope.science.so3_stats import KL_AT_N_KEY, KL_KEY

BADGES = {
    "strong": "Aligned — strong effect",
    "uncertain": "Aligned — effect size uncertain",
    "small": "Weakly aligned",
    "not_detected": "Not detected",
    "too_few": "Too few molecules",
    "not_tested": "Not tested",
}
# Which size the text cites when several read strong: classifiers of the pose alone, then KL, then the
# atom-order classifier (it also reads file order, so it never leads when another size will do).
SIZE_ORDER = ("frame classifier", "frame+composition classifier", "KL", "atom-order classifier")
READING_WORDS = {"strong": "lies above", "small": "lies below", "uncertain": "straddles"}
# The evidence row's name of Bingham's axial test (science/verdict.py writes it).
BINGHAM = "Bingham axial"
# What a size cannot say by its number alone.
SIZE_NOTES = {"atom-order classifier": "; only models that read atoms in file order can exploit it"}
NEGATIVE_KL_NOTE = (
    "An estimate below 0 is noise, not an error: on uniform poses the k-NN estimator centres on 0, "
    "so about half of its values fall below 0."
)


# ----------------------------------------------------------------- numbers of one figure
def _accuracy_digits(values) -> int:
    """Decimals of a percentage at which these fractions read apart (from whole percents)."""
    return decimals_apart([100 * v for v in values if is_number(v)], start=0, most=3)


def _figure(value, interval, kind: str, bar=None) -> tuple[str, int]:
    """``value [low, high]`` in ``kind``, and the decimals used (so its bar is written alike)."""
    values = [value, *(interval or ()), bar]
    digits = _accuracy_digits(values) if kind == "percent" else decimals_apart(values, start=2, most=4)
    return format_estimate(value, interval, kind, digits), digits


def _bar_text(bar: float, kind: str, digits: int) -> str:
    return format_percent(bar, digits, signed=False) if kind == "percent" else format_number(bar, f".{digits}f")


def _judged_bar(row: dict):
    """The bar a row's own statistic is judged against (its size is its statistic), else None."""
    size = row.get("size") or {}
    return size.get("bar") if size.get("measure") in ("accuracy", "KL") else None


def _is_classifier(row: dict) -> bool:
    return str(row.get("test", "")).endswith("classifier")


def phrase_of(row: dict) -> str:
    """``the KL test``, ``the frame classifier``: how a sentence names a test."""
    name = row.get("test", "")
    return f"the {name}" if _is_classifier(row) else f"the {name} test"


def statistic_text(row: dict) -> str:
    """A test's own estimate with its interval: ``KL 0.51 [0.37, 0.68]``, ``the frame classifier's accuracy
    61 % [57 %, 65 %]``, ``KS D = 0.098``."""
    name, value, interval = row.get("test", ""), row.get("statistic"), row.get("ci95")
    if _is_classifier(row):
        return f"the {name}'s accuracy {_figure(value, interval, 'percent', _judged_bar(row))[0]}"
    if name == "KS":
        return f"KS D = {format_number(value, '.3f')}"
    if name == "KL":
        return f"KL {_figure(value, interval, 'number', _judged_bar(row))[0]}"
    if name == BINGHAM:
        return f"Bingham's S = {format_number(value, '.2f')}"  # named like KS's D: a bare "Bingham axial 188.43" read as a label
    return f"{name} {_figure(value, interval, 'number')[0]}"


def size_text(row: dict) -> str:
    """A rejecting test's effect size against its bar: ``KL 0.51 [0.37, 0.68] at N = 300 lies above its bar
    of 0.20``."""
    size = row["size"]
    figure, digits = _figure(size["value"], size.get("ci95"), size["kind"], size["bar"])
    if size["measure"] == "KL at n":
        subject = f"KL at n = {format_count(size.get('n'))}, {figure},"
    elif size["measure"] == "KL":
        subject = f"KL {figure} at N = {format_count(size.get('n'))}"
    elif size["measure"] == "accuracy":
        subject = f"the {row['test']}'s accuracy {figure}"
    else:
        subject = f"{size['measure']} {figure}"
    bar = _bar_text(size["bar"], size["kind"], digits)
    if not size.get("ci95"):
        return f"{subject} has no interval to judge against its bar of {bar}"
    return f"{subject} {READING_WORDS[size['reading']]} its bar of {bar}"


# ----------------------------------------------------------------- the verdict
def verdict_badge(verdict: dict) -> str:
    """The verdict in a few words, for the first screen: ``Aligned — strong effect``, ``Not detected`` ..."""
    code = verdict.get("code")
    if code in ("aligned", "weakly_aligned"):
        return BADGES.get(verdict.get("effect") or ("small" if code == "weakly_aligned" else "strong"))
    if code == "not_detected":
        return BADGES["not_detected"]
    n, least = verdict.get("n_molecules"), verdict.get("min_molecules")
    if _too_few_oriented(verdict):
        return BADGES["too_few"]
    return BADGES["not_tested"] if is_number(n) and is_number(least) and n >= least else BADGES["too_few"]


def _alpha(verdict: dict) -> str:
    return f"α = {format_number(verdict['alpha'], 'g')}"


def _too_few(verdict: dict) -> str:
    n, least = verdict.get("n_molecules") or 0, verdict.get("min_molecules")
    oriented = _too_few_oriented(verdict)
    if oriented:
        return oriented
    if is_number(least) and n >= least:
        return "Not tested: no test of the poses could run on this set (its skipped stages say why)."
    return (
        f"Too few molecules to test: the verdict needs at least {format_count(least)} (this set has {format_count(n)})."
    )


def _not_detected(verdict: dict) -> str:
    evidence = verdict["evidence"]
    best = min(evidence, key=lambda e: e["p_holm"])
    return (
        f"Not detected: {NONE_OF_ITS_TESTS} tells these poses from random orientations at {_alpha(verdict)} after "
        f"Holm's adjustment over {format_count(len(evidence))} tests (smallest: {phrase_of(best)}, "
        f"Holm p {format_p_clause(best['p_holm'])})."
    )


def _listed(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _detected(verdict: dict) -> str:
    evidence = verdict["evidence"]
    carried = [e for e in evidence if _rejects(e, verdict)]
    ps = {format_p_clause(e["p_holm"]) for e in carried}
    if len(carried) > 1 and len(ps) == 1:  # one p for all: said once, not once per test
        items = _listed([statistic_text(e) for e in carried])
        holm = f" (each Holm p {ps.pop()})"
    else:
        items = _listed([f"{statistic_text(e)} (Holm p {format_p_clause(e['p_holm'])})" for e in carried])
        holm = ""
    verb = "rejects" if len(carried) == 1 else "reject"
    prefix = "Weakly aligned" if verdict.get("effect") == "small" else "Aligned"
    found = (
        f"{prefix}: {format_count(len(carried))} of {format_count(len(evidence))} tests {verb} random orientations "
        f"at {_alpha(verdict)} after Holm's adjustment{holm}: {items}."
    )
    return f"{found} {effect_sentence(verdict)}"


def _rejects(row: dict, verdict: dict) -> bool:
    return bool(row.get("rejects", row.get("p_holm", 1.0) < verdict.get("alpha", 0.0)))


def _size_first(row: dict) -> int:
    return SIZE_ORDER.index(row["test"]) if row["test"] in SIZE_ORDER else len(SIZE_ORDER)


def effect_sentence(verdict: dict) -> str:
    """How strong the effect is, from the sizes of the tests that rejected (each against its bar)."""
    sized = sorted(
        (e for e in verdict["evidence"] if _rejects(e, verdict) and e.get("size")),
        key=_size_first,
    )
    effect = verdict.get("effect")
    if effect == "strong":
        row = next(e for e in sized if e["size"]["reading"] == "strong")
        return f"The effect is strong: {size_text(row)}{SIZE_NOTES.get(row['test'], '')}."
    if effect == "small":
        return f"The effect is small at this size: {_listed([size_text(e) for e in sized])}."
    if not sized:
        return "The effect size is uncertain: no test that rejected measures it against a bar."
    return f"The effect size is uncertain: {_listed([size_text(e) for e in sized])}."


def verdict_text(verdict: dict) -> str:
    """The verdict in one or two sentences, from its ``code``, ``effect``, ``evidence`` and ``alpha``."""
    code = verdict.get("code")
    if code == "too_few" or not verdict.get("evidence"):
        return _too_few(verdict)
    if code == "not_detected":
        return _not_detected(verdict)
    return _detected(verdict)


# ----------------------------------------------------------------- what to do
# "none of the verdict's tests", never "no test": the similarity-pose test is no member of the family and may
# find chemically similar molecules sharing poses on the same page (CCD model coordinates: enrichment 4.84).
NONE_OF_ITS_TESTS = "none of the verdict's tests"
REMEDY = (
    "Before training a model that is not rotation-invariant, augment with random rotations, "
    "or train on the de-biased export (orientscope export: every molecule randomly rotated)."
)
TO_BE_SAFE = (
    "Before training a model that is not rotation-invariant, augment with random rotations to be safe, "
    "or test more molecules."
)


def remedy_text(verdict: dict) -> str:
    """What to do, from the verdict's code and its tests' effect sizes ('' when nothing was tested).

    ``not_detected`` is not "not aligned": on a small set an effect that matters can go undetected. The
    words clear the set only when every effect size's interval lies below its bar; else they cite the size
    whose interval reaches its bar and advise augmenting to be safe.
    """
    code = verdict.get("code")
    if code in ("aligned", "weakly_aligned"):
        return REMEDY
    if code != "not_detected":
        return ""
    sized = sorted((e for e in verdict.get("evidence") or [] if (e.get("size") or {}).get("ci95")), key=_size_first)
    if not sized:
        return (
            f"{NONE_OF_ITS_TESTS.capitalize()} detects a preferred pose, and none of them measures how large one "
            f"could be here. {TO_BE_SAFE}"
        )
    open_ = [e for e in sized if e["size"]["reading"] != "small"]
    if open_:
        return (
            f"{NONE_OF_ITS_TESTS.capitalize()} detects a preferred pose, but at this size an effect that matters is "
            "not ruled out: "
            f"{size_text(open_[0])}. {TO_BE_SAFE}"
        )
    return (
        f"Nothing to do for orientation: {NONE_OF_ITS_TESTS} detects a preferred pose, and every effect size lies "
        "below its bar "
        f"({size_text(sized[0])})."
    )


# ----------------------------------------------------------------- what each test rests on
def evidence_figure(row: dict, alpha: float) -> str:
    """A test's figure, p, Holm p and outcome: ``86 % [83 %, 88 %] accuracy (p = 3.9e-30, Holm p = 1.9e-29:
    rejects at α = 0.001; 50 % = cannot tell)``."""
    name, value = row.get("test", ""), row.get("statistic")
    if _is_classifier(row):
        figure, tail = (
            f"{_figure(value, row.get('ci95'), 'percent', _judged_bar(row))[0]} accuracy",
            "; 50 % = cannot tell",
        )
    elif name == "KL":
        figure, tail = (
            f"{_figure(value, row.get('ci95'), 'number', _judged_bar(row))[0]} against its null at this N",
            "",
        )
    elif name == "KS":
        figure, tail = f"D = {format_number(value, '.3f')}", ""
    elif name == BINGHAM:
        figure, tail = f"S = {format_number(value, '.2f')}", ""
        size = row.get("size")
        if size:  # the effect size beside S: the axes' KL and its interval, in the bar's decimals
            figure += f", {size['measure']} {_figure(size['value'], size.get('ci95'), 'number', size['bar'])[0]}"
    else:
        figure, tail = _figure(value, row.get("ci95"), "number")[0], ""
    outcome = "rejects" if _rejects(row, {"alpha": alpha}) else "does not reject"
    return (
        f"{figure} (p {format_p_clause(row.get('pvalue'))}, Holm p {format_p_clause(row.get('p_holm'))}: "
        f"{outcome} at α = {format_number(alpha, 'g')}{tail})"
    )


def evidence_line(row: dict, alpha: float) -> str:
    """One test behind the verdict: its figure and outcome, then what it rests on."""
    line = f"{row.get('test', '')}: {evidence_figure(row, alpha)}"
    return f"{line}; it {row['role']}" if row.get("role") else line


# ----------------------------------------------------------------- KL in words
def kl_text(section: dict | None) -> str:
    """A KL section as ``0.51 [0.37, 0.68]``, its interval's bounds apart (``–`` if missing)."""
    section = section or {}
    interval = section.get("ci95")
    return _figure(section.get("value"), list(interval) if interval else None, "number")[0]


def strength_text(kl: dict, kl_null: dict | None, control_kl: dict | None) -> str:
    """How far from uniform: KL with its interval at N, the range uniform poses give at this N, and the
    control's own KL with its interval; a negative estimate says why it can be."""
    n = kl.get("n_used") or kl.get("n")
    at = f" at N = {format_count(n)}" if is_number(n) else ""
    text = f"KL to uniform {kl_text(kl)}{at} (0 = uniform; the interval is for the expected estimate at this N)"
    shown = [kl_text(kl)]
    low, high = (kl_null or {}).get("range95") or (None, None)
    if is_number(low) and is_number(high):
        digits = decimals_apart([low, high, 0.0], start=2, most=4)
        text += f"; uniform poses give 95 % of their estimates in {format_interval(low, high, fmt=f'.{digits}f')}"
    if control_kl and is_number(control_kl.get("value")):
        text += f"; this set's own random-rotation control: {kl_text(control_kl)}"
        shown.append(kl_text(control_kl))
    text += "."
    if any(t.startswith("-") for t in shown):
        text += " " + NEGATIVE_KL_NOTE
    return text


def control_text(control_verdict: dict | None) -> str:
    """The control's verdict by the same rule, as the self-check beside the dataset's ('' without one)."""
    text = (control_verdict or {}).get("text")
    return f"Self-check, the same molecules randomly rotated: {text}" if text else ""


def kl_mark_label(who: str, value) -> str:
    """A mark's label on the KL scale: ``this set 0.51``, ``control -0.06``."""
    return f"{who} {format_number(value, '.2f')}"


# ----------------------------------------------------------------- compare
def kl_difference_text(a: dict, b: dict, names: tuple[str, str] = ("A", "B")) -> str | None:
    """The KL difference of two reports, with each KL and its interval; None unless both have a KL.

    Sets of different sizes: the estimate grows with N, so the difference mixes alignment with size. Where
    both have KL at n, that compares them (its figures are in the sentence); else the sentence says what
    would compare them, never pointing at a figure that is not shown.
    """
    ka, kb = (r.get(KL_KEY) or {} for r in (a, b))
    if not (is_number(ka.get("value")) and is_number(kb.get("value"))):
        return None
    # The KL's own N (molecules with a full frame), the N the verdict's "at N = …" names; older reports lack it.
    na, nb = (k.get("n_used") or k.get("n") or r.get("n_molecules") for k, r in ((ka, a), (kb, b)))
    text = (
        f"KL difference, {names[0]} − {names[1]}: {format_number(ka['value'] - kb['value'], '+.2f')} "
        f"({names[0]} {kl_text(ka)}, {names[1]} {kl_text(kb)}; 0 = the same distance from uniform)"
    )
    if na == nb:
        return text + "."
    sizes = (
        f"the sets differ in size (KL over N = {format_count(na)} and {format_count(nb)} molecules with a full frame) "
        "and the KL estimate grows with N"
    )
    at_a, at_b = (r.get(KL_AT_N_KEY) or {} for r in (a, b))
    if is_number(at_a.get("value")) and is_number(at_b.get("value")):
        n = at_a.get("subsample_size") or at_a.get("n")
        return (
            f"{text}; {sizes}, so KL at n = {format_count(n)} compares them: "
            f"{names[0]} {kl_text(at_a)}, {names[1]} {kl_text(at_b)}."
        )
    small, large = (a, b) if (na or 0) <= (nb or 0) else (b, a)
    # The size KL at n needs: a missing one says it (its n); a computed one is at its subsample size.
    needs = next((r.get("n") for r in (at_a, at_b) if not is_number(r.get("value")) and r.get("n")), None)
    needs = needs or next((r.get("subsample_size") for r in (at_a, at_b) if r.get("subsample_size")), None)
    needs_text = f" (it needs {format_count(needs)} molecules in each)" if is_number(needs) else ""
    limit = f" --limit {int(small['n_molecules'])}" if is_number(small.get("n_molecules")) else ""
    return (
        f"{text}; {sizes}, so this difference mixes alignment with size. KL at n, which compares sets of any "
        f"size, is not computed for both{needs_text}: compare the two verdicts' effect sizes, each against its "
        f"bar, or compute the larger set at the other's size (orientscope report {large.get('dataset', 'DATASET')}"
        f"{limit}) and compare KL at equal N."
    )


# ----------------------------------------------------------------- who has an orientation
SYMMETRY_CLASS = {kind: cls for kind, (cls, _) in SYMMETRY_KINDS.items()}


def orientation_note(orientation: dict | None) -> str:
    """Which molecules the SO(3) statistics leave out and why, from ``{none, axis, full, by_symmetry}`` counts
    (the frames stage's ``orientation_classes``); "" when every molecule has a full frame."""
    if not orientation or not (orientation.get("none") or orientation.get("axis")):
        return ""
    kinds = orientation.get("by_symmetry") or {}

    def listed(cls: str) -> str:
        parts = [
            f"{format_count(kinds[k])} {text if kinds[k] != 1 else text[:-1]}"  # every kind's plural ends in "s"
            for k, text in SYMMETRY_TEXT.items()
            if SYMMETRY_CLASS[k] == cls and kinds.get(k)
        ]
        return f" ({', '.join(parts)})" if parts else ""

    out = []
    if orientation.get("none"):
        out.append(f"{format_count(orientation['none'])} with no orientation{listed('none')}")
    if orientation.get("axis"):
        out.append(
            f"{format_count(orientation['axis'])} with only an axis{listed('axis')}, tested on that axis by Bingham's test"
        )
    return f"Left out of the SO(3) statistics (KL, KS, classifiers): {' and '.join(out)}."


def _too_few_oriented(verdict: dict) -> str | None:
    """Why a set of enough molecules has too few with an orientation to test, or None if that is not why."""
    orientation, least, n = verdict.get("orientation"), verdict.get("min_molecules"), verdict.get("n_molecules") or 0
    if not orientation or not is_number(least) or n < least:
        return None
    none, axis, full = (int(orientation.get(k) or 0) for k in ("none", "axis", "full"))
    if full >= least or axis >= least:
        return None
    return (
        f"Too few molecules with an orientation to test: the verdict needs at least {format_count(least)} molecules "
        f"with a full frame, or {format_count(least)} with an axis; of {format_count(n)}, "
        f"{format_count(none)} {'has' if none == 1 else 'have'} no orientation, {format_count(axis)} only an axis "
        f"and {format_count(full)} a full frame."
    )


# ----------------------------------------------------------------- the control as a self-check
def control_failed(code: str, rejected: list[str], causes: list[str]) -> str:
    """The control check's sentence when the random-rotation control is called aligned."""
    tests = ", ".join(rejected) if rejected else "its tests"
    return (
        f"Control check failed: the same molecules, each turned by a seeded random rotation, are called "
        f"{code.replace('_', ' ')} ({tests} {'rejects' if len(rejected) == 1 else 'reject'} random orientations), so "
        f"the tests are not calibrated on this set and the verdict below cannot be trusted. Likely cause: {causes[0]}"
    )


def control_causes(control: dict, n: int, rejected: list[str], alpha: float) -> list[str]:
    """What the control's counts point to, most likely first (the last is always chance)."""
    causes = []
    reasons = control.get("degenerate_reasons") or {}
    classes = control.get("orientation_classes")
    so3_tests = [t for t in rejected if t != BINGHAM]
    if classes is None:  # a result computed before the symmetry rule: every frame counted as a pose
        single = int(reasons.get("single_atom") or 0)
        axis = (
            int(reasons.get("linear") or 0)
            + int(reasons.get("eigen_gap_12") or 0)
            + int(reasons.get("eigen_gap_23") or 0)
        )
        if single or axis:
            causes.append(
                f"{format_count(single)} molecules have no orientation (single atoms) and up to {format_count(axis)} "
                "only an axis (linear molecules, symmetric tops), and this result was computed under an older rule "
                "that counted their frames as poses: recompute it (orientscope precompute)."
            )
    if BINGHAM in rejected and classes:
        causes.append(
            f"the defined axes of the {format_count(classes.get('axis') or 0)} axis-only molecules do not follow the "
            "rotation: some are probably near the eigenvalue-gap tolerance, so their defined axis changes with the pose."
        )
    ties = max(int(reasons.get("sign_tie_1") or 0), int(reasons.get("sign_tie_2") or 0))
    full = int((classes or {}).get("full") or n)
    if so3_tests and full and ties >= 0.25 * full:
        causes.append(
            f"{format_count(ties)} of {format_count(full)} molecules with a full frame have a finite symmetry (sign "
            "ties: the third moment picks the signs of their axes), so several frames of one molecule compete."
        )
    # "A cause above" only where one is listed: a failure with no other cause in sight is chance or unknown.
    again = "points to a cause above" if causes else "is not chance: report it with the dataset"
    causes.append(
        f"chance: at α = {alpha:g} about one control in {round(1 / alpha):,} fails on a calibrated set. Re-run with "
        f"another --seed; a control that fails again {again}."
    )
    return causes
