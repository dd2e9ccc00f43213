"""The tests' one harness (tests/harness.py): how it waits, and that the tests keep to it.

No test module imports another one (shared helpers live in modules of their own, shared fixtures in a
conftest.py), and outside tests/harness.py nothing picks a free port or polls on its own. The checks read the
syntax tree, as tests/test_layers.py checks imports.
"""

from __future__ import annotations

import ast
import itertools
import re
import socket
from pathlib import Path

import pytest

from tests.harness import GaveUp, free_port, wait_until

REPO = Path(__file__).resolve().parents[1]
HARNESS = "tests/harness.py"
# A benchmark's loop that times each sample and goes on when one is missed, or that plays users' think time:
# a measurement or a load, not a wait.
MEASURING = {
    ("tests/bench/bench_hover_preview.py", "previews"),
    ("tests/bench/bench_ui_map.py", "hovers"),
    ("tests/bench/bench_ui_map.py", "preview_hovers"),
    ("tests/bench/loadtest.py", "_user"),
}
# ``from tests.x.test_y import ...`` written in a string, as a subprocess's script is.
TEST_MODULE_IN_TEXT = re.compile(r"\bfrom\s+tests(?:\.\w+)*\.test_\w+\s+import\b|\bimport\s+tests(?:\.\w+)*\.test_\w+")
CLOCKS = {"monotonic", "perf_counter", "time"}


# ------------------------------------------------------------------ wait_until
def test_wait_until_returns_the_first_truthy_value_through_falsy_values_and_exceptions():
    answers = iter([None, ConnectionRefusedError("not listening"), 0, "up", "later"])

    def probe():
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert wait_until(probe, timeout_s=30, what="the probe", poll_s=0.001) == "up"
    assert next(answers) == "later"  # polled no more once it answered


def test_wait_until_names_what_it_waited_for_and_the_last_exception_at_its_deadline():
    def refused():
        raise ConnectionRefusedError("nobody on port 9")

    with pytest.raises(AssertionError, match=r"waiting for the server on port 9; last value ConnectionRefusedError"):
        wait_until(refused, timeout_s=0.05, what="the server on port 9", poll_s=0.01)
    with pytest.raises(AssertionError, match=r"waiting for the count; last value 0"):
        wait_until(lambda: 0, timeout_s=0.05, what="the count", poll_s=0.01)


def test_a_failed_check_inside_the_predicate_fails_at_once():
    calls = itertools.count()

    def checked():
        next(calls)
        raise AssertionError("progress went back")

    with pytest.raises(AssertionError, match="progress went back"):
        wait_until(checked, timeout_s=30, poll_s=0.001)
    assert next(calls) == 1


def test_give_up_stops_the_wait_unless_the_same_try_succeeds():
    with pytest.raises(GaveUp, match=r"gave up waiting for the file: the writer exited with 1"):
        wait_until(lambda: False, timeout_s=30, what="the file", give_up=lambda: "the writer exited with 1")
    assert wait_until(lambda: "written", timeout_s=30, give_up=lambda: "the writer exited with 0") == "written"


@pytest.mark.parametrize("timeout_s", [float("inf"), 0, -1, float("nan"), None])
def test_every_wait_has_a_deadline(timeout_s):
    with pytest.raises(ValueError, match="timeout_s must be a finite number of seconds > 0"):
        wait_until(lambda: True, timeout_s=timeout_s)


def test_free_port_gives_a_port_that_can_be_listened_on():
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
    assert 0 < port < 65536


# ------------------------------------------------------------------ the tests keep to it
def _sources(root: Path) -> dict[str, str]:
    return {f.relative_to(root).as_posix(): f.read_text() for f in sorted((root / "tests").rglob("*.py"))}


def imports_of_test_modules(sources: dict[str, str]) -> list[str]:
    """``"path:line: module"`` of each import of a test module (``tests....test_*``), in code or in a script's text."""
    found = []
    for path, source in sources.items():
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:  # the module, or a module imported from a package
                modules = (
                    [node.module] if ".test_" in f".{node.module}" else [f"{node.module}.{a.name}" for a in node.names]
                )
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and path != "tests/test_harness.py":
                modules = [m.group(0) for m in TEST_MODULE_IN_TEXT.finditer(node.value)]
            else:
                continue
            for module in modules:
                parts = module.replace("from ", "").split()[0].split(".")
                if parts[0] == "tests" and any(p.startswith("test_") for p in parts[1:]):
                    found.append(f"{path}:{node.lineno}: {module}")
    return sorted(set(found))


