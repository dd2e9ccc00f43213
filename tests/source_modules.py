"""The package's own modules as source text, for the tests that check where a word may be spelled
(``test_format_names.py``, ``test_statistic_keys.py``)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("backend", "app")
LINKED = ("backend/app", "backend/frontend_assets")  # links to app/ and frontend_assets/, not modules of their own


def modules() -> list[str]:
    """Every module of ``backend/`` and ``app/``, relative to the repository (the links into backend skipped)."""
    found = []
    for source in SOURCES:
        for path in sorted((REPO / source).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if not rel.startswith(tuple(f"{link}/" for link in LINKED)):
                found.append(rel)
    return found
