"""Bingham's test of uniformity for axial directions on the sphere (v and -v are one direction).

A molecule whose symmetry defines only one axis (linear molecules, symmetric
tops: see :mod:`orientscope.science.frames`) has no SO(3) pose, only that axis.
Its orientation tensor T = mean(v vᵀ) (3 x 3, trace 1) is (1/3) I in
expectation under uniform directions, and Bingham (1974) showed that

    S = (15 n / 2) · Σᵢ (λᵢ − 1/3)²

over T's eigenvalues λᵢ tends to χ² with 5 degrees of freedom (T's five free
components). ``tests/science/test_axial.py`` checks the law by simulation (mean
5.0 and a 5 % tail at n = 30 to 1,000). The sums of v vᵀ and the counts are the
per-shard partial result: they merge by addition (the pipeline adds each
molecule's :func:`axial_terms` in fixed global blocks, ``science.ordered_sums``,
so the cut never changes a bit of S).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from orientscope.core.numbers import format_count, format_number, format_p
from orientscope.core.resources import scipy_stats as stats
from orientscope.science.statistic import ReportField, Statistic

DEGREES_OF_FREEDOM = 5
# Below this many axes the test is left out of the verdict's family (the verdict's own minimum). The χ²₅ law
# is conservative at small n, never liberal: its simulated size at the 5 % level is 3.8 % at n = 10, 4.7 % at
# 20, 4.9 % at 30 and 5.1 % at 100 (20,000 draws each; at 1e-3: 0.05 %, 0.08 %, 0.08 %, 0.11 %).
MIN_AXES = 10
METHOD = "Bingham's test: S = (15n/2) Σ (λ - 1/3)² of the orientation tensor T = mean(v vᵀ), against χ²₅"


def axial_partial(vectors: np.ndarray) -> dict:
    """One part's sums: ``{"outer": (3, 3) Σ v vᵀ, "n": count}`` of unit vectors (m, 3)."""
    v = np.asarray(vectors, dtype=np.float64).reshape(-1, 3)
    return {"outer": v.T @ v, "n": len(v)}


def axial_terms(vectors: np.ndarray) -> np.ndarray:
    """(m, 10) per-axis terms whose column sums are a part's sums: v vᵀ flattened (9), then 1 (the count)."""
    v = np.asarray(vectors, dtype=np.float64).reshape(-1, 3)
    return np.column_stack([(v[:, :, None] * v[:, None, :]).reshape(-1, 9), np.ones(len(v))])


def sums_from_terms(total: np.ndarray) -> dict:
    """``{"outer", "n"}`` from the column sums (10,) of :func:`axial_terms`."""
    total = np.asarray(total, dtype=np.float64).reshape(10)
    return {"outer": total[:9].reshape(3, 3), "n": int(round(total[9]))}


def merge_axial(parts: list[dict]) -> dict:
    """The sums of several parts (associative: the order never changes a count; sums agree to rounding)."""
    outer = np.zeros((3, 3))
    n = 0
    for part in parts:
        outer = outer + np.asarray(part["outer"], dtype=np.float64)
        n += int(part["n"])
    return {"outer": outer, "n": n}


def bingham_test(sums: dict, min_axes: int = MIN_AXES) -> dict:
    """Bingham's uniformity test from merged sums (:func:`axial_partial`).

    Returns ``{n, statistic, df, pvalue, eigenvalues, preferred_direction,
    method}``: ``eigenvalues`` of T, descending (1/3 each for uniform axes);
    ``preferred_direction`` the unit eigenvector of the largest one (the mean
    axis of a bipolar law, signed so that its largest component is positive).
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

    return [
        (f"Bingham axial test, {format_count(axial['n'])} axis-only molecules (χ²₅)", test(axial), test(control)),
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
            "orientation tensor, preferred_direction.",
        ),
    ),
    table="statistics",
    rows=axial_rows,
    in_verdict=True,
)
