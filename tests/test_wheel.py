"""The built wheel, installed outside the checkout: one import package, the package data, and a working server.

The wheel goes into a fresh virtual environment; its dependencies come from this checkout's environment
through a .pth line (a full install would fetch them all again), which adds their folder to sys.path without
running its .pth files, so the checkout's own editable install stays out of the way.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
import urllib.request
from pathlib import Path

import pytest

from tests.browser.chrome import chromium_available, make_driver, map_drawn, quit_driver
from tests.harness import free_port, wait_healthy, wait_until

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

SAVE_SMALL_SET = """
import sys
import orientscope
from orientscope.loaders.qm9 import load_qm9

m = load_qm9(limit=120)
ds = orientscope.from_arrays(m.atomic_numbers, m.positions_angstrom, offsets=m.offsets, ids=m.ids, smiles=m.smiles,
                             properties=m.properties[["gap"]], name="Small", data_dir=sys.argv[1])
ds.save(progress=False)
print(orientscope.__file__, ds.id)
"""


def _with_an_orientation(limit: int) -> int:
    """How many of QM9's first ``limit`` molecules the map draws: those with an orientation (a single atom or a
    spherical top such as methane has none)."""
    from orientscope.loaders.qm9 import load_qm9
    from orientscope.science.frames import compute_frames

    m = load_qm9(limit=limit)
    return int((compute_frames(m.positions_angstrom, m.offsets, m.atomic_numbers).orientation != "none").sum())


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory) -> Path:
    """A virtual environment outside the checkout with the wheel installed; its bin folder."""
    root = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                    str(root / "dist"), str(REPO)], check=True, cwd=root)  # fmt: skip
    (wheel,) = (root / "dist").glob("orientscope-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-deps", str(wheel)], check=True, cwd=root)  # fmt: skip
    (site,) = (venv / "lib").glob("python3*/site-packages")
    (site / "checkout_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin"


def _python(bin_dir: Path, code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ORIENTSCOPE_DATA_DIR")}
    return subprocess.run([str(bin_dir / "python"), "-c", code, *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=600)  # fmt: skip


def test_the_wheel_has_one_import_package(wheel_env, tmp_path):
    found = _python(wheel_env, "import orientscope, sys; print(orientscope.__file__)", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert str(wheel_env.parent) in found.stdout and str(REPO) not in found.stdout
    for name in ("app", "backend"):
        missing = _python(wheel_env, f"import {name}", cwd=tmp_path)
        assert missing.returncode != 0 and f"No module named '{name}'" in missing.stderr
    # The QM9 sample the notebooks read ships as package data.
    sample = _python(wheel_env, "import orientscope; print(orientscope.sample_path())", cwd=tmp_path)
    assert sample.returncode == 0, sample.stderr
    assert str(wheel_env.parent) in sample.stdout and sample.stdout.strip().endswith("qm9_sample.extxyz")


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=60) as r:
        return r.status, r.read()


def test_serve_from_the_wheel_answers_and_draws_the_map(wheel_env, tmp_path):
    data_dir = tmp_path / "data"
    saved = _python(wheel_env, textwrap.dedent(SAVE_SMALL_SET), str(data_dir), cwd=tmp_path)
    assert saved.returncode == 0, saved.stderr
    assert saved.stdout.split()[1] == "small" and str(wheel_env.parent) in saved.stdout
    port = free_port()
    cmd = [str(wheel_env / "orientscope"), "serve", "--port", str(port), "--data-dir", str(data_dir),
           "--no-precompute-qm9", "--no-access-log"]  # fmt: skip
    log = tmp_path / "serve.log"
    # A point budget below the set's points makes the map an image, which the page's HTML carries (first paint).
    env = {**os.environ, "ORIENTSCOPE_MAP_POINT_BUDGET": "50"}
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc, timeout_s=120)
        status, page = _get(base + "/?dataset=small&view=map")
        assert status == 200 and b"data-first-paint" in page  # the map's first paint is in the page
        assert _get(base + "/assets/3Dmol-min.js")[0] == 200
        assert _get(base + "/assets/first_paint.js")[0] == 200
        assert _get(base + "/api/docs")[0] == 200
        assert b"small" in _get(base + "/api/datasets")[1]
        if not chromium_available():
            pytest.skip("needs /usr/bin/chromium and /usr/bin/chromedriver")
        driver = make_driver()
        try:
            driver.get(base + "/?dataset=small&view=map")
            drawn = wait_until(lambda: map_drawn(driver), timeout_s=120)
            assert drawn["drawn"] == _with_an_orientation(120)
        finally:
            quit_driver(driver)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert "precomputing" not in log.read_text()
