"""The layer contract of pyproject.toml holds, and it fails on an upward or sideways import."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    # --no-cache: import-linter would otherwise write its cache into the checked tree.
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_real_tree_keeps_every_contract():
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("path", "line", "contract"),
    [
        ("core/_upward.py", "import orientscope.api.main", "layers"),  # the lowest layer reaches the top
        ("store/_upward.py", "from orientscope.pipeline import jobs", "layers"),
        ("app/_sideways.py", "import orientscope.api.deps", "layers"),  # siblings stay independent
        ("cli.py", "from orientscope.api import deps", "composition root"),  # the CLI goes through the root
        ("figures/_upward.py", "from orientscope.app import ids", "layers"),  # the shared figures sit below app
        ("figures/_dash.py", "import dash.html", "import no Dash"),
        # indirect: the library imports services.report_format, so Dash imported there reaches it
        ("services/report_format.py", "import dash", "import no Dash"),
    ],
)
def test_an_upward_import_breaks_the_contract(tmp_path, path, line, contract):
    result = lint_with(tmp_path, path, line)
    assert result.returncode != 0
    assert "1 broken" in result.stdout, result.stdout
    assert contract in result.stdout


def test_the_python_library_importing_the_dashboard_breaks_its_own_contract_and_the_layers(tmp_path):
    result = lint_with(tmp_path, "notebook/_dashboard.py", "from orientscope.app import ids")
    assert result.returncode != 0
    assert "2 broken" in result.stdout, result.stdout
    assert "never the dashboard's modules (issue 41) BROKEN" in result.stdout.replace("\n", "")


def lint_with(tmp_path: Path, path: str, line: str) -> subprocess.CompletedProcess:
    """lint-imports on a copy of the package with ``line`` added to the module at ``path``."""
    # backend/ is the source of the orientscope package; copying it follows its link to app/, so the copy
    # on PYTHONPATH is the whole package and shadows the installed one.
    shutil.copytree(REPO / "backend", tmp_path / "orientscope", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    module = tmp_path / "orientscope" / path
    module.write_text((module.read_text() if module.exists() else "") + f"\n{line}\n")
    return lint_imports(tmp_path)
