"""The compare view's two columns, slot by slot, so that they line up.

Each column is the same list of :data:`SLOTS` (headline, KL difference, what the verdict
rests on, each table, the map); ``style.css`` lays the two lists out on one grid
(``grid-template-rows: subgrid``), so a slot is as tall on both sides. Each table lists the
same measures on both sides, "–" where a side has no value.
"""

from __future__ import annotations

from dataclasses import replace

from dash import html

from orientscope.app.verdict import headline_children, meta_children, section_children
from orientscope.services.report_format import Section, kl_difference, report_sections
from orientscope.services.statistics import table_keys

SLOTS = ("headline", "kl-difference", "meta", *table_keys(), "map")  # one per report table between meta and map


def _measure(row: tuple[str, ...]) -> str:
    return row[0].removesuffix(" *")  # the lab-frame mark may be on one side only


def _same_rows(a: Section, b: Section) -> tuple[Section, Section]:
    """Both sections with the union of their measures, in A's order then B's."""
    order = list(dict.fromkeys(_measure(r) for r in a.rows + b.rows))

    def filled(s: Section) -> Section:
        if not s.rows:  # skipped, or nothing to show: says so in its own words
            return s
        have = {_measure(r): r for r in s.rows}
        return replace(s, rows=[have.get(m, (m,) + ("–",) * (len(s.header) - 1)) for m in order])

    return filled(a), filled(b)


def compare_columns(reports: tuple[dict, dict], graphs: tuple[object, object]) -> tuple[list, list]:
    """The children of both columns: one ``div.compare-slot`` per entry of :data:`SLOTS`, in that order."""
    a, b = reports
    sections = [_same_rows(sa, sb) for sa, sb in zip(report_sections(a), report_sections(b), strict=True)]
    difference = kl_difference(a, b)
    columns = []
    for side, (report, graph) in enumerate(zip(reports, graphs, strict=True)):
        parts = [
            headline_children(report, main=False),
            [html.P(difference, className="answer kl-difference")] if difference and side == 0 else [],
            meta_children(report, main=False),
            *(section_children(pair[side]) for pair in sections),
            [graph],
        ]
        columns.append(
            [
                html.Div(children, className=f"compare-slot slot-{name}")
                for name, children in zip(SLOTS, parts, strict=True)
            ]
        )
    return columns[0], columns[1]
