"""Bingham's test of uniformity for axial directions on the sphere (v and -v are one direction).

A molecule whose symmetry defines only one axis (linear molecules, symmetric
tops: see :mod:`orientscope.science.frames`) has no SO(3) pose, only that axis.
Its orientation tensor T = mean(v vᵀ) (3 x 3, trace 1) is (1/3) I in
expectation under uniform directions, and Bingham (1974) showed that

    S = (15 n / 2) · Σᵢ (λᵢ − 1/3)²

over T's eigenvalues λᵢ tends to χ² with 5 degrees of freedom (T's five free
components). ``tests/science/test_axial.py`` checks the law by simulation (mean
5.0 and a 5 % tail at n = 30 to 1,000). The sums of v vᵀ, the counts and the
fourth-order products (for the effect size's spread) are the per-shard partial
result: they merge by addition (the pipeline adds each molecule's
:func:`axial_terms` in fixed global blocks, ``science.ordered_sums``, so the cut
never changes a bit of S).

The effect size (:func:`axial_size`) is the KL from uniform of the Watson law
fitted to T, against the verdict's KL bar; ``tests/bench/bench_axial_size.py``
measures its interval's coverage on Watson laws, mixtures and aligned axes.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from orientscope.core.numbers import format_count, format_estimate, format_number, format_p
from orientscope.core.resources import scipy_optimize as optimize
from orientscope.core.resources import scipy_special as special
from orientscope.core.resources import scipy_stats as stats
from orientscope.science.statistic import ReportField, Statistic

DEGREES_OF_FREEDOM = 5
# Below this many axes the test is left out of the verdict's family (the verdict's own minimum). The χ²₅ law
# is conservative at small n, never liberal: its simulated size at the 5 % level is 3.8 % at n = 10, 4.7 % at
# 20, 4.9 % at 30 and 5.1 % at 100 (20,000 draws each; at 1e-3: 0.05 %, 0.08 %, 0.08 %, 0.11 %).
MIN_AXES = 10
METHOD = "Bingham's test: S = (15n/2) Σ (λ - 1/3)² of the orientation tensor T = mean(v vᵀ), against χ²₅"


# The 15 distinct fourth-order monomials v_i v_j v_k v_l (i <= j <= k <= l): their sums give each direction's
# E[(μ·v)⁴], so the effect size's interval takes the set's own spread of (μ·v)² (a mixture of aligned and
# uniform axes spreads more than the Watson law fitted to it).
_QUARTIC = tuple((i, j, k, m) for i in range(3) for j in range(i, 3) for k in range(j, 3) for m in range(k, 3))
N_TERMS = 10 + len(_QUARTIC)


def _quartic_columns(v: np.ndarray) -> np.ndarray:
    return np.stack([v[:, i] * v[:, j] * v[:, k] * v[:, m] for i, j, k, m in _QUARTIC], axis=1)


def axial_partial(vectors: np.ndarray) -> dict:
    """One part's sums of unit vectors (m, 3): ``{"outer": (3, 3) Σ v vᵀ, "n": count, "quartic": (15,)}``."""
    v = np.asarray(vectors, dtype=np.float64).reshape(-1, 3)
    return {"outer": v.T @ v, "n": len(v), "quartic": _quartic_columns(v).sum(axis=0)}


def axial_terms(vectors: np.ndarray) -> np.ndarray:
    """(m, 25) per-axis terms whose column sums are a part's sums: v vᵀ flattened (9), 1 (the count), then the
    15 distinct products v_i v_j v_k v_l."""
    v = np.asarray(vectors, dtype=np.float64).reshape(-1, 3)
    return np.column_stack([(v[:, :, None] * v[:, None, :]).reshape(-1, 9), np.ones(len(v)), _quartic_columns(v)])


def sums_from_terms(total: np.ndarray) -> dict:
    """``{"outer", "n", "quartic"}`` from the column sums (25,) of :func:`axial_terms`; sums of 10 (written
    before the quartic terms) have no ``quartic``."""
    total = np.asarray(total, dtype=np.float64).ravel()
    out = {"outer": total[:9].reshape(3, 3), "n": int(round(total[9]))}
    return {**out, "quartic": total[10:N_TERMS]} if len(total) >= N_TERMS else out


