"""The model audit's tiers and their words: one rule, which every surface shows (CLI, REST, dashboard, Python).

Per property (and split), from the figures of :mod:`orientscope.science.model_audit`, the Holm-adjusted
p-value, and the user's :class:`Decision` (``margin``, default 1 %, and an optional ``max_shift`` in the
property's unit):

``frame_dependent``
    the property changes with the lab frame by definition (declared with the dataset);
``invariant``
    no molecule's prediction moves beyond float tolerance when it is rotated
    (``shift_max <= shift_tolerance``);
``leans``
    Holm p below α = 10⁻³ and the reliance CI's lower bound above +margin;
``better_rotated``
    the reliance CI lies wholly below −margin (the model does worse on the stored poses);
``robust``
    the reliance CI lies inside ±margin and, when ``max_shift`` is given, the rotation shift's 95th
    percentile is at most ``max_shift``. Without ``max_shift`` the text gives the shift and leaves its
    judgement to the reader: there is no default that knows the science;
``inconclusive``
    otherwise: the CI straddles a margin, it lies above the margin without Holm p below α, or
    the shift exceeds ``max_shift``.

Each text names the figure that decided its tier (``decided_by``), writes every number through
:mod:`orientscope.core.numbers`, and never calls a model fixed: a robust model's text gives its shift.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from orientscope.core.numbers import (
    decimals_apart,
    format_count,
    format_interval,
    format_number,
    format_p_clause,
    format_percent,
)

AUDIT_RULE_VERSION = 3
ALPHA = 1e-3
DEFAULT_MARGIN = 0.01
TIERS = ("invariant", "robust", "leans", "better_rotated", "inconclusive", "frame_dependent")
# The tiers a gate lets through, by --fail-on (``orientscope audit-model``, ``assert_pose_robust``).
FAIL_ON = {
    "leans": ("invariant", "robust", "better_rotated", "inconclusive", "frame_dependent"),
    "not-robust": ("invariant", "robust"),
    "not-invariant": ("invariant",),
}
SIGNIFICANT = ".3g"

TRAIN_READING = (
    "On training molecules the stored poses are inputs the model was fitted to and the rotated copies are "
    "inputs it never saw, so this increase measures how it does on unseen inputs, not a shortcut through the "
    "pose; the held-out molecules (the test split, or ids=) read its reliance."
)
MEMORISER_READING = (
    "The stored-pose MSE is below the floor: the model reproduces these molecules' stored values, so the "
    "rotated copies are unseen inputs to it, not evidence of a shortcut; audit held-out molecules (ids= or a "
    "split column) to read its reliance."
)


@dataclass(frozen=True)
class Decision:
    """The user's bars: ``margin`` (a fraction, e.g. 0.01 for ±1 %) and ``max_shift`` (property unit, or None)."""

    margin: float = DEFAULT_MARGIN
    max_shift: float | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.margin, int | float) and math.isfinite(self.margin) and 0 <= self.margin < 10):
            raise ValueError(f"margin must be a fraction between 0 and 10 (0.01 is ±1 %), got {self.margin!r}")
        if self.max_shift is not None and not (
            isinstance(self.max_shift, int | float) and math.isfinite(self.max_shift) and self.max_shift >= 0
        ):
            raise ValueError(f"max_shift must be a number >= 0 in the property's unit, or None; got {self.max_shift!r}")
        object.__setattr__(self, "margin", float(self.margin))
        if self.max_shift is not None:
            object.__setattr__(self, "max_shift", float(self.max_shift))

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict | None) -> Decision:
        values = values or {}
        return cls(values.get("margin", DEFAULT_MARGIN), values.get("max_shift"))


def _num(x) -> str:
    return format_number(x, SIGNIFICANT)


def _in_unit(x, unit: str, fmt: str = SIGNIFICANT) -> str:
    text = format_number(x, fmt)
    return f"{text} {unit}" if unit else text


def _margin(margin: float, sign: str = "±", digits: int = 1) -> str:
    return f"{sign}{format_percent(margin, digits, signed=False)}"


