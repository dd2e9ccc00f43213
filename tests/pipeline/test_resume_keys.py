"""A finished task is taken over by a re-run when what it declares it depends on is unchanged.

Its marker's key holds the package version, the task, its inputs and the module settings it declares
(``pipeline.depends``); any other constant of its module may change without invalidating it.
"""

from __future__ import annotations

import pytest

from orientscope.pipeline.depends import depends_on
from orientscope.pipeline.engine import Engine, parse_cluster
from orientscope.pipeline.resume import ResumingEngine

SCALE = 3  # what _scaled declares
LABEL = "scaled"  # declared by no task
computed: list[int] = []


@depends_on("SCALE")
def _scaled(x: int) -> int:
    computed.append(x)
    return x * SCALE


def _undeclared(x: int) -> int:
    return x


def _run(result_dir, fn=_scaled, items=(1, 2, 3)) -> tuple[list, list]:
    """The results of a pass of ``fn`` over ``items`` and the items computed (not taken over)."""
    computed.clear()
    with Engine(parse_cluster("in-process")) as engine:
        results = ResumingEngine(engine, result_dir, "stage", n_shards=0).map(fn, list(items))
    return results, list(computed)


def test_only_a_declared_setting_or_an_input_makes_a_finished_task_run_again(tmp_path, monkeypatch):
    assert _run(tmp_path) == ([3, 6, 9], [1, 2, 3])
    assert _run(tmp_path) == ([3, 6, 9], [])  # every marker taken over
    monkeypatch.setitem(globals(), "LABEL", "another")  # a module constant no task declares
    assert _run(tmp_path) == ([3, 6, 9], [])
    assert _run(tmp_path, items=(1, 2, 4)) == ([3, 6, 12], [4])  # another input: that task only
    monkeypatch.setitem(globals(), "SCALE", 4)  # the declared setting
    assert _run(tmp_path) == ([4, 8, 12], [1, 2, 3])


def test_a_task_that_declares_nothing_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match=r"_undeclared does not declare .* @depends_on"):
        _run(tmp_path, _undeclared)


def test_a_declared_name_the_module_lacks_is_named(tmp_path):
    missing = depends_on("NO_SUCH_SETTING")(lambda x: x)
    with pytest.raises(ValueError, match="NO_SUCH_SETTING"):
        _run(tmp_path, missing)
