"""The Python library draws the dashboard's figures in a process where Dash cannot be imported (issue 41).

A subprocess blocks every ``dash`` import before it imports ``orientscope``, draws a report's map, angle
histogram, sphere, card and molecule view, and writes what they show; this test checks that against the
store's own frames table (each axis its symmetry defines, at the Mollweide position of its stored
longitude and latitude) and the report's angle counts.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from orientscope.figures.plots import MAP_SCALE
from orientscope.science.sphere import mollweide_xy

SCRIPT = textwrap.dedent(
    """
    import importlib.abc, json, sys

    class NoDash(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "dash" or name.startswith("dash."):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
            return None

    sys.meta_path.insert(0, NoDash())
    try:
        import dash  # noqa: F401
        blocked = False
    except ImportError:
        blocked = True

    import numpy as np
    import orientscope

    r = orientscope.report(orientscope.load("qm9", sys.argv[1]), seed=0, progress=False)
    figures = {kind: r.figure(kind) for kind in ("map", "sphere", "angles")}
    points = [
        {"cls": t.meta["class"], "x": np.asarray(t.x, float).tolist(), "y": np.asarray(t.y, float).tolist()}
        for t in figures["map"].data
        if (t.meta or {}).get("kind") == "points"
    ]
    bars = {
        t.name: {"y": np.asarray(t.y, float).tolist(), "customdata": np.asarray(t.customdata, float).tolist()}
        for t in figures["angles"].data
        if t.type == "bar"
    }
    frames = r.frames
    out = {
        "blocked": blocked,
        "points": points,
        "map_meta": figures["map"].layout.meta["map"],
        "bars": bars,
        "histogram": r.to_dict()["angle_histogram"]["haar_ratio"],
        "sphere_types": [t.type for t in figures["sphere"].data],
        "card": r._repr_html_(),
        "molecule": r.molecule(str(frames["id"].iloc[0]))._make_html(),
        "lonlat": {k: frames[k].astype(float).tolist() for k in ("lon1", "lat1", "lon2", "lat2", "lon3", "lat3")},
        "orientation": frames["orientation"].tolist(),
        "defined_axis": frames["defined_axis"].astype(int).tolist(),
        "dash_modules": sorted(m for m in sys.modules if m == "dash" or m.startswith("dash.")),
    }
    print(json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def drawn(qm9_store, tmp_path_factory) -> dict:
    data_dir = tmp_path_factory.mktemp("no-dash") / "data"
    shutil.copytree(qm9_store / "datasets", data_dir / "datasets")
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(data_dir)], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.splitlines()[-1])


def test_dash_is_blocked_and_never_imported(drawn):
    assert drawn["blocked"], "the blocker let `import dash` through: the test would prove nothing"
    assert drawn["dash_modules"] == []


def test_the_map_draws_each_axis_at_its_stored_orientation(drawn):
    lonlat = {k: np.asarray(v, np.float64) for k, v in drawn["lonlat"].items()}
    orientation, defined_axis = np.asarray(drawn["orientation"]), np.asarray(drawn["defined_axis"])
    n_defined = 0
    for axis in (1, 2, 3):
        lon, lat = lonlat[f"lon{axis}"], lonlat[f"lat{axis}"]
        # a molecule's symmetry defines all three axes, one (a symmetric top's) or none (a spherical top's)
        defined = (orientation == "full") | ((orientation == "axis") & (defined_axis == axis))
        n_defined += int(defined.sum())
        want_x, want_y = mollweide_xy(lon[defined], lat[defined])
        traces = [t for t in drawn["points"] if t["cls"] == axis - 1]
        got_x = np.concatenate([t["x"] for t in traces]) / MAP_SCALE
        got_y = np.concatenate([t["y"] for t in traces]) / MAP_SCALE
        assert got_x.size == defined.sum() > 0, axis
        # map units are whole numbers (1e-4 Mollweide units): compare the sorted coordinates to that
        np.testing.assert_allclose(np.sort(got_x), np.sort(want_x), atol=1.01 / MAP_SCALE)
        np.testing.assert_allclose(np.sort(got_y), np.sort(want_y), atol=1.01 / MAP_SCALE)
    assert drawn["map_meta"]["n_points"] == n_defined and drawn["map_meta"]["mode"] == "points"


def test_the_angle_histogram_shows_the_reports_counts_over_the_haar_expectation(drawn):
    hist = drawn["histogram"]
    bars = drawn["bars"]["dataset"]
    custom = np.asarray(bars["customdata"])  # [low °, high °, observed, expected] per bin
    np.testing.assert_allclose(custom[:, 2], hist["observed"])
    np.testing.assert_allclose(custom[:, 3], hist["expected"])
    assert custom[:, 2].sum() == hist["n"] > 0
    np.testing.assert_allclose(np.degrees(hist["bin_edges_rad"][:-1]), custom[:, 0])
    observed = custom[:, 2] > 0
    np.testing.assert_allclose(np.asarray(bars["y"])[observed], (custom[:, 2] / custom[:, 3])[observed], rtol=1e-9)
    assert "control (random rotations)" in drawn["bars"]


def test_the_sphere_card_and_molecule_view_draw_too(drawn):
    assert "scatter3d" in drawn["sphere_types"]
    assert "data-verdict=" in drawn["card"] and "data:image/png;base64," in drawn["card"]
    assert "data:text/javascript;base64," in drawn["molecule"]