def percent_digits(ci, margin: float) -> int:
    """Decimals at which the reliance CI's bounds and ±margin read apart: a text that says a bound lies inside
    or beyond the margin must not print the bound as the margin (+1.0 % for +0.97 % beside a ±1.0 % margin)."""
    return decimals_apart([100 * x for x in (*(ci or ()), margin, -margin)], start=1, most=3)


def _reliance(figures: dict, digits: int = 1) -> str:
    """``reliance +47.0 % [+39.0 %, +55.0 %]`` (the CI when there is one), saying when it reads against the floor."""
    text = f"reliance {format_percent(figures.get('reliance'), digits)}"
    ci = (figures.get("ci95") or {}).get("reliance")
    if ci:
        text += f" {format_interval(ci[0], ci[1], 'percent', digits=digits)}"
    if figures.get("reliance_floored"):
        floor = figures.get("mse_floor")
        text += (
            f" against the stored-pose MSE's floor of {_num(floor)}"
            if floor
            else " against the floor of the stored-pose MSE"
        )
    return text


def _change(figures: dict, digits: int = 1) -> str:
    increase = figures["mse_rotated"] - figures["mse_stored"]
    return (
        f"the MSE goes from {_num(figures['mse_stored'])} on stored poses to {_num(figures['mse_rotated'])} on "
        f"rotated copies ({format_number(increase, '+' + SIGNIFICANT)}; {_reliance(figures, digits)})"
    )


def _shift(figures: dict, p95_fmt: str = SIGNIFICANT) -> str:
    """``rotation shift median X [lo, hi], 95th percentile Y [lo, hi] (unit)``, or "" without the figures."""
    if figures.get("shift_median") is None:
        return ""
    unit = figures.get("unit") or ""
    parts = []
    for name, label in (("median", "median"), ("p95", "95th percentile")):
        ci = figures.get(f"shift_{name}_ci95") or [None, None]
        parts.append(
            f"{label} {_in_unit(figures[f'shift_{name}'], unit, p95_fmt if name == 'p95' else SIGNIFICANT)} "
            f"{_order_interval(ci, figures.get('n'))}"
        )
    return "rotation shift " + ", ".join(parts)


def _order_interval(ci, n) -> str:
    """An order-statistics interval; a bound the sample cannot give (too few molecules beyond the quantile: the
    95th percentile's upper bound needs 72) is said, not written as a dash that reads like a missing figure."""
    low, high = (None if x is None else format_number(x, SIGNIFICANT) for x in ci)
    if low is not None and high is not None:
        return f"[{low}, {high}]"
    size = f" from {format_count(n)} molecules" if n else ""
    return f"[{low or 'no lower bound'}, {(high or 'no upper bound') + size}]"


def shortcut_reading(regression: dict | None) -> str:
    """What the property's orientation-only regression says about a shortcut."""
    if not regression or regression.get("improvement") is None:
        return (
            "This dataset has no orientation-only regression for the property, so a learned shortcut "
            "cannot be told apart from rotated inputs that are out of distribution for the model."
        )
    gain = float(regression["improvement"])
    floor = max(
        0.01, float(regression.get("control_improvement") or 0.0) + 2 * float(regression.get("improvement_std") or 0.0)
    )
    if gain > floor:
        return (
            f"The pose alone predicts {format_percent(gain, signed=False)} of this property in this dataset, "
            "so a learned shortcut through the pose is plausible."
        )
    return (
        f"The pose alone predicts almost none of this property here ({format_percent(gain)}), so the rotated "
        "inputs are more likely out of distribution for the model (e.g. it only saw one pose convention) than a "
        "learned shortcut."
    )


def _reading(figures: dict, split: str | None, regression: dict | None) -> str:
    """Why the error grows: unseen inputs on training molecules or for a memoriser, else the regression's word."""
    if split == "train":
        return TRAIN_READING
    if figures.get("reliance_floored") or figures.get("reliance") is None:
        return MEMORISER_READING
    return shortcut_reading(regression)


