"""How every number is written for a person: one home for percentages, p-values, ratios and intervals.

Every surface (CLI, REST texts, dashboard, notebook, HTML report) and every
sentence the science builds takes its numbers from here, so the same figure
reads the same everywhere:

* missing or non-finite values read ``–``;
* nothing reads ``-0.0``: a value that rounds to zero is written unsigned;
* a p-value below the smallest normal float reads ``< 1e-300``, never ``0``;
* a percentage beyond :data:`PERCENT_CAP` reads ``> +1000 %`` (a ratio over a
  near-zero baseline is a fact about the baseline, not a size to print);
* an interval is written with the same rule as its estimate.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

MISSING = "–"
# p-values under this are written as a bound: below ~1e-300 a float p is 0 or denormal.
P_FLOOR = 1e-300
# Percentages beyond ±PERCENT_CAP are written as a bound (``> +1000 %``).
PERCENT_CAP = 1000.0


def is_number(x) -> bool:
    """A finite real number, NumPy scalars included (bools excluded)."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool | np.bool_) and math.isfinite(x)


def _unsigned_zero(text: str) -> str:
    """``-0.00`` -> ``0.00`` (any text whose value is zero loses its sign)."""
    if text.startswith(("-", "+")):
        try:
            if float(text) == 0:
                return text[1:]
        except ValueError:
            pass
    return text


def format_number(x, fmt: str = ".3f") -> str:
    """``x`` in the format spec ``fmt``; ``–`` when missing; never a negative zero."""
    if not is_number(x):
        return MISSING
    return _unsigned_zero(format(x, fmt))


def format_count(n) -> str:
    """A whole number with thousands separators: ``130,831``."""
    return f"{int(n):,}" if is_number(n) else MISSING


def format_percent(fraction, digits: int = 1, signed: bool = True, cap: float = PERCENT_CAP) -> str:
    """A fraction as a percentage: ``+21.9 %``; zero after rounding is ``0.0 %``; beyond ``cap`` a bound."""
    if not is_number(fraction):
        return MISSING
    value = 100.0 * fraction
    if abs(value) > cap:
        return f"> {'+' if signed else ''}{cap:,.0f} %" if value > 0 else f"< -{cap:,.0f} %"
    value = round(value, digits)
    if value == 0:
        return f"{0:.{digits}f} %"
    return f"{value:{'+' if signed else ''}.{digits}f} %"


def format_p(p) -> str:
    """A p-value: 2 significant digits, or ``< 1e-300`` when it underflowed."""
    if not is_number(p):
        return MISSING
    return f"< {P_FLOOR:.0e}" if p < P_FLOOR else f"{p:.2g}"


def format_p_clause(p) -> str:
    """A p-value after a name: ``= 0.0012`` or ``< 1e-300``."""
    text = format_p(p)
    return text if text.startswith("<") or text == MISSING else f"= {text}"


def format_ratio(x, digits: int = 2, cap: float = PERCENT_CAP / 100) -> str:
    """A ratio such as ``1.03×``; beyond ``cap`` (default 10×) a bound."""
    if not is_number(x):
        return MISSING
    if abs(x) > cap:
        return f"> {cap:g}×" if x > 0 else f"< -{cap:g}×"
    return f"{format_number(x, f'.{digits}f')}×"


def format_interval(low, high, kind: str = "number", **kwargs) -> str:
    """``[low, high]`` with each bound written like its estimate (``kind``: number, percent or p)."""
    writer = {"number": format_number, "percent": format_percent, "p": format_p}.get(kind)
    if writer is None:
        raise ValueError(f"unknown interval kind {kind!r}; expected one of number, percent, p")
    return f"[{writer(low, **kwargs)}, {writer(high, **kwargs)}]"


def decimals_apart(values, start: int = 2, most: int = 6, style: str = "f") -> int:
    """The fewest decimals, from ``start`` up to ``most``, at which every two different ``values`` read apart.

    A bound written beside the bar it is judged against must show on which side of the bar it lies:
    0.596 and a bar of 0.6 both read ``0.60`` at two decimals, ``0.596`` and ``0.600`` at three. Missing
    values are ignored. ``style`` ``g`` counts significant digits instead (``.3g``: 1.38, 1.3e-05).
    """
    if style not in ("f", "g"):
        raise ValueError(f"unknown style {style!r}; expected f (decimals) or g (significant digits)")
    finite = {float(v) for v in values if is_number(v)}
    for digits in range(start, most + 1):
        if len({format_number(v, f".{digits}{style}") for v in finite}) == len(finite):
            return digits
    return most


def format_estimate(value, interval=None, kind: str = "number", digits: int = 2) -> str:
    """An estimate and its 95 % interval, each written alike: ``0.51 [0.37, 0.68]``, ``86 % [83 %, 88 %]``.

    ``kind``: ``number`` (``digits`` decimals) or ``percent`` (of a fraction, unsigned, ``digits``
    decimals). Without an interval, the estimate alone.
    """
    if kind == "number":
        text, extra = format_number(value, f".{digits}f"), {"fmt": f".{digits}f"}
    elif kind == "percent":
        text, extra = format_percent(value, digits, signed=False), {"digits": digits, "signed": False}
    else:
        raise ValueError(f"unknown estimate kind {kind!r}; expected number or percent")
    low, high = interval if interval is not None and len(interval) == 2 else (None, None)
    if not (is_number(low) and is_number(high)):
        return text
    return f"{text} {format_interval(low, high, kind, **extra)}"
