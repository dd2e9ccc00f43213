"""The settings table of ``docs/operations.md``, generated from :class:`~orientscope.core.settings.Settings`.

``make docs`` (``python -m orientscope.core.settings_table docs/operations.md``) rewrites the table between
its two markers; ``tests/core/test_settings.py`` checks that the committed table is the generated one.
"""

from __future__ import annotations

import sys
from dataclasses import Field, fields
from pathlib import Path

from orientscope.core.numbers import format_count, format_number
from orientscope.core.settings import SETTINGS_ENV, SPEC, Settings, env_name

BEGIN = "<!-- settings table: generated from backend/core/settings.py by `make docs`; do not edit by hand -->"
END = "<!-- end of the settings table -->"


def _default(f: Field) -> str:
    spec = f.metadata[SPEC]
    if spec.default_text:
        return spec.default_text
    if f.default is None or f.default == ():
        return "unset"
    if isinstance(f.default, bool):
        return "on" if f.default else "off"
    number = format_count(f.default) if spec.kind == "count" else format_number(f.default, ",g")
    return f"{number} {spec.unit}"


def settings_table() -> str:
    """The Markdown table: one row per variable (its CLI option, what it accepts, its default, its doc)."""
    rows = ["| variable | option | accepts | default | what it does |", "|---|---|---|---|---|"]
    for f in fields(Settings):
        spec = f.metadata[SPEC]
        option = f"`{spec.option}`" if spec.option else "–"
        rows.append(f"| `{env_name(f.name)}` | {option} | {spec.describe()} | {_default(f)} | {spec.doc} |")
    rows.append(
        f"| `{SETTINGS_ENV}` | – | a JSON object of the settings above by name (`shard_size` for "
        "`ORIENTSCOPE_SHARD_SIZE`), the tokens excepted | unset | overrides the variables it names: "
        "`serve --workers N` hands its settings (its options included) to its workers in it |"
    )
    return "\n".join(rows)


def with_table(text: str) -> str:
    """``text`` (a Markdown document holding both markers) with the generated table between them."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the document has no settings table markers: {BEGIN!r} ... {END!r}")
    return f"{text[: start + len(BEGIN)]}\n{settings_table()}\n{text[end:]}"


def main(path: str) -> None:
    """Rewrite the table in the document at ``path`` (when it changed)."""
    doc = Path(path)
    old = doc.read_text(encoding="utf-8")
    new = with_table(old)
    if new != old:
        doc.write_text(new, encoding="utf-8")
    print(f"{path}: settings table {'rewritten' if new != old else 'unchanged'}")


if __name__ == "__main__":
    main(*sys.argv[1:])