def _is_call(node: ast.AST, attrs: set[str]) -> bool:
    """``x.attr(...)`` or ``attr(...)`` for one of ``attrs``."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr in attrs) or (isinstance(f, ast.Name) and f.id in attrs)


def _binds_port_zero(node: ast.AST) -> bool:
    return (
        _is_call(node, {"bind"})
        and bool(node.args)
        and isinstance(node.args[0], ast.Tuple)
        and isinstance(node.args[0].elts[-1], ast.Constant)
        and node.args[0].elts[-1].value == 0
    )


def harness_copies(sources: dict[str, str]) -> list[str]:
    """``"path:line: why"`` of each port picker or polling loop outside tests/harness.py.

    A port picker is a function named ``free_port`` or a ``with socket...`` block that binds port 0 and lets it
    go (a server that keeps its bound socket is no picker). A polling loop is a loop that sleeps and compares a
    clock reading (a deadline), unless it is a benchmark's measuring loop (MEASURING).
    """
    found = []
    for path, source in sources.items():
        if path == HARNESS:
            continue
        tree = ast.parse(source)
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        owner = {id(inner): f.name for f in functions for inner in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.lstrip("_") == "free_port":
                found.append(f"{path}:{node.lineno}: a second free_port")
            elif isinstance(node, ast.With) and any(_binds_port_zero(n) for n in ast.walk(node)):
                found.append(f"{path}:{node.lineno}: picks a free port")
            elif isinstance(node, (ast.While, ast.For)) and (path, owner.get(id(node))) not in MEASURING:
                inside = list(ast.walk(node))
                sleeps = any(_is_call(n, {"sleep"}) for n in inside)
                clock = any(
                    isinstance(n, ast.Compare)
                    and any(_is_call(c, CLOCKS) for s in [n.left, *n.comparators] for c in ast.walk(s))
                    for n in inside
                )
                if sleeps and clock:
                    found.append(f"{path}:{node.lineno}: a polling loop (use tests.harness.wait_until)")
    return sorted(found)


def test_no_test_module_imports_another_test_module():
    assert imports_of_test_modules(_sources(REPO)) == []


def test_only_the_harness_picks_free_ports_and_polls():
    assert harness_copies(_sources(REPO)) == []


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from tests.browser.test_dashboard import wait_for\n", ["t.py:1: tests.browser.test_dashboard"]),
        ("import tests.test_cli\n", ["t.py:1: tests.test_cli"]),
        ("from tests.browser import test_dashboard\n", ["t.py:1: tests.browser.test_dashboard"]),
        ("S = 'import sys; from tests.test_cli import run'\n", ["t.py:1: from tests.test_cli import"]),
        ("from tests.browser.pages import wait_for\nfrom tests.molecules import WATER\n", []),
    ],
)
def test_each_kind_of_test_module_import_is_found(source, found):
    assert imports_of_test_modules({"t.py": source}) == found


BUSY_HEALTH = """
import time
def health(proc, url):
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(url).status_code == 200:
                break
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise AssertionError("serve did not answer")
            time.sleep(0.1)
"""
PORT = """
import socket
def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
def port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
"""
KEPT_SOCKET = """
import socket
class ServerThread:
    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
"""


@pytest.mark.parametrize(
    ("source", "found"),
    [
        # test_cli's health wait before issue 41: no sleep when health answered non-200 (a busy loop)
        (BUSY_HEALTH, ["t.py:5: a polling loop (use tests.harness.wait_until)"]),
        (PORT, ["t.py:3: a second free_port", "t.py:4: picks a free port", "t.py:8: picks a free port"]),
        (KEPT_SOCKET, []),
        ("import time\nfor i in range(3):\n    time.sleep(0.1)\n", []),  # a pause, not a poll
    ],
)
def test_each_kind_of_harness_copy_is_found(source, found):
    assert harness_copies({"t.py": source}) == found