def merge_axial(parts: list[dict]) -> dict:
    """The sums of several parts (associative: the order never changes a count; sums agree to rounding)."""
    outer, quartic = np.zeros((3, 3)), np.zeros(len(_QUARTIC))
    n = 0
    for part in parts:
        outer = outer + np.asarray(part["outer"], dtype=np.float64)
        quartic = quartic + np.asarray(part.get("quartic", 0.0), dtype=np.float64)
        n += int(part["n"])
    return {"outer": outer, "n": n, "quartic": quartic}


def _fourth_moment(quartic: np.ndarray, n: int, direction: np.ndarray) -> float:
    """E[(μ·v)⁴] over the axes from the sums of their distinct quartic products (multinomial weights)."""
    total = 0.0
    for value, idx in zip(quartic, _QUARTIC, strict=True):
        counts = np.bincount(np.asarray(idx), minlength=3)
        weight = math.factorial(4) / np.prod([math.factorial(c) for c in counts])
        total += weight * value * np.prod(direction[list(idx)])
    return float(total / n)


def bingham_test(sums: dict, min_axes: int = MIN_AXES) -> dict:
    """Bingham's uniformity test from merged sums (:func:`axial_partial`).

    Returns ``{n, statistic, df, pvalue, eigenvalues, preferred_direction, size,
    method}``: ``eigenvalues`` of T, descending (1/3 each for uniform axes);
    ``preferred_direction`` the unit eigenvector of the largest one (the mean
    axis of a bipolar law, signed so that its largest component is positive);
    ``size`` the effect size (:func:`axial_size`: KL of the fitted Watson law, 95 % interval).
    With fewer than ``min_axes`` axes the figures are given with ``skipped``
    saying why the verdict leaves the test out; with none there are no figures.
    """
    n = int(sums["n"])
    out: dict = {"n": n, "df": DEGREES_OF_FREEDOM, "method": METHOD, "min_axes": int(min_axes)}
    if n == 0:
        return {**out, "statistic": None, "pvalue": None, "skipped": "no molecule has only an axis"}
    T = np.asarray(sums["outer"], dtype=np.float64) / n
    evals, evecs = np.linalg.eigh(T)
    evals, evecs = evals[::-1], evecs[:, ::-1]
    s = float(15.0 * n / 2.0 * np.sum((evals - 1.0 / 3.0) ** 2))
    axis = evecs[:, 0]
    axis = axis if axis[np.argmax(np.abs(axis))] > 0 else -axis
    out.update(
        statistic=s,
        pvalue=float(stats.chi2.sf(s, DEGREES_OF_FREEDOM)),
        eigenvalues=[float(x) for x in evals],
        preferred_direction=[float(x) for x in axis],
    )
    spread = None
    if sums.get("quartic") is not None:
        q = np.asarray(sums["quartic"], dtype=np.float64)
        spread = tuple(max(_fourth_moment(q, n, evecs[:, c]) - evals[c] ** 2, 0.0) for c in (0, 2))
    out["size"] = axial_size(evals, n, out["pvalue"], spread)
    if n < min_axes:
        out["skipped"] = f"needs at least {min_axes} molecules with only an axis, got {n}"
    return out


def axial_test(vectors: np.ndarray, min_axes: int = MIN_AXES) -> dict:
    """:func:`bingham_test` of one array of unit vectors (m, 3)."""
    return bingham_test(axial_partial(vectors), min_axes)


def defined_axes(rotations: np.ndarray, defined_axis: np.ndarray) -> np.ndarray:
    """(m, 3) the defined axis (row ``defined_axis - 1`` of R) of each molecule with one.

    rotations : (n, 3, 3) frames (rows = axes); defined_axis : (n,) 1..3, or 0 where the class is not "axis"
    """
    axis = np.asarray(defined_axis, dtype=np.int64)
    rows = np.flatnonzero(axis > 0)
    return np.asarray(rotations, dtype=np.float64)[rows, axis[rows] - 1]


