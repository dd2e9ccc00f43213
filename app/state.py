"""The dashboard's URL and controls: a :class:`ViewState` parsed from the query string, with warnings for what
was ignored, and the values its controls show (the value type itself is ``orientscope.figures.state``).
"""

from __future__ import annotations

from dataclasses import fields
from urllib.parse import parse_qsl

from orientscope.core.groups import GROUP_KINDS
from orientscope.core.selection import parse_selection
from orientscope.figures.state import (
    DEFAULT_AXES,
    URL_FIELDS,
    VIEW_MODES,
    ViewState,
    checked_zoom,
    pins_text,
    split_pins,
)
from orientscope.services.scatter import COORDINATES
from orientscope.services.scatter import SCALES as Y_SCALES


def parse_query(search: str | None) -> tuple[ViewState, list[str]]:
    """ViewState from a query string, plus human-readable warnings for values that were ignored."""
    warnings: list[str] = []
    raw = dict(parse_qsl((search or "").lstrip("?"), keep_blank_values=False))
    known = set(URL_FIELDS)
    for key in sorted(set(raw) - known):
        warnings.append(f"ignored unknown URL parameter {key!r}")
    values = {k: v for k, v in raw.items() if k in known}
    if values.get("view") and values["view"] not in VIEW_MODES:
        warnings.append(f"unknown view {values['view']!r}; expected one of {', '.join(VIEW_MODES)}")
        values.pop("view")
    if values.get("grouping") and values["grouping"] not in GROUP_KINDS:
        warnings.append(f"unknown grouping {values['grouping']!r}; expected one of {', '.join(GROUP_KINDS)}")
        values.pop("grouping")
    if "axes" in values:
        axes = "".join(sorted({c for c in values["axes"] if c in "123"}))
        if not axes:
            warnings.append(f"axes {values['axes']!r} name no axis; expected digits from 1, 2, 3")
        values["axes"] = axes or DEFAULT_AXES
    if values.get("zoom"):
        try:
            values["zoom"] = checked_zoom(values["zoom"], values.get("view") or "density")
        except ValueError as err:
            warnings.append(f"{err}; showing the whole {'plot' if values.get('view') == 'scatter' else 'map'}")
            values.pop("zoom")
    if "pins" in values:
        pins, pin_warnings = split_pins(values["pins"])
        warnings += pin_warnings
        values["pins"] = pins_text(pins)
    for name, allowed in (("xaxis", ("1", "2", "3")), ("coord", COORDINATES), ("yscale", Y_SCALES)):
        if values.get(name) and values[name] not in allowed:
            warnings.append(f"unknown {name} {values[name]!r}; expected one of {', '.join(allowed)}")
            values.pop(name)
    if values.get("sel"):
        try:
            values["sel"] = parse_selection(values["sel"]).text()
        except ValueError as err:
            warnings.append(f"{err}; nothing is selected")
            values.pop("sel")
    if values.get("molecule") and not values.get("view"):
        # A link to a molecule (links made before the density view became the default carry no view):
        # open the view that shows it, not the density view, which has no molecule panel.
        values["view"] = "map"
    return ViewState(**values), warnings


def control_values(st: ViewState) -> dict[str, object]:
    """URL field -> the value its control shows for ``st`` (the axes checklist takes a list)."""
    shown = {f.name: getattr(st, f.name) for f in fields(st) if f.name in URL_FIELDS}
    shown["smarts"] = st.smarts or ""
    shown["axes"] = list(st.axes)
    return shown
