"""A file format's name and extensions are spelled only in its own module and in the registry.

Everything else (detection, the CLI's and the API's choices, export, the one-molecule downloads, the docs'
format table) reads them from ``orientscope.loaders.registry``, so a new format is its module and one
registration line. The test parses every module of ``backend/`` and ``app/`` and fails on a string constant
equal (ignoring case) to a registered format's name or extension anywhere else.

Some of these words also mean something else: json, parquet and npz are the encodings of OrientScope's own
files (the store's tables and manifests, job records, model arrays) and of some API answers, and "xyz" names
the axes and a field of XYZ text. A module that uses a word in such a sense is listed in OTHER_MEANINGS,
with the reason.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from orientscope.loaders import registry
from tests.source_modules import REPO, modules

REGISTRY = "backend/loaders/registry.py"

# (module, or a folder ending in "/"; the words it may spell; in which sense)
OTHER_MEANINGS = [
    ("backend/store/", {".json", ".parquet"}, "the store's own tables and manifests"),
    ("backend/pipeline/jobs.py", {".json"}, "job records"),
    ("backend/pipeline/shard_models.py", {".npz"}, "the models' per-shard arrays"),
    ("backend/pipeline/smarts_jobs.py", {".npz"}, "a SMARTS search's match arrays"),
    ("backend/pipeline/shard_graphs.py", {".parquet"}, "the chemistry stage's chunk tables"),
    ("backend/pipeline/map_stage.py", {".parquet"}, "the frames table a map is projected from, stored as one file"),
    ("backend/services/orientations.py", {"json", "parquet"}, "encodings of the orientations table download"),
    ("backend/api/routes/orientations.py", {"json", "parquet"}, "encodings of the orientations table download"),
    ("backend/services/model_audits.py", {"parquet"}, "an encoding of the model-audit table download"),
    ("backend/api/routes/model_audits.py", {"parquet"}, "an encoding of the model-audit table download"),
    ("backend/api/routes/orientation_map.py", {"json"}, "the map's answer as JSON (or as PNG)"),
    ("backend/loaders/predictions.py", {"parquet", ".parquet", ".pq"}, "a model audit's predictions table"),
    ("backend/loaders/asedb.py", {"json"}, "ASE's name of its JSON database backend"),
    ("backend/services/canonicalize.py", {"xyz"}, "the request's field of XYZ text"),
    ("backend/services/scatter.py", {"xyz"}, "the axis letters"),
    ("backend/notebook/reports.py", {"xyz"}, "the 3D scene's key, 3Dmol's model type and the axis letters"),
    ("backend/figures/viewer.py", {"xyz"}, "the 3D scene's key of its XYZ text"),
]


def format_words() -> dict[str, set[str]]:
    """Each registered format's module (relative to the repository) -> the words it declares."""
    out: dict[str, set[str]] = {}
    for fmt in registry.FORMATS:
        (module,) = [m for m in list(sys.modules.values()) if getattr(m, "FORMAT", None) is fmt]
        path = Path(module.__file__).resolve().relative_to(REPO).as_posix()
        out.setdefault(path, set()).update({fmt.name, *fmt.extensions})
    return out


def spelled(text: str, words: set[str]) -> list[tuple[int, str]]:
    """(line, constant) of each string constant of a module's source equal, ignoring case, to one of ``words``."""
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() in words
    )


def allowed(module: str, own: dict[str, set[str]]) -> set[str]:
    if module == REGISTRY:
        return {w for words in own.values() for w in words}
    other = {w for where, words, _ in OTHER_MEANINGS if module == where or module.startswith(where) and where.endswith("/") for w in words}  # fmt: skip
    return own.get(module, set()) | other


def test_format_names_and_extensions_live_in_their_module_and_the_registry():
    own = format_words()
    every = {w.lower() for words in own.values() for w in words}
    found = []
    for module in modules():
        ok = {w.lower() for w in allowed(module, own)}
        found += [f"{module}:{line}: {word!r}" for line, word in spelled((REPO / module).read_text(), every - ok)]
    assert not found, (
        "a format's name or extension is spelled outside its module and loaders/registry.py; read it from the "
        "registry (orientscope.loaders.registry, or orientscope.services.formats above the pipeline), or, where "
        "the word means something else here, list the module in OTHER_MEANINGS with the reason:\n" + "\n".join(found)
    )


def test_every_other_meaning_is_still_used():
    """An entry that no longer matches anything is removed, so the list says where the words really are."""
    every = {w for words in format_words().values() for w in words}
    for where, words, why in OTHER_MEANINGS:
        assert words <= every, f"{where}: {sorted(words - every)} name no format"
        texts = [
            (REPO / m).read_text() for m in modules() if m == where or (where.endswith("/") and m.startswith(where))
        ]
        used = {word.lower() for text in texts for _, word in spelled(text, words)}
        assert used == {w.lower() for w in words}, f"{where} ({why}) no longer spells {sorted(words - used)}"


@pytest.mark.parametrize(
    "source",
    ['FORMATS = ("xyz", "sdf")', 'if path.suffix == ".SDF":\n    pass', 'name = f"{stem}.npz"', "x = {'asedb': 1}"],
)
def test_a_spelled_format_word_is_found(source):
    words = {w.lower() for words in format_words().values() for w in words}
    assert spelled(source, words), source
    assert not spelled('"""Reads xyz and .sdf files."""\nx = "xyz_text"', words)  # a sentence or a longer word is not


def test_each_format_module_declares_one_format():
    own = format_words()
    assert REGISTRY not in own
    assert all(path.startswith("backend/loaders/") for path in own)