# ----------------------------------------------------------------- the effect size: KL of the fitted Watson law
# The Watson law on axes, f(±x) = exp(κ (μ·x)²) / M(κ) against the uniform law, with M(κ) = ∫₀¹ exp(κ t²) dt
# (Kummer's ₁F₁(1/2; 3/2; κ)), is an exponential family in t = (μ·x)²: its maximum-likelihood fit to axes of
# orientation tensor T has t̄ = T's largest eigenvalue (bipolar, κ > 0) or smallest (girdle, κ < 0), and the
# fit's KL from uniform is the Legendre transform W(t̄) = sup_κ (κ t̄ − log M(κ)). Among axis laws of this
# second moment the Bingham fit is the one nearest uniform, and the Watson is one of them, so W is a lower
# bound of the axes' own KL: "strong" on W never overstates. Its unit (nats) is the SO(3) KL's: a pose law
# that only fixes an axis (free spin about it) has the same KL on SO(3) as its axis on the sphere.
# Perfectly aligned axes have infinite KL: the mean sin² of the angle to the axis is floored at this
# resolution (an rms spread of about 0.6°, below what a frame read from Ångström coordinates resolves),
# which caps the size at W(1 − 1e-4) ≈ 8.9 nats (bipolar) and W(1e-4) ≈ 4.0 (every axis in one plane).
AXIS_RESOLUTION = 1e-4
# The axes' KL from which Bingham's effect counts as strong (science.verdict): the KL bar's 0.2 nats. A pose
# law that fixes only an axis (free spin about it) has the same KL on SO(3) as its axis on the sphere, so the
# bar means what the KL bar means: that much information about the pose before seeing the molecule.
STRONG_AXIAL_KL = 0.2
# The z of the size's 95 % interval (normal, at the fitted law's own spread).
Z95 = 1.959963984540054
_KAPPA_MAX = 1e7


def _log_m(kappa: float) -> float:
    """log ∫₀¹ exp(κ t²) dt, stable at any κ (Dawson's function above 0, erf below)."""
    if abs(kappa) < 1e-8:
        return kappa / 3.0
    s = math.sqrt(abs(kappa))
    if kappa > 0:
        return kappa + math.log(special.dawsn(s)) - math.log(s)
    return math.log(math.sqrt(math.pi) / 2.0 * special.erf(s) / s)


def _mean_t(kappa: float) -> float:
    """E[t] = d log M / dκ of the Watson law (1/3 at κ = 0, → 1 as κ → ∞, → 0 as κ → −∞)."""
    if abs(kappa) < 1e-4:
        return 1.0 / 3.0 + 4.0 * kappa / 45.0
    s = math.sqrt(abs(kappa))
    if kappa > 0:
        return 1.0 / (2.0 * s * special.dawsn(s)) - 1.0 / (2.0 * kappa)
    return 1.0 / (2.0 * s * s) - math.exp(-s * s) / (math.sqrt(math.pi) * s * special.erf(s))


def _var_t(kappa: float) -> float:
    """Var[t] = dE[t]/dκ of the Watson law (4/45 at κ = 0): the spread of one axis's t."""
    h = 1e-3 * max(1.0, abs(kappa))
    return max((_mean_t(kappa + h) - _mean_t(kappa - h)) / (2.0 * h), 0.0)


def watson_kappa(t: float) -> float:
    """The concentration κ whose Watson law has E[(μ·x)²] = ``t`` (t clipped to the resolution)."""
    t = min(max(float(t), AXIS_RESOLUTION), 1.0 - AXIS_RESOLUTION)
    if abs(t - 1.0 / 3.0) < 1e-12:
        return 0.0
    low, high = (0.0, _KAPPA_MAX) if t > 1.0 / 3.0 else (-_KAPPA_MAX, 0.0)
    return float(optimize.brentq(lambda k: _mean_t(k) - t, low, high, xtol=1e-12, rtol=1e-12))


