"""No test waits a fixed time and then asserts that something did or did not happen.

A sleep in tests/ sits in a loop with a deadline (it waits for a condition, polling), or in a kill-timing
helper that says why its sleep has a fixed length (tests/kill_timing.py). The check reads the syntax tree, as
tests/test_layers.py checks imports, and it fails on a test that sleeps and then asserts.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Benchmarks time things on purpose and assert nothing about them (their pauses separate measurements).
NOT_TESTS = ("tests/bench/",)
# (file, function) whose sleep is a kill moment, not a wait; its docstring must say why.
KILL_TIMING = {("tests/kill_timing.py", "sigkill_after")}
CLOCKS = {"monotonic", "perf_counter", "time"}


def _module_aliases(tree: ast.Module, module: str) -> set[str]:
    """Names under which ``module`` is imported (``import time``, ``import time as t``)."""
    return {
        a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names if a.name == module
    }


def _imported(tree: ast.Module, module: str, names: set[str]) -> set[str]:
    """Local names of ``from module import name`` for each of ``names``."""
    return {
        a.asname or a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module == module
        for a in n.names
        if a.name in names
    }


def _is_call_to(node: ast.AST, modules: set[str], names: set[str], attrs: set[str]) -> bool:
    """``node`` calls ``<module>.<attr>(...)`` or a name imported as one of ``names``."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        return f.value.id in modules and f.attr in attrs
    return isinstance(f, ast.Name) and f.id in names


def _has_deadline(loop: ast.AST, time_mods: set[str], clocks: set[str]) -> bool:
    """The loop compares a clock reading with something (``time.monotonic() < deadline``)."""
    return any(
        isinstance(n, ast.Compare)
        and any(_is_call_to(c, time_mods, clocks, CLOCKS) for side in [n.left, *n.comparators] for c in ast.walk(side))
        for n in ast.walk(loop)
    )


def fixed_waits(source: str, path: str) -> list[str]:
    """``"path:line"`` of each sleep in ``source`` that is neither in a deadline loop nor a kill-timing helper."""
    tree = ast.parse(source)
    time_mods, asyncio_mods = _module_aliases(tree, "time"), _module_aliases(tree, "asyncio")
    sleeps, clocks = _imported(tree, "time", {"sleep"}), _imported(tree, "time", CLOCKS)
    async_sleeps = _imported(tree, "asyncio", {"sleep"})
    found = []

    def visit(node: ast.AST, function: ast.AST | None, loop: ast.AST | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            function, loop = node, None  # a loop outside a function does not bound the function's sleeps
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            loop = node
        is_sleep = _is_call_to(node, time_mods, sleeps, {"sleep"})
        # asyncio.sleep(0) only yields to the event loop; any other length waits
        if _is_call_to(node, asyncio_mods, async_sleeps, {"sleep"}):
            is_sleep = not (node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == 0)
        if is_sleep:
            kill_timing = (path, getattr(function, "name", None)) in KILL_TIMING and "Why" in (
                ast.get_docstring(function) or ""
            )
            if not kill_timing and not (loop is not None and _has_deadline(loop, time_mods, clocks)):
                found.append(f"{path}:{node.lineno}")
        for child in ast.iter_child_nodes(node):
            visit(child, function, loop)

    visit(tree, None, None)
    return found


def tree_fixed_waits(root: Path) -> list[str]:
    """:func:`fixed_waits` over every Python file of ``root``/tests, benchmarks aside."""
    out = []
    for file in sorted((root / "tests").rglob("*.py")):
        rel = file.relative_to(root).as_posix()
        if not rel.startswith(NOT_TESTS):
            out += fixed_waits(file.read_text(), rel)
    return out


def test_no_test_sleeps_outside_a_deadline_loop_or_a_kill_timing_helper():
    assert tree_fixed_waits(REPO) == []


SLEEP_THEN_ASSERT = """
import time

def test_the_viewer_draws_once(driver):
    driver.click()
    time.sleep(0.5)  # whatever would happen has happened by now
    assert driver.draws == 1
"""


@pytest.fixture
def sleepy_tree(tmp_path):
    """A copy of the tests tree with one more test that sleeps and then asserts."""
    (tmp_path / "tests" / "browser").mkdir(parents=True)
    (tmp_path / "tests" / "browser" / "test_sleepy.py").write_text(SLEEP_THEN_ASSERT)
    (tmp_path / "tests" / "kill_timing.py").write_text((REPO / "tests" / "kill_timing.py").read_text())
    return tmp_path


def test_a_test_that_sleeps_then_asserts_is_found(sleepy_tree):
    assert tree_fixed_waits(sleepy_tree) == ["tests/browser/test_sleepy.py:6"]


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from time import sleep as nap\ndef t():\n    nap(1)\n    assert x\n", ["t.py:3"]),
        ("import time as clock\ndef t():\n    clock.sleep(1)\n", ["t.py:3"]),
        ("import asyncio\nasync def t():\n    await asyncio.sleep(0.4)\n", ["t.py:3"]),
        ("import asyncio\nasync def t():\n    await asyncio.sleep(0)\n", []),  # a yield to the loop, no wait
        ("import time\ndef t():\n    for _ in range(50):\n        time.sleep(0.1)\n", ["t.py:4"]),  # no deadline
        ("import time\ndef t():\n    while not ready():\n        time.sleep(0.1)\n", ["t.py:4"]),
        (
            "import time\ndef t():\n    deadline = time.monotonic() + 60\n"
            "    while not ready() and time.monotonic() < deadline:\n        time.sleep(0.1)\n",
            [],
        ),
        (
            "import time\ndef t():\n    while True:\n        if ready():\n            break\n"
            "        if time.monotonic() > deadline:\n            raise AssertionError\n        time.sleep(0.1)\n",
            [],
        ),
        # a deadline loop around a function does not cover the sleep inside it
        ("import time\nwhile time.monotonic() < d:\n    def t():\n        time.sleep(1)\n", ["t.py:4"]),
        ("import time\ndef sigkill_after(p, s):\n    '''Why: ...'''\n    time.sleep(s)\n", ["t.py:4"]),  # not listed
    ],
)
def test_each_kind_of_fixed_wait_is_found(source, found):
    assert fixed_waits(source, "t.py") == found


def test_a_kill_timing_helper_must_say_why():
    quiet = "import time\ndef sigkill_after(proc, delay_s):\n    time.sleep(delay_s)\n"
    assert fixed_waits(quiet, "tests/kill_timing.py") == ["tests/kill_timing.py:3"]
