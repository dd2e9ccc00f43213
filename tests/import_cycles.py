"""Import cycles between modules of the root packages, imports inside functions included (grimp's graph).

The root packages are read from import-linter's ``root_packages`` in pyproject.toml, and the graph is checked
to hold every module file under them, so a renamed package is still seen whole.
"""

from __future__ import annotations

import importlib.util
import os
import tomllib
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parents[1]


def root_packages(root: Path = REPO) -> list[str]:
    config = tomllib.loads((root / "pyproject.toml").read_text())
    return list(config["tool"]["importlinter"]["root_packages"])


def module_files(packages: list[str]) -> set[str]:
    """Every module file under the packages' folders as the import system finds them, by dotted name.

    The folder is the one Python imports the package from (``orientscope`` is backend/, with app/ linked
    in as backend/app), walked through links, so every file of the installed package counts.
    """
    names = set()
    for package in packages:
        top = Path(importlib.util.find_spec(package).submodule_search_locations[0])
        for folder, _, files in os.walk(top, followlinks=True):
            for file in (f for f in files if f.endswith(".py")):
                parts = (package, *Path(folder, file).relative_to(top).with_suffix("").parts)
                names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def visit(start: str) -> None:
        # Iterative, so a deep chain of imports cannot reach Python's recursion limit.
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            module, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.find_modules_directly_imported_by(target)))))
                    break
                if target in on_stack:
                    low[module] = min(low[module], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return cycles


def describe(graph: grimp.ImportGraph, cycle: list[str]) -> str:
    members = set(cycle)
    edges = [
        f"  {importer} -> {imported} (line {detail['line_number']}: {detail['line_contents']})"
        for importer in cycle
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & members)
        for detail in graph.get_import_details(importer=importer, imported=imported)[:1]
    ]
    return "\n".join([" <-> ".join(cycle), *edges])


def check(root: Path) -> list[str]:
    """The cycles of the tree at ``root`` (on sys.path), described; raises if the graph misses a module."""
    packages = root_packages(root)
    graph = grimp.build_graph(*packages, cache_dir=None)
    missing = module_files(packages) - set(graph.modules)
    assert not missing, f"the import graph misses {sorted(missing)}"
    return [describe(graph, cycle) for cycle in import_cycles(graph)]