def watson_kl(t: float) -> float:
    """KL (nats) from uniform of the Watson law with E[(μ·x)²] = ``t``: 0 at 1/3, growing either way."""
    kappa = watson_kappa(t)
    t = min(max(float(t), AXIS_RESOLUTION), 1.0 - AXIS_RESOLUTION)
    return max(kappa * t - _log_m(kappa), 0.0)


@functools.cache
def _edge_kappa(bipolar: bool) -> float:
    """κ at the resolution's floor of the mean sin² (bipolar) or of the mean cos² (girdle): the ends of the fit."""
    return watson_kappa(1.0 - AXIS_RESOLUTION if bipolar else AXIS_RESOLUTION)


def _t_bound(t_hat: float, n: int, sign: float, side: float) -> float:
    """The t₀ on ``side`` (+1 bipolar, −1 girdle) whose law puts t̂ at its ``sign`` · 1.96 sd edge, or 1/3.

    Solved in κ (t₀ = E_κ[t] is monotone in κ), so each step costs two closed forms, not a root of its own.
    """
    edge = _edge_kappa(side > 0)

    def gap(kappa: float) -> float:
        return _mean_t(kappa) + sign * Z95 * math.sqrt(_var_t(kappa) / n) - t_hat

    a, b = (0.0, edge) if side > 0 else (edge, 0.0)
    ga, gb = gap(a), gap(b)
    if ga * gb > 0:  # no root inside: the bound is the end nearer t̂'s side of the fitted law
        kappa = 0.0 if abs(ga if side > 0 else gb) < abs(gb if side > 0 else ga) else edge
    else:
        kappa = float(optimize.brentq(gap, a, b, xtol=1e-12, rtol=1e-12))
    return 1.0 / 3.0 if kappa == 0.0 else _mean_t(kappa)


def axial_size(eigenvalues, n: int, pvalue: float | None = None, spread: tuple | None = None) -> dict | None:
    """The axes' effect size: KL (nats) from uniform of the Watson law fitted to T, with a 95 % interval.

    Parameters
    ----------
    eigenvalues : (3,) of the orientation tensor T (any order)
    n : axes T was averaged over
    pvalue : Bingham's p of the same axes; at 0.05 or above the interval reaches 0 (the χ²₅ test is the
        exact level-5 % test of KL = 0, the point where the Watson fit's own spread misses the bias of
        T's extreme eigenvalues)
    spread : (variance of (μ₁·v)², of (μ₃·v)²) over the axes, μ₁ and μ₃ the eigenvectors of the largest and
        smallest eigenvalue; where given, the interval is widened to t̂ ± 1.96 · √(spread / n) if that is
        wider (a set that is not a Watson law, e.g. half aligned and half uniform, spreads more than its fit)

    Returns ``{value, ci95, shape, kappa, t}``: ``shape`` ``bipolar`` (axes gather about one direction,
    t = the largest eigenvalue) or ``girdle`` (about one plane, t = the smallest), whichever fit is
    further from uniform; the interval inverts t̂ ± 1.96 sd(t₀)/√n over the fitted family (a Wilson-type
    interval: sd at each candidate t₀, not at t̂), mapped through the monotone KL. None without axes.
    """
    ev = np.sort(np.asarray(eigenvalues, dtype=np.float64).reshape(3))[::-1]
    if not n or not np.all(np.isfinite(ev)):
        return None
    bipolar, girdle = watson_kl(ev[0]), watson_kl(ev[2])
    side, t_hat, value = (1.0, float(ev[0]), bipolar) if bipolar >= girdle else (-1.0, float(ev[2]), girdle)
    # t₀ below t̂ on the bipolar side (above it on the girdle side) bounds the KL from below
    reaches_zero = pvalue is not None and pvalue >= 0.05  # then the low bound needs no root (most uniform sets)
    t_low = 1.0 / 3.0 if reaches_zero else _t_bound(t_hat, int(n), side, side)
    t_high = _t_bound(t_hat, int(n), -side, side)
    if spread is not None:  # the set's own spread, where wider than the fitted law's
        own = Z95 * math.sqrt(float(spread[0 if side > 0 else 1]) / int(n))
        t_low = min(t_low, t_hat - own) if side > 0 else max(t_low, t_hat + own)
        t_high = max(t_high, t_hat + own) if side > 0 else min(t_high, t_hat - own)
        t_low = max(t_low, 1.0 / 3.0) if side > 0 else min(t_low, 1.0 / 3.0)
    low = 0.0 if reaches_zero else watson_kl(t_low)
    high = max(watson_kl(t_high), value)
    return {
        "value": float(value),
        "ci95": [float(min(low, value)), float(high)],
        "shape": "bipolar" if side > 0 else "girdle",
        "kappa": watson_kappa(t_hat),
        "t": t_hat,
    }


