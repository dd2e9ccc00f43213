"""Every number in every generated sentence, checked against the field it stands for (issue 40).

Three parts, each open to more:

* :func:`build_grid`: report fixtures the sentences are written for: QM9 subsets of 3, 30 and 300
  molecules, the 300 Haar-rotated and 30 turned to one pose (each through the pipeline, as a user's
  upload), and constructed full-QM9-like reports (strong, an effect size across its bar, a small effect)
  with their verdicts by the service's rule. :data:`PAIRS` are the compare view's pairs among them.
* :data:`SOURCES`: per surface, the sentences a person reads and what each is about (:class:`Said`):
  the verdict, its badge, the control's verdict, the headline, each test's line, the notebook card's
  rows, the CLI's verdict lines, the KL scale's labels, the compare view's KL difference.
* :data:`CLAUSES`: how a number is written in a sentence (a regular expression) and which field it
  must agree with (a check). :func:`problems` matches them in order, removes what each matched, and
  reports any number left over: a sentence may only show a number some clause accounts for.

A number agrees with its field when the field rounds to it at the decimals shown (half a unit of the
last digit shown; ``< 1e-300`` holds any p below that bound), and an interval's words ("lies above its
bar") agree with the numbers as shown. To check another family of sentences (the model audit's), append
its sources to :data:`SOURCES` and its clauses to :data:`CLAUSES`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# A number as the formatter writes it: "0.51", "-0.003", "130,831", "86 %", "1.6e-27", "< 1e-300", "> 1,000 %".
NUM = r"(?:[<>] )?[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?(?: %)?"
# A p-value after its name: "= 0.012", "< 1e-300".
P = r"(?:= " + NUM + r"|< 1e-300)"
INTERVAL = r"(?: \[(?P<lo>" + NUM + r"), (?P<hi>" + NUM + r")\])?"
HOLM = r"(?: \(Holm p (?P<holm>" + P + r")\))?"
# Two sets' figures side by side: "A 0.51 [0.37, 0.68], B -0.06 [-0.13, 0.01]".
PAIR = (
    r"A (?P<est>" + NUM + r")" + INTERVAL
    + r", B (?P<b>" + NUM + r")(?: \[(?P<blo>" + NUM + r"), (?P<bhi>" + NUM + r")\])?"
)  # fmt: skip
DIGIT = re.compile(r"\d")


# ----------------------------------------------------------------- numbers as shown
def shown(text: str) -> tuple[float, float, str | None]:
    """``(value, tolerance, bound)`` of a number as written: half a unit of its last digit; ``<``/``>`` bounds."""
    t = text.strip().removeprefix("=").strip()
    bound = None
    if t[:2] in ("< ", "> "):
        bound, t = t[0], t[2:]
    percent = t.endswith("%")
    t = t.removesuffix("%").strip().replace(",", "")
    mantissa, _, exponent = t.partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    unit = 10.0**-decimals * (10.0 ** int(exponent) if exponent else 1.0)
    scale = 0.01 if percent else 1.0
    return float(t) * scale, 0.5 * unit * scale * (1 + 1e-9) + 1e-15, bound


def agrees(text: str | None, value) -> bool:
    """The number ``text`` is what ``value`` reads as at the decimals shown."""
    if text is None:
        return value is None
    if value is None or not np.isfinite(value):
        return text.strip() == "–"
    x, tol, bound = shown(text)
    if bound == "<":
        return value < x + tol
    if bound == ">":
        return value > x - tol
    return abs(value - x) <= tol


# ----------------------------------------------------------------- what a sentence is about
@dataclass
class Said:
    """One sentence as a person reads it, and the figures it is about.

    figures : the report (or its control's figures, with ``n_molecules``) the sentence speaks of
    control : that report's control figures (the headline's "how strongly" shows the control's KL)
    other : the compare view's set B
    """

    surface: str
    text: str
    figures: dict
    control: dict | None = None
    other: dict | None = None
    facts: dict = field(default_factory=dict)  # what the clauses found, for the word checks


def _row(figures: dict, test: str) -> dict | None:
    return next((e for e in (figures.get("verdict") or {}).get("evidence") or [] if e["test"] == test), None)


def _check(problems: list, ok: bool, what: str) -> None:
    if not ok:
        problems.append(what)


def _interval(problems, m, ci, what: str, lo="lo", hi="hi") -> None:
    if m.group(lo) is None:
        _check(problems, not ci or not all(np.isfinite(ci)), f"{what}: interval {ci} not shown")
        return
    _check(problems, ci is not None and agrees(m.group(lo), ci[0]), f"{what}: low {m.group(lo)} vs {ci}")
    _check(problems, ci is not None and agrees(m.group(hi), ci[1]), f"{what}: high {m.group(hi)} vs {ci}")


def _alpha(m, said: Said) -> list[str]:
    return [] if agrees(m.group("alpha"), said.figures["verdict"]["alpha"]) else [f"alpha {m.group('alpha')}"]


def _counts(m, said: Said) -> list[str]:
    evidence = said.figures["verdict"]["evidence"]
    out = []
    _check(out, agrees(m.group("k"), sum(e["rejects"] for e in evidence)), f"{m.group('k')} tests rejected")
    _check(out, agrees(m.group("m"), len(evidence)), f"of {m.group('m')} tests")
    return out


def _over(m, said: Said) -> list[str]:
    return [] if agrees(m.group("m"), len(said.figures["verdict"]["evidence"])) else [f"over {m.group('m')} tests"]


def _too_few(m, said: Said) -> list[str]:
    v, out = said.figures["verdict"], []
    _check(out, agrees(m.group("least"), v["min_molecules"]), f"at least {m.group('least')}")
    _check(out, agrees(m.group("n"), said.figures["n_molecules"]), f"this set has {m.group('n')}")
    return out


def _test_of(label: str) -> str:
    """The evidence row's test name of a label as sentences write it."""
    label = label.removeprefix("the ").removesuffix("'s accuracy").removesuffix(" test")
    return {"KS D =": "KS", "Bingham's S =": "Bingham axial"}.get(label, label)


def _reading_holds(word: str, m, problems: list, what: str) -> None:
    """The words about an interval and its bar agree with the numbers as shown."""
    lo, hi, bar = (shown(m.group(k))[0] if m.group(k) else None for k in ("lo", "hi", "bar"))
    if word == "lies above":
        _check(problems, lo is not None and lo >= bar, f"{what}: 'lies above' but shows {lo} vs bar {bar}")
    elif word == "lies below":
        _check(problems, hi is not None and hi < bar, f"{what}: 'lies below' but shows {hi} vs bar {bar}")
    elif word == "straddles":
        _check(problems, lo is not None and lo < bar <= hi, f"{what}: 'straddles' but shows [{lo}, {hi}] vs {bar}")
    else:
        _check(problems, lo is None, f"{what}: 'no interval' but shows one")


WORD_READING = {"lies above": "strong", "lies below": "small", "straddles": "uncertain"}


def _size(m, said: Said, measure: str) -> list[str]:
    """``<subject> <est> [lo, hi] <word> its bar of <bar>``: a rejecting test's size, judged as shown."""
    out = []
    test = m.group("clf") if measure == "accuracy" else "Bingham axial" if measure == "axial KL" else "KL"
    row = _row(said.figures, test)
    if row is None or not row.get("size"):
        return [f"size of {test}: no such row with a size"]
    size = row["size"]
    # What to do after "Not detected" cites the size that is not ruled out: a bound, not evidence.
    _check(out, row["rejects"] or said.surface == "remedy", f"{test} is cited for the effect size but did not reject")
    _check(out, agrees(m.group("est"), size["value"]), f"{test} size {m.group('est')} vs {size['value']}")
    _interval(out, m, size.get("ci95"), f"{test} size")
    _check(out, agrees(m.group("bar"), size["bar"]), f"{test} bar {m.group('bar')} vs {size['bar']}")
    n = m.groupdict().get("n")
    _check(out, n is None or agrees(n, size.get("n")), f"{test} size at {n} vs {size.get('n')}")
    _check(out, measure == size["measure"], f"{test}: {measure} shown for {size['measure']}")
    word = m.group("word")
    _reading_holds(word, m, out, test)
    _check(out, WORD_READING.get(word, "uncertain") == size["reading"], f"{test}: '{word}' vs {size['reading']}")
    said.facts.setdefault("sizes", []).append((test, word))
    return out


def _cited(m, said: Said) -> list[str]:
    """A test cited in the verdict's text: its own estimate, interval and Holm p; it must have rejected."""
    out = []
    test = _test_of(m.group("label"))
    row = _row(said.figures, test)
    if row is None:
        return [f"cited {test}: no such test in the evidence"]
    _check(out, row["rejects"], f"{test} is cited as evidence but did not reject (Holm p {row['p_holm']})")
    _check(out, agrees(m.group("est"), row["statistic"]), f"{test} {m.group('est')} vs {row['statistic']}")
    if "lo" in m.re.groupindex:
        _interval(out, m, row.get("ci95"), test)
    if m.group("holm"):
        _check(out, agrees(m.group("holm"), row["p_holm"]), f"{test} Holm p {m.group('holm')} vs {row['p_holm']}")
    said.facts.setdefault("cited", []).append(test)
    return out


def _each_holm(m, said: Said) -> list[str]:
    rows = [e for e in said.figures["verdict"]["evidence"] if e["rejects"]]
    bad = [e["test"] for e in rows if not agrees(m.group("holm"), e["p_holm"])]
    return [f"each Holm p {m.group('holm')}: not for {bad}"] if bad else []


def _smallest(m, said: Said) -> list[str]:
    evidence = said.figures["verdict"]["evidence"]
    best = min(evidence, key=lambda e: e["p_holm"])
    out = []
    _check(out, _test_of(m.group("label")) == best["test"], f"smallest Holm p is {best['test']}'s")
    _check(out, agrees(m.group("holm"), best["p_holm"]), f"smallest Holm p {m.group('holm')} vs {best['p_holm']}")
    return out


FIGURE = re.compile(
    r"^(?:[DS] = )?(?P<est>"
    + NUM
    + r")"
    + INTERVAL
    + r"(?: accuracy| against its null at this N)?"
    # Bingham's line: the effect size beside S, "S = 500.00, axial KL 8.90 [8.90, 8.90]"
    + r"(?:, (?P<measure>axial KL) (?P<size>"
    + NUM
    + r")(?: \[(?P<slo>"
    + NUM
    + r"), (?P<shi>"
    + NUM
    + r")\])?)?$"
)


def _evidence_line(m, said: Said) -> list[str]:
    """``<test>: <figure> (p <p>, Holm p <p>: rejects at α = <alpha>)[; it <role>]``: every test, with its outcome."""
    out = []
    row = _row(said.figures, m.group("test"))
    if row is None:
        return [f"line of {m.group('test')}: no such test"]
    figure = FIGURE.match(m.group("figure"))
    if figure is None:
        return [f"{row['test']}: figure {m.group('figure')!r} not understood"]
    _check(out, agrees(figure.group("est"), row["statistic"]), f"{row['test']} {figure.group('est')}")
    _interval(out, figure, row.get("ci95"), row["test"])
    size = row.get("size") or {}
    if figure.group("measure"):
        _check(out, figure.group("measure") == size.get("measure"), f"{row['test']}: size {figure.group('measure')}")
        _check(out, agrees(figure.group("size"), size.get("value")), f"{row['test']} size {figure.group('size')}")
        _interval(out, figure, size.get("ci95"), f"{row['test']} size", lo="slo", hi="shi")
    else:
        _check(out, row["test"] != "Bingham axial" or not size, f"{row['test']}: its size is not shown")
    _check(out, agrees(m.group("p"), row["pvalue"]), f"{row['test']} p {m.group('p')} vs {row['pvalue']}")
    _check(out, agrees(m.group("holm"), row["p_holm"]), f"{row['test']} Holm p {m.group('holm')}")
    _check(out, agrees(m.group("alpha"), said.figures["verdict"]["alpha"]), f"alpha {m.group('alpha')}")
    _check(out, (m.group("outcome") == "rejects") == row["rejects"], f"{row['test']}: '{m.group('outcome')}'")
    _check(out, m.group("role") is None or m.group("role") == row["role"], f"{row['test']}: role differs")
    return out


def _kl_section(m, section: dict | None, what: str) -> list[str]:
    out = []
    section = section or {}
    _check(out, agrees(m.group("est"), section.get("value")), f"{what} {m.group('est')} vs {section.get('value')}")
    _interval(out, m, section.get("ci95"), what)
    return out


def _strength_kl(m, said: Said) -> list[str]:
    kl = said.figures.get("kl") or {}
    out = _kl_section(m, kl, "KL to uniform")
    _check(out, m.group("n") is None or agrees(m.group("n"), kl.get("n_used") or kl.get("n")), f"N {m.group('n')}")
    said.facts.setdefault("kl_shown", []).append(m.group("est"))
    return out


def _null_range(m, said: Said) -> list[str]:
    out = []
    low, high = said.figures["verdict"]["kl_null"]["range95"]
    _check(out, agrees(m.group("lo"), low) and agrees(m.group("hi"), high), f"null range vs {[low, high]}")
    _check(out, shown(m.group("lo"))[0] < shown(m.group("hi"))[0], "the null range reads as one number")
    return out


def _control_kl(m, said: Said) -> list[str]:
    said.facts.setdefault("kl_shown", []).append(m.group("est"))
    return _kl_section(m, (said.control or {}).get("kl"), "control KL")


def _difference(m, said: Said) -> list[str]:
    a, b = (said.figures.get("kl") or {}), (said.other.get("kl") or {})
    out = _kl_section(m, a, "A's KL")
    out += _kl_section(_Renamed(m, {"est": "b", "lo": "blo", "hi": "bhi"}), b, "B's KL")
    _check(out, agrees(m.group("d"), a["value"] - b["value"]), f"difference {m.group('d')}")
    return out


class _Renamed:
    """A match whose groups are read under other names (one clause, two figures of the same shape)."""

    def __init__(self, m, names: dict):
        self.m, self.names = m, names

    def group(self, name):
        return self.m.group(self.names.get(name, name))


def _kl_n(report: dict):
    """The N a report's KL is estimated over (its molecules with a full frame), as its verdict's "at N = …"."""
    kl = report.get("kl") or {}
    return kl.get("n_used") or kl.get("n")


def _sizes_of_pair(m, said: Said) -> list[str]:
    out = []
    _check(out, agrees(m.group("na"), _kl_n(said.figures)), f"N {m.group('na')} (A)")
    _check(out, agrees(m.group("nb"), _kl_n(said.other)), f"N {m.group('nb')} (B)")
    return out


def _pair_at_n(m, said: Said) -> list[str]:
    a, b = (said.figures.get("kl_at_n") or {}), (said.other.get("kl_at_n") or {})
    out = _kl_section(m, a, "A's KL at n") + _kl_section(_Renamed(m, {"est": "b", "lo": "blo", "hi": "bhi"}), b, "B's")
    _check(out, agrees(m.group("n"), a.get("subsample_size") or a.get("n")), f"KL at n = {m.group('n')}")
    return out


def _needs(m, said: Said) -> list[str]:
    """The size KL at n needs: a missing one's ``n`` (what it needs), a computed one's subsample size."""
    parts = [r.get("kl_at_n") or {} for r in (said.figures, said.other)]
    ns = [p.get("n") for p in parts if p.get("value") is None] + [p.get("subsample_size") for p in parts]
    return [] if any(agrees(m.group("n"), n) for n in ns if n) else [f"needs {m.group('n')} vs {ns}"]


def _limit(m, said: Said) -> list[str]:
    sets = sorted((said.figures, said.other), key=lambda r: r["n_molecules"])
    out = []
    _check(out, m.group("dataset") == sets[1].get("dataset"), f"report {m.group('dataset')}: not the larger set")
    _check(out, agrees(m.group("n"), sets[0]["n_molecules"]), f"--limit {m.group('n')}")
    return out


def _not_computed(m, said: Said) -> list[str]:
    """A stage's own reason, quoted: it is the report's ``skipped_stages`` entry, and its count is the set's."""
    out = []
    reason, got = m.group("reason"), re.search(r"got (" + NUM + r")$", m.group("reason"))
    _check(out, reason == (said.figures.get("skipped_stages") or {}).get("statistics"), f"reason {reason!r}")
    _check(out, got is None or agrees(got.group(1), said.figures.get("n_molecules")), f"count in {reason!r}")
    return out


def _mark(m, said: Said) -> list[str]:
    figures = said.figures if m.group("who") == "this set" else said.control
    value = ((figures or {}).get("kl") or {}).get("value")
    return [] if agrees(m.group("est"), value) else [f"{m.group('who')} {m.group('est')} vs {value}"]


@dataclass(frozen=True)
class Clause:
    """How one kind of number is written (``pattern``) and the field it must agree with (``check``)."""

    name: str
    pattern: re.Pattern
    check: Callable[[re.Match, Said], list[str]]


def _clause(name: str, pattern: str, check) -> Clause:
    return Clause(name, re.compile(pattern), check)


SIZE_TAIL = (
    r" (?P<word>lies above|lies below|straddles|has no interval to judge against) its bar of (?P<bar>" + NUM + r")"
)
# In the order they are matched: the more specific first; what a clause matched is taken out of the text.
CLAUSES: list[Clause] = [
    _clause(
        "evidence line",
        r"^(?P<test>[\w+ -]+?): (?P<figure>[^()]*?) \(p (?P<p>" + P + r"), Holm p (?P<holm>" + P + r"): "
        r"(?P<outcome>rejects|does not reject) at α = (?P<alpha>" + NUM + r")(?:; 50 % = cannot tell)?\)"
        r"(?:; it (?P<role>.*))?$",
        _evidence_line,
    ),
    _clause(
        "size: KL at n",
        r"KL at n = (?P<n>" + NUM + r"), (?P<est>" + NUM + r")" + INTERVAL + r"," + SIZE_TAIL,
        lambda m, said: _size(m, said, "KL at n"),
    ),
    _clause(
        "size: KL at N",
        r"KL (?P<est>" + NUM + r")" + INTERVAL + r" at N = (?P<n>" + NUM + r")" + SIZE_TAIL,
        lambda m, said: _size(m, said, "KL"),
    ),
    _clause(
        "size: axial KL",
        r"axial KL (?P<est>" + NUM + r")" + INTERVAL + SIZE_TAIL,
        lambda m, said: _size(m, said, "axial KL"),
    ),
    _clause(
        "size: accuracy",
        r"the (?P<clf>[\w+-]+ classifier)'s accuracy (?P<est>" + NUM + r")" + INTERVAL + SIZE_TAIL,
        lambda m, said: _size(m, said, "accuracy"),
    ),
    _clause(
        "too few",
        r"at least (?P<least>" + NUM + r") \(this set has (?P<n>" + NUM + r")\)",
        _too_few,
    ),
    _clause("k of m tests", r"(?P<k>\d[\d,]*) of (?P<m>\d[\d,]*) tests", _counts),
    _clause("over m tests", r"over (?P<m>\d[\d,]*) tests", _over),
    _clause(
        "smallest",
        r"smallest: (?P<label>the [\w+ -]+?(?: test| classifier)), Holm p (?P<holm>" + P + r")",
        _smallest,
    ),
    _clause("each Holm p", r"\(each Holm p (?P<holm>" + P + r")\)", _each_holm),
    *(
        _clause(f"cited: {name}", r"(?P<label>" + label + r") (?P<est>" + NUM + r")" + tail + HOLM, _cited)
        for name, label, tail in (
            ("KL", "KL", INTERVAL),
            ("classifier", r"the [\w+-]+ classifier's accuracy", INTERVAL),
            ("KS", "KS D =", ""),
            ("Bingham", "Bingham's S =", ""),
        )
    ),
    _clause("alpha", r"α = (?P<alpha>" + NUM + r")", _alpha),
    _clause(
        "KL to uniform",
        r"KL to uniform (?P<est>" + NUM + r")" + INTERVAL + r"(?: at N = (?P<n>" + NUM + r"))?",
        _strength_kl,
    ),
    _clause(
        "null range",
        r"uniform poses give 95 % of their estimates in \[(?P<lo>" + NUM + r"), (?P<hi>" + NUM + r")\]",
        _null_range,
    ),
    _clause("control KL", r"random-rotation control: (?P<est>" + NUM + r")" + INTERVAL, _control_kl),
    _clause(
        "KL difference",
        r"KL difference, A − B: (?P<d>" + NUM + r") \(" + PAIR + r"; 0 = the same distance from uniform\)",
        _difference,
    ),
    _clause("sizes of a pair", r"N = (?P<na>" + NUM + r") and (?P<nb>" + NUM + r")", _sizes_of_pair),
    _clause("KL at n of a pair", r"KL at n = (?P<n>" + NUM + r") compares them: " + PAIR, _pair_at_n),
    _clause("KL at n needs", r"it needs (?P<n>" + NUM + r") molecules in each", _needs),
    _clause("--limit", r"orientscope report (?P<dataset>[\w.-]+) --limit (?P<n>\d+)", _limit),
    _clause("statistics not computed", r"^Orientation statistics were not computed: (?P<reason>.*)$", _not_computed),
    _clause("KL scale label", r"^(?P<who>this set|control) (?P<est>" + NUM + r")$", _mark),
]
# Fixed words that hold a number of their own (a scale's zero, chance), not a figure of the set.
CONSTANTS = ("0 = uniform", "50 % = cannot tell", "below 0", "centres on 0", "95 % interval")


def problems(said: Said, clauses: list[Clause] | None = None) -> list[str]:
    """What in ``said.text`` disagrees with its figures, and any number no clause accounts for."""
    text, out = said.text, []
    for clause in clauses or CLAUSES:
        while (m := clause.pattern.search(text)) is not None:
            out += [f"{said.surface}: {p}" for p in clause.check(m, said)]
            text = text[: m.start()] + " § " + text[m.end() :]
    for constant in CONSTANTS:
        text = text.replace(constant, " § ")
    if DIGIT.search(text):
        out.append(f"{said.surface}: a number no clause accounts for in {text!r}")
    return out


# ----------------------------------------------------------------- the sentences of each surface
def control_figures(report: dict) -> dict:
    """The control's figures as a set of their own (its verdict, KL ...), with the set's size."""
    return {**(report.get("control") or {}), "n_molecules": report.get("n_molecules"), "dataset": "control"}


def _verdict_sentences(report: dict) -> list[Said]:
    out = []
    for figures in (report, control_figures(report)):
        v = figures.get("verdict") or {}
        out += [Said("verdict", v.get("text", ""), figures), Said("badge", v.get("badge", ""), figures)]
    return out


def _headline_sentences(report: dict) -> list[Said]:
    from orientscope.services.report_format import headline

    h = headline(report)
    control = control_figures(report)
    out = [Said("headline answer", h.answer, report), Said("headline badge", h.badge, report)]
    out.append(Said("headline strength", h.strength, report, control=control))
    out.append(
        Said("self-check", h.control_answer.removeprefix("Self-check, the same molecules randomly rotated: "), control)
    )
    out += [Said("evidence line", line, report) for line in h.evidence]
    if h.remedy:
        out.append(Said("remedy", h.remedy, report))
    return out


def _card_sentences(report: dict) -> list[Said]:
    from orientscope.services.report_format import evidence_figures

    return [
        Said("card row", f"{test}: {figure}", report)
        for test, figure in evidence_figures(report)
        if not figure.startswith("not a test")
    ]


def _cli_sentences(report: dict) -> list[Said]:
    from orientscope.cli import format_report

    lines = format_report({"name": "n", "dataset": "d", "frame": "pca", "sign_rule": "max", "seed": 0,
                           "n_degenerate": 0, **report}).splitlines()  # fmt: skip
    control = control_figures(report)
    out = []
    for title, figures in (("Verdict: ", report), ("Control's verdict, same rule: ", control)):
        i = next(i for i, line in enumerate(lines) if line.startswith(title))
        badge = lines[i].removeprefix(title).split(" (rule version ")[0]
        out += [Said("CLI badge", badge, figures), Said("CLI verdict", lines[i + 1].strip(), figures)]
    return out


def _scale_sentences(report: dict) -> list[Said]:
    from orientscope.app.verdict import kl_scale

    kl, control = (((r or {}).get("kl") or {}).get("value") for r in (report, report.get("control")))
    scale = kl_scale(kl, control)
    if scale is None:
        return []
    spans = [c for c in scale.children if getattr(c, "className", "").startswith("kl-mark")]
    return [Said("KL scale label", s.children, report, control=control_figures(report)) for s in spans]


SOURCES: list[Callable[[dict], list[Said]]] = [
    _verdict_sentences,
    _headline_sentences,
    _card_sentences,
    _cli_sentences,
    _scale_sentences,
]


def sentences(report: dict) -> list[Said]:
    """Every sentence about one report's alignment that a surface writes (a surface with nothing to say is left
    out: a control shown as a set has no control of its own)."""
    return [said for source in SOURCES for said in source(report) if said.text and said.figures.get("verdict")]


def compare_sentences(a: dict, b: dict) -> list[Said]:
    """The compare view's KL difference, as its column shows it."""
    from dash import html

    from orientscope.app.compare import compare_columns

    column, _ = compare_columns((a, b), (html.Div(), html.Div()))
    found = [
        c.children
        for slot in column
        for c in (slot.children if isinstance(slot.children, list) else [slot.children])
        if "kl-difference" in (getattr(c, "className", "") or "")
    ]
    return [Said("compare", text, a, other=b) for text in found]


# ----------------------------------------------------------------- the grid of report fixtures
GRID_SIZES = (3, 30, 300)
VERDICT_STAGES = ["frames", "statistics", "models"]
GRID = (
    *(f"qm9-{n}" for n in GRID_SIZES),
    "haar-300",
    "one-pose-30",
    "axes-aligned",
    "full-qm9",
    "qm9-110k",
    "across-the-bar",
    "small-effect",
    "qm9-300 control",
)
PAIRS = (("qm9-300", "qm9-300 control"), ("qm9-30", "qm9-300"), ("full-qm9", "qm9-300"), ("full-qm9", "qm9-110k"))


def _stored(data_dir: Path, dataset_id: str, molecules, stages: list[str] | None = None) -> dict:
    """The report of ``molecules`` stored and computed through the pipeline (every stage, or ``stages``)."""
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.services.report import build_report
    from orientscope.store.shards import save_sharded

    save_sharded(data_dir, dataset_id, molecules, name=dataset_id, source="sentence grid")
    precompute(data_dir, dataset_id, make_params(seed=0), stages=stages)
    return build_report(data_dir, dataset_id)


def _one_pose(molecules, spread_rad: float, seed: int):
    """Every molecule turned to its canonical frame, then by a small seeded rotation: a strongly aligned set."""
    from orientscope.science.counter_rng import normals
    from orientscope.science.frames import compute_frames
    from orientscope.science.rotations import quaternion_to_matrix, rotate_molecules

    frames = compute_frames(molecules.positions_angstrom, molecules.offsets, molecules.atomic_numbers)
    n = molecules.n_molecules
    q = np.column_stack([spread_rad * normals(seed, "sentence-grid", np.arange(n), 3), np.ones(n)])
    jitter = quaternion_to_matrix(q / np.linalg.norm(q, axis=1, keepdims=True))
    turned = rotate_molecules(molecules.positions_angstrom, molecules.offsets, jitter @ frames.rotations)
    return molecules.with_positions(turned)


def _axes_aligned(molecules, n_full: int, n_linear: int):
    """``n_full`` QM9 molecules Haar-rotated and ``n_linear`` CO2 along z within a few degrees: only Bingham's
    axial test can reject, so the verdict cites it alone."""
    from orientscope.core.dataset import from_molecules
    from orientscope.science.counter_rng import normals

    turned = _haar(molecules, 11)
    mols = [turned.atoms_of(i) for i in range(n_full)]
    tilt = 0.05 * normals(3, "sentence-grid-axes", np.arange(n_linear), 2)
    for dx, dy in tilt:
        axis = np.array([dx, dy, 1.0]) / np.hypot(np.hypot(dx, dy), 1.0)
        mols.append(([6, 8, 8], np.outer([0.0, 1.16, -1.16], axis)))
    return from_molecules(mols)


def _haar(molecules, seed: int):
    from orientscope.science.rotations import derived_seed, random_rotations, rotate_molecules

    rotations = random_rotations(molecules.n_molecules, derived_seed(seed, "sentence-grid-haar"))
    return molecules.with_positions(rotate_molecules(molecules.positions_angstrom, molecules.offsets, rotations))


def _constructed(n: int, kl: dict, classifiers: list[dict], ks: dict, kl_at_n: dict | None, control: dict) -> dict:
    """A report of the shape the pipeline writes, its verdicts by the service's rule."""
    from orientscope.services.report import verdict

    report = {"dataset": f"constructed-{n}", "name": f"constructed {n}", "n_molecules": n, "kl": kl,
              "classifiers": classifiers, "ks": ks, "control": control, "skipped_stages": {}}  # fmt: skip
    if kl_at_n:
        report["kl_at_n"] = kl_at_n
    report["verdict"] = verdict(report, n)
    report["control"]["verdict"] = verdict(report["control"], n)
    return report


def _clf(features: str, accuracy: float, ci: list[float], p: float, rows: int) -> dict:
    return {"features": features, "accuracy": accuracy, "ci95": {"accuracy": ci}, "pvalue": p, "n_pvalue": rows}


def _uniform_control(n: int, kl_value: float) -> dict:
    """A Haar-rotated control's figures at ``n``: a KL estimate inside the null's range, chance classifiers."""
    from orientscope.science.verdict import kl_interval

    kl = {"value": kl_value, "ci95": kl_interval(kl_value, n), "n": n, "n_used": n, "k": 5}
    return {
        "kl": kl,
        "ks": {"statistic": 0.004, "pvalue": 0.41},
        "classifiers": [_clf(f, 0.5 + d, [0.49 + d, 0.51 + d], p, 2 * n // 5) for f, d, p in
                        (("frame", -0.002, 0.71), ("frame+composition", 0.001, 0.44), ("atom-order", 0.0, 0.52))],
    }  # fmt: skip


def constructed_reports() -> dict[str, dict]:
    """Full-QM9-like reports: the figures of all 130,831 molecules (strong), a 110,000-molecule set (KL at n
    for both sides of a compare), issue 40's 300-subset figures (a size across its bar) and a set far
    larger than the null's spread with a small effect."""
    from orientscope.science.verdict import kl_interval

    def kl(value: float, n: int) -> dict:
        return {"value": value, "ci95": kl_interval(value, n), "n": n, "n_used": n, "k": 5}

    full = _constructed(
        130_831,
        kl(0.907, 130_831),
        [_clf("frame", 0.631, [0.628, 0.634], 0.0, 52_332), _clf("frame+composition", 0.642, [0.639, 0.645], 0.0, 52_332),
         _clf("atom-order", 0.893, [0.891, 0.895], 0.0, 52_332)],
        {"statistic": 0.31, "pvalue": 0.0},
        {"value": 0.89, "ci95": [0.884, 0.896], "n": 130_831, "subsample_size": 100_000},
        _uniform_control(130_831, -0.0009),
    )  # fmt: skip
    big = _constructed(
        110_000,
        kl(0.62, 110_000),
        [_clf("frame", 0.58, [0.577, 0.583], 1e-200, 44_000)],
        {"statistic": 0.2, "pvalue": 1e-90},
        {"value": 0.6, "ci95": [0.59, 0.61], "n": 110_000, "subsample_size": 100_000},
        _uniform_control(110_000, 0.0004),
    )
    across = _constructed(
        300,
        kl(0.02, 300),
        [_clf("frame", 0.61, [0.575, 0.645], 0.004, 200), _clf("atom-order", 0.66, [0.62, 0.71], 1e-9, 200)],
        {"statistic": 0.05, "pvalue": 0.3},
        None,
        _uniform_control(300, -0.012),
    )
    small = _constructed(
        20_000,
        kl(0.03, 20_000),
        [_clf("frame", 0.531, [0.524, 0.538], 1e-12, 8_000)],
        {"statistic": 0.011, "pvalue": 0.02},
        None,
        _uniform_control(20_000, 0.0021),
    )
    return {"full-qm9": full, "qm9-110k": big, "across-the-bar": across, "small-effect": small}


def build_grid(data_dir: Path) -> dict[str, dict]:
    """Every report fixture of the grid by name (:data:`GRID`; pipeline ones are computed into ``data_dir``)."""
    from orientscope.loaders.qm9 import load_qm9
    from orientscope.services.report_format import control_report

    grid = {}
    qm9 = load_qm9(limit=max(GRID_SIZES))
    for n in GRID_SIZES:
        grid[f"qm9-{n}"] = _stored(data_dir, f"qm9-{n}", load_qm9(limit=n))
    # Constructed poses: the stages the verdict reads (chemistry says nothing about poses). Haar classifiers
    # are every pipeline set's control already: the Haar set runs KL and KS only.
    grid["haar-300"] = _stored(data_dir, "haar-300", _haar(qm9, 7), ["frames", "statistics"])
    grid["one-pose-30"] = _stored(data_dir, "one-pose-30", _one_pose(load_qm9(limit=30), 0.3, 5), VERDICT_STAGES)
    grid["axes-aligned"] = _stored(data_dir, "axes-aligned", _axes_aligned(qm9, 40, 30), ["frames", "statistics"])
    grid.update(constructed_reports())
    grid["qm9-300 control"] = control_report(grid["qm9-300"])  # as the compare view shows a control
    return grid
