"""The map's nearest point: known answers, the tie rule, and the first paint's JavaScript agreeing on ties."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from orientscope.science.nearest_point import nearest_point, point_keys

FIRST_PAINT_JS = Path(__file__).resolve().parents[2] / "frontend_assets" / "first_paint.js"

# Loads first_paint.js as a page would load it as an asset (no first paint to draw: it only shares
# window.orientscopeMap), then answers each case of stdin with its nearestPoint.
NODE_RUNNER = """
globalThis.window = {};
globalThis.document = { currentScript: null };
const fs = require("fs");
require("vm").runInThisContext(fs.readFileSync(process.argv[1], "utf8"), { filename: process.argv[1] });
const cases = JSON.parse(fs.readFileSync(0, "utf8"));
const near = window.orientscopeMap.nearestPoint;
process.stdout.write(JSON.stringify(cases.map(c => near(c.x, c.y, c.keys, c.px, c.py, c.radius))));
"""


def _pick(x, y, rows, axes, click, radius=5.0, pixel=(1.0, 1.0)):
    hit = nearest_point(np.asarray(x, float), np.asarray(y, float), np.asarray(rows, np.int32),
                        np.asarray(axes, np.int8), click, pixel, radius)  # fmt: skip
    return None if hit is None else hit[0]


def test_point_keys_order_molecules_then_axes():
    np.testing.assert_array_equal(point_keys([0, 0, 1, 7], [1, 3, 1, 2]), [0, 2, 3, 22])


def test_the_nearest_within_the_radius_in_pixels():
    x, y = [0.0, 3.0, 0.0], [0.0, 0.0, 4.0]
    assert nearest_point(np.array(x), np.array(y), np.arange(3), np.ones(3, np.int8), (2.9, 0.1), (1, 1), 5) == (
        1,
        pytest.approx(np.hypot(0.1, 0.1)),
    )
    assert _pick(x, y, [0, 1, 2], [1, 1, 1], (10.0, 10.0)) is None
    # a point exactly at the radius counts; one beyond it does not
    assert _pick([5.0], [0.0], [0], [1], (0.0, 0.0)) == 0
    assert _pick([5.0 + 1e-9], [0.0], [0], [1], (0.0, 0.0)) is None
    # offsets are measured in pixels: 0.04 map units across is 4 px of 0.01, 0.04 up is 0.5 px of 0.08
    assert _pick([0.04, 0.0], [0.0, 0.04], [0, 1], [1, 1], (0.0, 0.0), pixel=(0.01, 0.08)) == 1


def test_ties_go_to_the_lowest_molecule_then_the_lowest_axis():
    # four points 1 px from the click; molecules 7, 2, 9, 2 (axes 1, 3, 1, 2): molecule 2's axis 2
    x, y = [1.0, -1.0, 0.0, 0.0], [0.0, 0.0, 1.0, -1.0]
    assert _pick(x, y, [7, 2, 9, 2], [1, 3, 1, 2], (0.0, 0.0)) == 3
    # a nearer point beats any key
    assert _pick([*x, 0.5], [*y, 0.0], [7, 2, 9, 2, 50], [1, 3, 1, 2, 3], (0.0, 0.0)) == 4


def test_runs_and_a_reordered_copy_give_the_same_pick():
    rng = np.random.default_rng(5)
    x, y = np.round(rng.uniform(0, 20, (2, 400)))  # on a grid: many exact ties
    rows, axes = rng.integers(0, 100, 400).astype(np.int32), rng.integers(1, 4, 400).astype(np.int8)
    order = np.argsort(x, kind="stable")
    runs = np.array([[0, 150], [150, 400]])
    for cx, cy in rng.uniform(0, 20, (50, 2)).round(1):
        plain = nearest_point(x, y, rows, axes, (cx, cy), (1, 1), 3.0)
        split = nearest_point(x[order], y[order], rows, axes, (cx, cy), (1, 1), 3.0, runs=runs, order=order)
        assert plain == split
        if plain is not None:  # brute force: the least (distance, key)
            d2 = (x - cx) ** 2 + (y - cy) ** 2
            best = min(np.flatnonzero(d2 <= 9.0), key=lambda i: (d2[i], point_keys(rows[i], axes[i])))
            assert plain[0] == best


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run frontend_assets/first_paint.js")
def test_the_first_paints_javascript_breaks_ties_as_the_server_does():
    rng = np.random.default_rng(8)
    cases, want, ties = [], [], 0
    for _ in range(40):
        # points on a grid around a grid click: several at exactly the nearest distance, in random order
        n = int(rng.integers(3, 12))
        x, y = rng.integers(-2, 3, (2, n)).astype(float)
        rows, axes = rng.integers(0, 6, n), rng.integers(1, 4, n)  # few molecules: shared rows tie on the axis
        radius = float(rng.choice([1.0, 1.5, 2.5]))
        cases.append({"x": x.tolist(), "y": y.tolist(), "keys": point_keys(rows, axes).tolist(), "px": 0.0,
                      "py": 0.0, "radius": radius})  # fmt: skip
        hit = _pick(x, y, rows, axes, (0.0, 0.0), radius=radius)
        want.append(-1 if hit is None else hit)
        d2 = x**2 + y**2
        ties += hit is not None and np.sum(d2 == d2[hit]) > 1
    assert ties >= 10  # the cases do exercise the rule
    out = subprocess.run(
        ["node", "-e", NODE_RUNNER, str(FIRST_PAINT_JS)],
        input=json.dumps(cases), capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    assert json.loads(out.stdout) == want
