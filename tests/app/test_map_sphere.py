"""The sphere renderer's camera (frontend_assets/map_sphere.js), run in Node: its first view is the server's view along
plotly's default camera (app/sphere_paint.py SPHERE_RIGHT, SPHERE_UP, SPHERE_TOWARDS), and a turned camera projects as
the turntable written here from its definition (z up)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from orientscope.app.sphere_paint import SPHERE_RIGHT, SPHERE_TOWARDS, SPHERE_UP
from orientscope.core.resources import frontend_asset

# map_draw.js and map_sphere.js need only `window` to load (no renderer is called); the camera functions then answer.
RUN_JS = """
global.window = {};
require(process.argv[3]);
require(process.argv[1]);
const s = window.orientscopeMap.sphere, args = JSON.parse(process.argv[2]);
const cam = Object.assign({}, s.START);
const turned = s.dragged(cam, args.drag[0], args.drag[1], s.radiusPx(cam, args.width, args.height));
const out = {};
[["start", cam], ["turned", turned]].forEach(([name, c]) => {
  const p = s.project(c, args.vectors, args.width, args.height);
  out[name] = {camera: c, x: Array.from(p.x), y: Array.from(p.y), depth: Array.from(p.depth)};
});
out.registered = window.orientscopeMap.draw.renderer("sphere") === s.render;
console.log(JSON.stringify(out));
"""


def run_camera(vectors: np.ndarray, width: float, height: float, drag: tuple[float, float]) -> dict:
    node = shutil.which("node")
    if not node:  # .ci/run installs it; elsewhere the test says what it needs instead of failing
        assert not any(os.environ.get(v) for v in ("ORIENTSCOPE_CI", "CI")), "Node.js runs the renderer's camera"
        pytest.skip("needs Node.js to run the renderer's camera (apt-get install nodejs)")
    args = {"vectors": vectors.reshape(-1).tolist(), "width": width, "height": height, "drag": list(drag)}
    done = subprocess.run(
        [node, "-e", RUN_JS, str(frontend_asset("map_sphere.js")), json.dumps(args), str(frontend_asset("map_draw.js"))],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return json.loads(done.stdout)


def turntable(azimuth: float, elevation: float) -> np.ndarray:
    """Rows: screen right, screen up, towards the viewer, of a camera at ``azimuth`` about z and ``elevation``."""
    ca, sa, ce, se = np.cos(azimuth), np.sin(azimuth), np.cos(elevation), np.sin(elevation)
    return np.array([[-sa, ca, 0.0], [-se * ca, -se * sa, ce], [ce * ca, ce * sa, se]])


# water's, CO2's and benzene's axes and the poles, in a seeded Haar-random pose beside them
rng = np.random.default_rng(41)
q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
VECTORS = np.vstack([np.eye(3), -np.eye(3), [[0.6, 0.8, 0.0], [0.0, 0.6, -0.8]], q]).astype(float)


@pytest.mark.parametrize(("width", "height"), [(440.0, 440.0), (300.0, 520.0)])
def test_the_first_view_is_the_servers_view_along_plotlys_default_camera(width, height):
    got = run_camera(VECTORS, width, height, (0.0, 0.0))
    assert got["registered"] is True  # map_draw.js draws a paint of view "sphere" with it
    start = got["start"]
    r = min(width, height) / 2 / 1.1
    x = width / 2 + r * VECTORS @ SPHERE_RIGHT
    y = height / 2 - r * VECTORS @ SPHERE_UP
    # within a thousandth of a pixel of the server's projection (the test asks for one pixel)
    assert np.abs(np.array(start["x"]) - x).max() < 1e-3 and np.abs(np.array(start["y"]) - y).max() < 1e-3
    assert np.allclose(start["depth"], VECTORS @ SPHERE_TOWARDS)


def test_a_drag_turns_the_camera_about_z_and_tips_it_with_the_front_following_the_cursor():
    width = height = 440.0
    got = run_camera(VECTORS, width, height, (40.0, -25.0))
    start, turned = got["start"]["camera"], got["turned"]["camera"]
    r = width / 2 / 1.1
    assert turned["azimuth"] == pytest.approx(start["azimuth"] - 40 / r)
    assert turned["elevation"] == pytest.approx(start["elevation"] - 25 / r)
    basis = turntable(turned["azimuth"], turned["elevation"])
    x, y, depth = width / 2 + r * VECTORS @ basis[0], height / 2 - r * VECTORS @ basis[1], VECTORS @ basis[2]
    assert (
        np.abs(np.array(got["turned"]["x"]) - x).max() < 1e-6 and np.abs(np.array(got["turned"]["y"]) - y).max() < 1e-6
    )
    assert np.allclose(got["turned"]["depth"], depth)
    # the camera stays a rotation: its rows orthonormal, z still up on screen
    assert np.allclose(basis @ basis.T, np.eye(3)) and basis[1, 2] > 0
    # the point at the front centre moves with the cursor: up by about 25 px, and right by about 40 px shortened as
    # the turn about z is seen from the camera's elevation
    front = turntable(start["azimuth"], start["elevation"])[2]
    moved = np.array([width / 2 + r * front @ basis[0], height / 2 - r * front @ basis[1]]) - [width / 2, height / 2]
    assert moved == pytest.approx([40.0 * np.cos(start["elevation"]), -25.0], rel=0.06)