def watson_axes(kappa: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, 3) axes drawn from the Watson law exp(κ (z·x)²) about z: the known truths the size is calibrated on.

    cos θ by inverse CDF on a fine grid (κ > 0 gathers about ±z, κ < 0 about the xy-plane), azimuth uniform.
    """
    u_grid = np.linspace(-1.0, 1.0, 20001)
    w = np.exp(kappa * u_grid**2 - max(kappa, 0.0))
    cdf = np.concatenate([[0.0], np.cumsum((w[1:] + w[:-1]) / 2)])
    u = np.interp(rng.random(n), cdf / cdf[-1], u_grid)
    phi, s = rng.uniform(0, 2 * np.pi, n), np.sqrt(np.clip(1 - u * u, 0, None))
    return np.column_stack([s * np.cos(phi), s * np.sin(phi), u])


def size_of(test: dict) -> dict | None:
    """The ``size`` of a :func:`bingham_test` result; for one stored before it had a size, from its eigenvalues."""
    if test.get("size"):
        return test["size"]
    if not test.get("eigenvalues") or not test.get("n"):
        return None
    return axial_size(test["eigenvalues"], int(test["n"]), test.get("pvalue"))


# ----------------------------------------------------------------- the statistic this module declares
AXIAL_KEY = "axial"


def axial_rows(report: dict) -> list[tuple[str, str, str]]:
    """Bingham's test of the axis-only molecules, dataset vs control (nothing when no molecule has only an axis)."""
    axial, control = report.get(AXIAL_KEY) or {}, (report.get("control") or {}).get(AXIAL_KEY) or {}
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

    def size(a: dict) -> str:
        sz = size_of(a) if a.get("n") else None
        if not sz:
            return "–"
        return f"{format_estimate(sz['value'], sz['ci95'], 'number', 2)} ({sz['shape']})"

    return [
        (f"Bingham axial test, {format_count(axial['n'])} axis-only molecules (χ²₅)", test(axial), test(control)),
        (
            f"axial: effect size, KL (nats) of the fitted Watson law [95 % CI] (bar {format_number(STRONG_AXIAL_KL, '.2f')})",
            size(axial),
            size(control),
        ),
        (
            "axial: preferred direction (x, y, z), T's eigenvalues (1/3 each = uniform)",
            direction(axial),
            direction(control),
        ),
    ]


STATISTIC = Statistic(
    key=AXIAL_KEY,
    title="Bingham's axial test of the axis-only molecules",
    stage="statistics",
    inputs=("the defined axis of each axis-only molecule",),
    per_shard="pipeline.shard_stages:orientation_partial",
    merge="pipeline.shard_stages:merge_orientation",
    fields=(
        ReportField(
            AXIAL_KEY,
            dict[str, Any],
            "Bingham's test of the axis-only molecules' defined axis: n, statistic, df, pvalue, eigenvalues of the "
            "orientation tensor, preferred_direction, size (the effect size: value, ci95 of the KL in nats from "
            "uniform of the Watson law fitted to the tensor, its shape bipolar or girdle, kappa, t).",
        ),
    ),
    table="statistics",
    rows=axial_rows,
    in_verdict=True,
)
