"""No test waits a fixed time and then asserts that something did or did not happen.

A sleep in tests/ sits in a loop with a deadline (it waits for a condition, polling), or in a kill-timing
helper that says why its sleep has a fixed length (tests/kill_timing.py). The check reads the syntax tree, as
tests/test_layers.py checks imports, and it fails on a test that sleeps and then asserts.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
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


# ----------------------------------------------------------------- click-then-assert
# A browser test that acts on the page (a click, keys, a navigation, a script that plays an input) and then
# asserts must first wait for the new state it asserts. Found from the syntax tree, across the browser tests'
# helpers (``open_page`` navigates and waits, ``_choose`` clicks): an assert before any wait, and a wait that
# asks for exactly what it last found (the same probe, the same expected value: it returns at once, on the
# old state), are both reported, and so is a wait whose condition cannot be false.
BROWSER_TESTS = "tests/browser"
ACTION_METHODS = {"click", "double_click", "perform", "send_keys", "clear", "submit", "back", "forward", "refresh"}
DRIVER_NAMES = {"driver", "drv", "ro", "browser"}  # whose ``get(url)`` is a navigation
# A script that plays an input or changes the page's state (not one that only reads it or scrolls).
PLAYS_INPUT = re.compile(r"\.click\(\)|dispatchEvent|set_props|Plotly\.(relayout|react)|history\.")
# A script that sets a property of the page (``el.dataset.clicked = ''``, ``tip.hidden = true``) before an
# input: the next wait on it asks for a new answer.
RESETS = re.compile(r"(\.\w+|\])\s*=[^=>]")
WAITS = {"wait_for", "wait_until"}
# Barriers: they wait for the page to be idle (no callback pending, frames drawn), not for one state, so they
# may follow an action before asserting that something did not happen.
BARRIERS = {"settle", "after_frames"}
ASYNC_SCRIPT = "execute_async_script"  # waits for the page to answer: a barrier too
MUTATORS = {"append", "extend", "insert", "pop", "remove", "update", "clear", "add", "discard", "setdefault"}


@dataclass
class Effect:
    """What calling a helper does to the page: navigates, and ends on an unanswered action or on a wait."""

    navigates: bool = False
    acts: bool = False  # plays an input (whose new state it may wait for itself)
    ends: str | None = None  # "action" | "wait" | None


@dataclass
class Flow:
    """One pass over a function's statements, in order."""

    path: str
    helpers: dict[str, Effect]
    strings: dict[str, str]  # module-level string constants (scripts)
    pending: int | None = None  # line of the last action not yet waited for
    acted: int | None = None  # line of the last action (waited for or not)
    navigates: bool = False
    acts: bool = False
    waited: bool = False
    last: dict[str, str] = field(default_factory=dict)  # probe -> what the last wait on it asked for
    found: list[str] = field(default_factory=list)

    def report(self, node: ast.AST, why: str) -> None:
        self.found.append(f"{self.path}:{node.lineno}: {why}")

    def statements(self, body: list[ast.stmt]) -> bool:
        """Walk ``body`` in order; True when it never falls through (it ends in return, break, continue or
        raise), so that what comes after it only runs on the paths that skipped it."""
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue  # runs when called, not here
            for call in _calls_in_order(stmt):
                self.call(call)
            self.forget(_rebound(stmt))
            if isinstance(stmt, ast.Assert) and self.pending is not None:
                self.report(stmt, f"asserts after the action of line {self.pending} without waiting for the new state")
            if isinstance(stmt, (ast.Return, ast.Break, ast.Continue, ast.Raise)):
                return True
            if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
                self.loop(stmt)
            elif isinstance(stmt, ast.If):
                self.branches(stmt.body, stmt.orelse)
            elif isinstance(stmt, ast.Try):
                self.statements(stmt.body)
                for handler in stmt.handlers:
                    self.branches(handler.body, [])
                self.statements(stmt.orelse)
                self.statements(stmt.finalbody)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                if self.statements(stmt.body):
                    return True
        return False

    def loop(self, stmt: ast.For | ast.AsyncFor | ast.While) -> None:
        """A loop's body twice: its second round meets what the first one left (a wait that still finds the
        first round's answer), unless the first round cannot come round (it ends in return or break)."""
        before = self.state()
        for _ in range(2):
            self.forget(_rebound(stmt) if isinstance(stmt, (ast.For, ast.AsyncFor)) else set())
            if self.statements(stmt.body):
                self.restore(before)
                break
        self.statements(stmt.orelse)

    def branches(self, taken: list[ast.stmt], other: list[ast.stmt]) -> None:
        """An if: a branch that never falls through leaves the state of the other one."""
        before = self.state()
        if self.statements(taken):
            self.restore(before)
            self.statements(other)
            return
        after_taken = self.state()
        if self.statements(other):
            self.restore(after_taken)

    def state(self) -> tuple:
        return self.pending, self.acted, dict(self.last)

    def restore(self, state: tuple) -> None:
        self.pending, self.acted, self.last = state[0], state[1], dict(state[2])

    def forget(self, names: set[str]) -> None:
        """Drop the waits that name any of ``names``: with a new value they ask for something else."""
        self.last = {k: v for k, v in self.last.items() if not any(f"Name(id='{n}'" in k + v for n in names)}

    def call(self, call: ast.Call) -> None:
        name, method = _call_name(call)
        helper = self.helpers.get(name) if name else None
        if method == "get" and _receiver(call) in DRIVER_NAMES:
            self.navigate(call)
        elif method == "execute_script" and self._script_matches(call, RESETS):
            self.last = {}  # it set something on the page (``dataset.clicked = ''``): a wait then asks anew
        elif method in ACTION_METHODS or (method == "execute_script" and self._script_matches(call, PLAYS_INPUT)):
            self.pending = self.acted = call.lineno
            self.acts = True
        elif name in WAITS:
            self.wait(call, *_probe(call))
        elif name in BARRIERS or method == ASYNC_SCRIPT:
            self.pending, self.waited = None, True
        elif helper is not None:
            if helper.navigates:
                self.navigate(call)
            if helper.acts and not helper.navigates:
                self.acted, self.acts = call.lineno, True
            if helper.ends == "action":
                self.pending = call.lineno
            elif helper.ends == "wait" and helper.acts:  # it waits for what its own input changed
                self.pending, self.waited = None, True
            elif helper.ends == "wait":
                self.wait(call, name, ast.dump(call))

    def navigate(self, call: ast.Call) -> None:
        self.navigates, self.pending, self.acted, self.last = True, call.lineno, None, {}

    def wait(self, call: ast.Call, probe: str, asked: str) -> None:
        if self.acted is not None and self.last.get(probe) == asked:
            self.report(call, f"waits for what it found before the action of line {self.acted} (the old state)")
        if _cannot_be_false(call):
            self.report(call, "waits for a condition that cannot be false")
        self.last[probe], self.pending, self.waited = asked, None, True

    def _script_matches(self, call: ast.Call, pattern: re.Pattern) -> bool:
        script = call.args[0] if call.args else None
        text = script.value if isinstance(script, ast.Constant) else None
        if isinstance(script, ast.Name):
            text = self.strings.get(script.id)
        if isinstance(script, ast.JoinedStr):
            text = "".join(v.value for v in script.values if isinstance(v, ast.Constant))
        return isinstance(text, str) and bool(pattern.search(text))

    def effect(self) -> Effect:
        ends = "action" if self.pending is not None else "wait" if self.waited else None
        return Effect(self.navigates, self.acts, ends)


