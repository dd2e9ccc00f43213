"""The one number formatter: known answers, no negative zero, bounds instead of absurd sizes."""

import math

import pytest

from orientscope.core.numbers import (
    format_count,
    format_interval,
    format_number,
    format_p,
    format_p_clause,
    format_percent,
    format_ratio,
)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.219, "+21.9 %"),
        (-0.0001, "0.0 %"),
        (0.0, "0.0 %"),
        (-0.052, "-5.2 %"),
        (1e6, "> +1,000 %"),
        (-20.0, "< -1,000 %"),
        (10.0, "+1000.0 %"),
        (None, "–"),
        (math.nan, "–"),
        (True, "–"),
    ],
)
def test_percent(value, text):
    assert format_percent(value) == text


def test_percent_unsigned_and_digits():
    assert format_percent(0.5, digits=0, signed=False) == "50 %"
    assert format_percent(1e6, signed=False) == "> 1,000 %"


@pytest.mark.parametrize(
    ("p", "text", "clause"),
    [(0.0012, "0.0012", "= 0.0012"), (0.0, "< 1e-300", "< 1e-300"), (1e-320, "< 1e-300", "< 1e-300"), (None, "–", "–")],
)
def test_p(p, text, clause):
    assert format_p(p) == text
    assert format_p_clause(p) == clause


def test_number_never_negative_zero():
    assert format_number(-0.0001, ".2f") == "0.00"
    assert format_number(-0.004) == "-0.004"
    assert format_number(-0.0004) == "0.000"
    assert format_number(float("inf")) == "–"


def test_ratio_count_interval():
    assert format_ratio(1.034) == "1.03×"
    assert format_ratio(1e6) == "> 10×"
    assert format_count(130831) == "130,831"
    assert format_interval(0.575, 0.645, "percent") == "[+57.5 %, +64.5 %]"
    assert format_interval(-0.0001, 0.2) == "[0.000, 0.200]"
    with pytest.raises(ValueError, match="percent"):
        format_interval(0, 1, "angle")


def test_decimals_apart_shows_which_side_of_a_bar_a_bound_lies():
    from orientscope.core.numbers import decimals_apart

    assert decimals_apart([0.907, 0.896, 0.918]) == 2  # 0.91 [0.90, 0.92]
    assert decimals_apart([59.6, 60.0, 65.0], start=0) == 1  # 59.6 % against a 60.0 % bar, not 60 % against 60 %
    assert decimals_apart([-0.0032, 0.0036, 0.0]) == 3  # never "-0.00" and "0.00" for a range around 0
    assert decimals_apart([0.5, 0.5, None, math.nan]) == 2 and decimals_apart([1.0, 1.0 + 1e-12], most=4) == 4
    assert decimals_apart([1.3812, 1.38], start=3, style="g") == 4  # 1.381 and 1.38 (significant digits)
    assert decimals_apart([1.3e-5, 1.2e-5], start=3, style="g") == 3


def test_format_estimate_writes_the_interval_like_its_estimate():
    from orientscope.core.numbers import format_estimate

    assert format_estimate(0.855, [0.828, 0.8817], "percent", 0) == "86 % [83 %, 88 %]"
    assert format_estimate(-0.0004, [-0.06, 0.07]) == "0.00 [-0.06, 0.07]"
    assert format_estimate(0.51, None) == "0.51" and format_estimate(0.51, [None, 0.6]) == "0.51"
    with pytest.raises(ValueError, match="expected number or percent"):
        format_estimate(0.5, kind="ratio")


def test_numpy_scalars_are_numbers():
    import numpy as np

    assert format_count(np.int64(130831)) == "130,831"
    assert format_percent(np.float32(0.5), digits=0) == "+50 %"
    assert format_number(np.bool_(True)) == "–"