def _training_note(figures: dict, split: str | None) -> str:
    n_train = figures.get("n_train") or 0
    if split is not None or not n_train:
        return ""
    return (
        f" Training molecules are included: {format_count(n_train)} of the {format_count(figures['n'])} "
        "molecules are marked train; the test split reads the reliance on molecules the model did not see."
    )


def _straddle(ci: list[float], margin: float, significant: bool, p_text: str, digits: int = 1) -> str:
    """Why a CI that reaches past a margin leaves the tier open, saying only what the interval says."""
    low, high = ci
    plus, minus = _margin(margin, "+", digits), _margin(margin, "-", digits)
    above, below = high > margin, low < -margin
    width = "More molecules or copies narrow the interval."
    if above and below:
        return (
            f"the reliance CI reaches past both the {minus} and the {plus} margins, "
            f"so it cannot tell a robust model from one that leans or does better on rotated copies. {width}"
        )
    if below and high < 0:
        return (
            "the error is lower on rotated copies than on the stored poses (the whole reliance CI is negative), "
            f"but not wholly below the {minus} margin: the model may do as well on both. {width}"
        )
    if below:
        return (
            f"the reliance CI reaches below the {minus} margin, so it cannot tell a model robust to "
            f"the margin from one that does better on rotated copies. {width}"
        )
    if significant or low > 0:
        grows = f"Holm-adjusted p {p_text}" if significant else "the whole reliance CI is positive"
        return (
            f"the error grows on rotated copies ({grows}), but the reliance CI reaches below the "
            f"{plus} margin: the increase may be smaller than the margin. {width}"
        )
    return (
        f"the reliance CI reaches above the {plus} margin, so it cannot tell a model robust to the "
        f"margin from one that leans. {width}"
    )