def _calls_in_order(node: ast.AST) -> list[ast.Call]:
    """The calls a statement makes, in the order they run (arguments before the call), leaving out the bodies
    of lambdas (a wait's condition runs inside the wait) and of nested blocks (walked as statements)."""
    out: list[ast.Call] = []

    def visit(n: ast.AST) -> None:
        for name, value in ast.iter_fields(n):
            if isinstance(n, ast.stmt) and name in ("body", "orelse", "finalbody", "handlers"):
                continue
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST) and not isinstance(child, (ast.Lambda, ast.stmt)):
                    visit(child)
        if isinstance(n, ast.Call):
            out.append(n)

    visit(node)
    return out


def _rebound(stmt: ast.stmt) -> set[str]:
    """Names a statement assigns or changes in place (``x = ...``, ``x += ...``, ``x.append(...)``)."""
    targets = getattr(stmt, "targets", None) or [getattr(stmt, "target", None)]
    names = {n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names | {
        c.func.value.id
        for c in _calls_in_order(stmt)
        if isinstance(c.func, ast.Attribute) and c.func.attr in MUTATORS and isinstance(c.func.value, ast.Name)
    }


def _call_name(call: ast.Call) -> tuple[str | None, str | None]:
    """(bare function name, method name) of a call; one of them is None."""
    if isinstance(call.func, ast.Name):
        return call.func.id, None
    if isinstance(call.func, ast.Attribute):
        return None, call.func.attr
    return None, None


def _receiver(call: ast.Call) -> str | None:
    value = call.func.value if isinstance(call.func, ast.Attribute) else None
    return value.id if isinstance(value, ast.Name) else None


def _probe(call: ast.Call) -> tuple[str, str]:
    """(what a wait looks at, what it asks of it): ``wait_for(lambda: x == y)`` looks at x and asks == y."""
    condition = call.args[0] if call.args else None
    if isinstance(condition, ast.Lambda):
        body, defaults = condition.body, ast.dump(condition.args)
        if isinstance(body, ast.Compare) and len(body.ops) == 1:
            return ast.dump(body.left), ast.dump(body.ops[0]) + ast.dump(body.comparators[0]) + defaults
        return ast.dump(body), defaults
    return ast.dump(condition) if condition is not None else "", ""


def _cannot_be_false(call: ast.Call) -> bool:
    """``wait_for(lambda: read() or "-")``: the condition ends in a true constant."""
    condition = call.args[0] if call.args and isinstance(call.args[0], ast.Lambda) else None
    body = condition.body if condition else None
    return isinstance(body, ast.BoolOp) and isinstance(body.op, ast.Or) and isinstance(body.values[-1], ast.Constant)


def _functions(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _strings(tree: ast.Module) -> dict[str, str]:
    return {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
        for t in n.targets
        if isinstance(t, ast.Name)
    }


def _visible_helpers(path: str, tree: ast.Module, effects: dict[tuple[str, str], Effect]) -> dict[str, Effect]:
    """The helpers a module calls by name: its own, and those it imports from the other browser test modules."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(BROWSER_TESTS.replace("/", ".")):
            source = node.module.replace(".", "/") + ".py"
            out |= {a.asname or a.name: effects[source, a.name] for a in node.names if (source, a.name) in effects}
    return out | {name: effect for (where, name), effect in effects.items() if where == path}


def unwaited_actions(sources: dict[str, str]) -> list[str]:
    """``"path:line: why"`` of each assert or wait in ``sources`` (path -> browser test module) that does not
    wait for the new state after an action."""
    trees = {path: ast.parse(src) for path, src in sources.items()}
    strings = {k: v for tree in trees.values() for k, v in _strings(tree).items()}
    effects: dict[tuple[str, str], Effect] = {}
    for _ in range(10):  # helpers call helpers: until their effects stop changing
        found = {}
        for path, tree in trees.items():
            visible = _visible_helpers(path, tree, effects)
            for f in _functions(tree):
                if not f.name.startswith("test_") and f.name not in WAITS | BARRIERS:
                    flow = Flow(path, visible, strings)
                    flow.statements(f.body)
                    found[path, f.name] = flow.effect()
        if found == effects:
            break
        effects = found
    out = []
    for path, tree in trees.items():
        visible = _visible_helpers(path, tree, effects)
        for function in _functions(tree):
            flow = Flow(path, visible, strings)
            flow.statements(function.body)
            out += flow.found
    return sorted(set(out))


def browser_test_sources(root: Path) -> dict[str, str]:
    return {f.relative_to(root).as_posix(): f.read_text() for f in sorted((root / BROWSER_TESTS).glob("*.py"))}


def test_every_action_in_a_browser_test_is_followed_by_a_wait_for_its_new_state():
    assert unwaited_actions(browser_test_sources(REPO)) == []


PINS_BEFORE_ISSUE_40 = """
def _drawn(driver, ids):
    return wait_for(lambda: [c["molecule"] for c in strip(driver)] == ids)


def test_toggle(driver):
    driver.get(URL)
    _drawn(driver, ["1"])
    driver.find_element(By.CSS_SELECTOR, ".pin-pose").click()
    cards = _drawn(driver, ["1"])
    assert cards[0]["pose"] == "canonical"
"""


@pytest.mark.parametrize(
    ("source", "found"),
    [
        # the pose toggle read through the wait it had already passed (make test red, issue 40)
        (PINS_BEFORE_ISSUE_40, ["t.py:10: waits for what it found before the action of line 9 (the old state)"]),
        (
            "def test_t(driver):\n    driver.get(URL)\n    button.click()\n    assert text_of(driver, 'x') == 'y'\n",
            ["t.py:4: asserts after the action of line 3 without waiting for the new state"],
        ),
        (
            "def test_t(driver):\n    driver.get(URL)\n    assert driver.title\n",
            ["t.py:3: asserts after the action of line 2 without waiting for the new state"],
        ),
        # a wait for the new state, then asserts: fine
        (
            "def test_t(driver):\n    driver.get(URL)\n    wait_for(lambda: x(driver) == 1)\n    b.click()\n"
            "    wait_for(lambda: x(driver) == 2)\n    assert y(driver)\n",
            [],
        ),
        # the second round of a loop finds the first round's answer
        (
            "def test_t(driver):\n    for p in points:\n        chain(p).click().perform()\n"
            "        chosen = wait_for(lambda: clicked(driver))\n        assert near(chosen, p)\n",
            ["t.py:4: waits for what it found before the action of line 3 (the old state)"],
        ),
        # ... unless each round first clears it, or the loop cannot come round
        (
            "def test_t(driver):\n    for p in points:\n        driver.execute_script(\"m.dataset.clicked = ''\")\n"
            "        chain(p).click().perform()\n        chosen = wait_for(lambda: clicked(driver))\n",
            [],
        ),
        (
            "def test_t(driver):\n    for p in points:\n        chain(p).perform()\n"
            "        tip = wait_for(lambda: tooltip(driver))\n        assert tip\n        return\n",
            [],
        ),
        # a helper that clicks and returns: its caller waits; one that clicks and waits: done
        (
            "def _press(d):\n    d.find_element(1).click()\n\n\ndef test_t(driver):\n    _press(driver)\n    assert x\n",
            ["t.py:7: asserts after the action of line 6 without waiting for the new state"],
        ),
        (
            "def _press(d):\n    d.find_element(1).click()\n    wait_for(lambda: x(d) == 1)\n\n\n"
            "def test_t(driver):\n    _press(driver)\n    assert y\n",
            [],
        ),
        # a name the wait uses has a new value: it asks for something else
        (
            "def test_t(driver):\n    wait_for(lambda: strip(driver) == ids)\n    ids.append(2)\n    b.click()\n"
            "    wait_for(lambda: strip(driver) == ids)\n",
            [],
        ),
        (
            "def test_t(d):\n    b.click()\n    wait_for(lambda: text(d) or '-')\n",
            ["t.py:3: waits for a condition that cannot be false"],
        ),
        # a script that plays an input is an action
        (
            "ZOOM = 'Plotly.relayout(gd, r)'\ndef test_t(d):\n    d.execute_script(ZOOM)\n    assert ranges(d)\n",
            ["t.py:4: asserts after the action of line 3 without waiting for the new state"],
        ),
    ],
)
def test_each_kind_of_unwaited_action_is_found(source, found):
    assert unwaited_actions({"t.py": source}) == found
