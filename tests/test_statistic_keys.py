"""A statistic's report keys are spelled only in its own science module and in the statistics registry.

Everything else (the pipeline's stages, the report, its words, the API, the dashboard, the Python API) reads
them from the statistic's module or, above the services, from ``orientscope.services.statistics``, so a new
statistic is its module and one registration. The test parses every module of ``backend/`` and ``app/`` and
fails on a string constant equal to a registered statistic's report key anywhere else (tests may spell them:
they check the keys users read).

Some of these words also mean something else in a few places (a seed stream's purpose, a DOM class); such a
module is listed in OTHER_MEANINGS with the reason.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from orientscope.science import statistics_registry
from tests.source_modules import REPO, modules

REGISTRY = "backend/science/statistics_registry.py"

# (module; the keys it may spell; in which sense)
OTHER_MEANINGS = [
    ("backend/science/so3_partial.py", {"kl"}, "the counter-based stream of the KL fits' groups (KLPart)"),
    ("backend/pipeline/shard_chemistry.py", {"similarity"}, "the purpose of the coupling's derived seed"),
]


def statistic_keys() -> dict[str, set[str]]:
    """Each built-in statistic's module (relative to the repository) -> the report keys it declares."""
    out: dict[str, set[str]] = {}
    for stat in statistics_registry.BUILT_IN:
        (module,) = [
            m
            for m in list(sys.modules.values())
            if any(v is stat or (isinstance(v, tuple) and any(x is stat for x in v)) for v in vars(m).values())
            and getattr(m, "__name__", "").startswith("orientscope.science.")
            and m.__name__ != "orientscope.science.statistics_registry"
        ]
        path = Path(module.__file__).resolve().relative_to(REPO).as_posix()
        out.setdefault(path, set()).update(stat.names())
    return out


def spelled(text: str, words: set[str]) -> list[tuple[int, str]]:
    """(line, constant) of each string constant of a module's source equal to one of ``words``."""
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in words
    )


def allowed(module: str, own: dict[str, set[str]]) -> set[str]:
    if module == REGISTRY:
        return {w for words in own.values() for w in words}
    other = {w for where, words, _ in OTHER_MEANINGS if module == where for w in words}
    return own.get(module, set()) | other


def test_statistic_keys_live_in_their_module_and_the_registry():
    own = statistic_keys()
    every = {w for words in own.values() for w in words}
    found = []
    for module in modules():
        found += [
            f"{module}:{line}: {word!r}"
            for line, word in spelled((REPO / module).read_text(), every - allowed(module, own))
        ]
    assert not found, (
        "a statistic's report key is spelled outside its science module and science/statistics_registry.py; "
        "import the key from the statistic's module (orientscope.services.statistics above the services), or, "
        "where the word means something else here, list the module in OTHER_MEANINGS with the reason:\n"
        + "\n".join(found)
    )


def test_every_other_meaning_is_still_used():
    """An entry that no longer matches anything is removed, so the list says where the words really are."""
    every = {w for words in statistic_keys().values() for w in words}
    for where, words, why in OTHER_MEANINGS:
        assert words <= every, f"{where}: {sorted(words - every)} is no statistic's key"
        used = {word for _, word in spelled((REPO / where).read_text(), words)}
        assert used == words, f"{where} ({why}) no longer spells {sorted(words - used)}"


@pytest.mark.parametrize(
    "source",
    ['x = report["kl"]', 'if "axial" in figures:\n    pass', "skipped = {'similarity': why}", "f(key='regression')"],
)
def test_a_spelled_key_is_found(source):
    words = {w for words in statistic_keys().values() for w in words}
    assert spelled(source, words), source
    assert not spelled('"""The kl and ks of a set."""\nx = "kl_text"\ny = "KL"', words)  # a sentence, a longer word


def test_each_statistic_is_declared_in_one_science_module():
    own = statistic_keys()
    assert REGISTRY not in own
    assert all(path.startswith("backend/science/") for path in own)
    names = [w for words in own.values() for w in words]
    assert len(names) == len(set(names)), "two modules declare the same report key"


def test_every_named_per_shard_and_merge_function_exists():
    """A built-in statistic computed by its stage's own machinery names those functions; each name resolves."""
    import importlib

    for stat in statistics_registry.BUILT_IN:
        for name in (stat.per_shard, stat.merge):
            if callable(name):
                continue
            module, function = name.split(":")
            assert callable(getattr(importlib.import_module(f"orientscope.{module}"), function, None)), (
                f"statistic {stat.key!r} names {name!r}, which is not a function"
            )
