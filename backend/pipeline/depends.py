"""What a per-shard task's result depends on besides its inputs: the settings of its module it declares.

A task function names the constants of its module that fix its result::

    @depends_on("N_CANDIDATES")
    def reference_candidates(job: ShardJob) -> dict: ...

``pipeline.resume`` puts their values at the time of the run, with the package version and the task's
inputs (the run's parameters, its shard), into the key of the task's marker: a re-run whose declared
settings differ computes the task again, while any other constant of the module may change without
invalidating the shards an interrupted run finished. A task whose result depends on nothing more than
its inputs declares ``@depends_on()``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

DECLARED = "__orientscope_depends_on__"


def depends_on(*names: str) -> Callable[[Callable], Callable]:
    """Declare the module constants (by name; imported ones too) that a task's result depends on."""

    def declare(fn: Callable) -> Callable:
        setattr(fn, DECLARED, names)
        return fn

    return declare


def declared_settings(fn: Callable) -> dict:
    """``{name: value}`` of the settings ``fn`` declares, read now (a test may have changed one).

    ValueError when ``fn`` declares none (a task must say what its result depends on) or names one its
    module lacks.
    """
    names = getattr(fn, DECLARED, None)
    where = f"{fn.__module__}.{fn.__qualname__}"
    if names is None:
        raise ValueError(
            f"task {where} does not declare what its result depends on: decorate it with "
            "@depends_on(...) naming its module's settings (none beyond its inputs: @depends_on())"
        )
    module = vars(sys.modules[fn.__module__])
    missing = [name for name in names if name not in module]
    if missing:
        raise ValueError(f"task {where} depends on {missing}, which its module does not define")
    return {name: module[name] for name in names}