def verdict(
    figures: dict,
    pvalue_holm: float | None,
    frame_dependent: bool,
    regression: dict | None,
    decision: Decision | None = None,
    split: str | None = None,
) -> dict:
    """``{code, text, decided_by, alpha, margin, max_shift, rule_version}`` of one property (see :data:`TIERS`).

    A text reads: the tier and the figure that decided it; the MSE change and the reliance with its CI;
    the rotation shift; then, for ``leans``, what the increase means (a shortcut, or unseen inputs).
    """
    decision = decision or Decision()
    m, limit = decision.margin, decision.max_shift
    unit = figures.get("unit") or ""
    out = {"alpha": ALPHA, **decision.as_dict(), "rule_version": AUDIT_RULE_VERSION}
    ci = (figures.get("ci95") or {}).get("reliance")
    digits = percent_digits(ci, m)
    p95 = figures.get("shift_p95")
    # The shift's 95th percentile, beside a max_shift it is judged against, in digits that show which is larger.
    p95_fmt = SIGNIFICANT if limit is None or p95 is None else f".{decimals_apart([p95, limit], 3, style='g')}g"
    shift = _shift(figures, p95_fmt)
    change = _change(figures, digits)
    numbers = change[0].upper() + change[1:] + (f"; {shift}." if shift else ".")
    p_text = format_p_clause(pvalue_holm)
    alpha = f"α = {format_number(ALPHA, 'g')}"

    def tier(code: str, decided_by: str, why: str, after: str = "") -> dict:
        text = f"{why} {numbers}" + (f" {after}" if after else "") + _training_note(figures, split)
        return {**out, "code": code, "decided_by": decided_by, "text": text}

    if frame_dependent:
        return tier(
            "frame_dependent",
            "frame_dependent",
            "Frame-dependent: the property depends on the lab frame by definition, so the error depends on the "
            "pose for any model.",
            "Audit it with the rotated copies' own true values.",
        )
    shift_max = figures.get("shift_max")
    if shift_max is not None and shift_max <= figures.get("shift_tolerance", 0.0):
        return tier(
            "invariant",
            "shift_max",
            f"Invariant: no prediction moves by more than {_num(figures['shift_tolerance'])} when its molecule is "
            f"rotated (largest rotation shift {_in_unit(shift_max, unit)}), so the error cannot depend on the pose.",
        )
    significant = pvalue_holm is not None and pvalue_holm < ALPHA
    memoriser = figures.get("reliance") is None and figures["mse_rotated"] > figures["mse_stored"]
    if significant and ((ci and ci[0] > m) or (memoriser and not ci)):
        return tier(
            "leans",
            "reliance_ci95",
            f"Leans on the pose: the reliance CI lies above the {_margin(m, '+', digits)} margin and the Holm-adjusted "
            f"p {p_text} is below {alpha}.",
            _reading(figures, split, regression),
        )
    if not ci:
        return tier(
            "inconclusive",
            "reliance_ci95",
            "Inconclusive: the reliance has no interval (too few molecules), so no tier can be read from it.",
        )
    low, high = ci
    if high < -m:
        return tier(
            "better_rotated",
            "reliance_ci95",
            f"Better on rotated copies: the reliance CI lies wholly below the {_margin(m, '-', digits)} margin, so this "
            "model does worse on the stored poses than on random ones (e.g. it was trained on rotated copies "
            "only).",
        )
    if low >= -m and high <= m:
        if limit is None:
            return tier(
                "robust",
                "reliance_ci95",
                f"Robust to the {_margin(m, '±', digits)} margin: the reliance CI lies inside it, so the error does not grow on "
                "rotated copies by more than the margin.",
                "Its predictions still move with the pose (the rotation shift above); give max_shift to judge "
                "that shift."
                if shift
                else "Give max_shift to judge how far its predictions move with the pose.",
            )
        if p95 is not None and p95 <= limit:
            return tier(
                "robust",
                "shift_p95",
                f"Robust: the reliance CI lies inside the {_margin(m, '±', digits)} margin and the rotation shift's 95th "
                f"percentile {_in_unit(p95, unit, p95_fmt)} is within max_shift {_in_unit(limit, unit, p95_fmt)}.",
            )
        return tier(
            "inconclusive",
            "shift_p95",
            f"Not robust by max_shift: the reliance CI lies inside the {_margin(m, '±', digits)} margin, but the rotation "
            f"shift's 95th percentile {_in_unit(p95, unit, p95_fmt)} exceeds max_shift {_in_unit(limit, unit, p95_fmt)}.",
        )
    if low > m:  # above the margin without a Holm p below alpha
        why = (
            f"the reliance CI lies above the {_margin(m, '+', digits)} margin, but the Holm-adjusted p {p_text} is not "
            f"below {alpha}."
        )
    else:
        why = _straddle(ci, m, significant, p_text, digits)
    return tier("inconclusive", "reliance_ci95", f"Inconclusive: {why}")


def reread_verdict(entry: dict, frame_dependent: bool, decision: Decision | None = None) -> dict:
    """The verdict of a stored property entry by the current rule (entries keep their figures, not the rule).

    The entry needs the rotation shift's figures (an audit stored before them gets them from its
    ``molecules.parquet``, see :mod:`orientscope.services.model_audits`). A verdict made by the current
    rule is returned as stored.
    """
    stored = entry.get("verdict") or {}
    if stored.get("rule_version") == AUDIT_RULE_VERSION:
        return stored
    improvement = entry.get("regression_improvement")
    regression = None if improvement is None else {"improvement": improvement}
    new = verdict(entry, entry.get("pvalue_holm"), frame_dependent, regression, decision, entry.get("split"))
    return {**new, "reread": True, "stored_rule_version": stored.get("rule_version")}


def passes(code: str, fail_on: str) -> bool:
    """Whether a tier passes the gate ``fail_on`` (``leans``, ``not-robust`` or ``not-invariant``)."""
    if fail_on not in FAIL_ON:
        raise ValueError(f"unknown fail-on {fail_on!r}; expected one of {list(FAIL_ON)}")
    return code in FAIL_ON[fail_on]
