"""No import cycles between modules of the root packages, imports inside functions included.

A cycle hidden by a function-level import still ties two modules together: it
decides which one may be loaded first and makes a layer's refactoring move both.
The root packages are read from import-linter's ``root_packages`` in
pyproject.toml, and the graph is checked to hold every module file under them,
so a renamed package is still seen whole.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import grimp

from tests.import_cycles import REPO, check, module_files, root_packages


def test_the_root_packages_are_seen_whole():
    packages = root_packages()
    assert packages, "pyproject.toml names no import-linter root_packages"
    graph = grimp.build_graph(*packages, cache_dir=None)
    files = module_files(packages)
    assert files <= set(graph.modules)
    assert any(name.startswith("orientscope.app.") for name in files)  # the dashboard, linked in as backend/app
    assert len(graph.modules) > 100  # the real tree, not an empty one


def test_no_module_imports_itself_through_others():
    cycles = check(REPO)
    assert not cycles, "import cycles:\n" + "\n\n".join(cycles)


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    # backend/ is the orientscope package's source; the copy follows its link to app/ and, first on
    # PYTHONPATH, shadows the installed package.
    shutil.copytree(REPO / "backend", tmp_path / "orientscope", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    store = tmp_path / "orientscope" / "store" / "atomic.py"  # imported by orientscope.store.datasets
    store.write_text(store.read_text() + "\n\ndef _late():\n    from orientscope.store import datasets  # noqa\n")
    script = (
        "import sys; from tests.import_cycles import check; from pathlib import Path; "
        "print('\\n'.join(check(Path(sys.argv[1]))))"
    )
    found = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        cwd=tmp_path,  # `python -c` puts the working folder first on sys.path
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{tmp_path}:{REPO}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert found.returncode == 0, found.stderr
    assert "orientscope.store.atomic" in found.stdout and "orientscope.store.datasets" in found.stdout
