"""docs/formats.md's format table is the one the registry writes (``loaders/registry.py`` ``format_table``).

After adding or changing a format, regenerate it: ``make formats-table`` (``python -m tests.loaders.test_format_table``).
"""

from __future__ import annotations

from pathlib import Path

from orientscope.loaders import registry

DOCS = Path(__file__).resolve().parents[2] / "docs" / "formats.md"
BEGIN = "<!-- format table: generated from the registry (backend/loaders/registry.py) by `make formats-table` -->\n"
END = "<!-- end of the generated format table -->\n"


def split(text: str) -> tuple[str, str, str]:
    """(before the table, the table, after it) of the docs' text."""
    head, found, rest = text.partition(BEGIN)
    table, found_end, tail = rest.partition(END)
    assert found and found_end, f"{DOCS} lacks the markers of the generated format table"
    return head, table, tail


def test_the_docs_table_is_the_registrys():
    _, table, _ = split(DOCS.read_text(encoding="utf-8"))
    assert table == registry.format_table(), "docs/formats.md's format table is out of date: run make formats-table"


def test_the_table_has_a_row_per_format_naming_what_it_declares():
    rows = registry.format_table().splitlines()[2:]
    assert [row.split("|")[1].strip(" `") for row in rows] == list(registry.names())
    for fmt, row in zip(registry.FORMATS, rows, strict=True):
        assert all(f"`{ext}`" in row for ext in fmt.extensions) and f"`{fmt.media_type}`" in row
        assert all(f"`{option.name}`" in row for option in fmt.options)


if __name__ == "__main__":
    head, _, tail = split(DOCS.read_text(encoding="utf-8"))
    DOCS.write_text(head + BEGIN + registry.format_table() + END + tail, encoding="utf-8")
    print(f"wrote the format table of {DOCS}")
