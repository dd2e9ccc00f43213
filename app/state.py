"""The whole view state as a URL query string, so a link reopens exactly the same view."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from urllib.parse import parse_qsl, urlencode

VIEW_MODES = ("map", "density", "sphere")
GROUPINGS = ("scaffold", "formula", "cluster")
DEFAULT_AXES = "123"


@dataclass(frozen=True)
class ViewState:
    dataset: str | None = None
    color: str = "axis"  # axis | group | score | prop:<name>
    grouping: str = "formula"
    group: str | None = None  # filter to one group of `grouping`
    smarts: str | None = None
    molecule: str | None = None
    view: str = "map"
    axes: str = DEFAULT_AXES

    def map_state(self, **extra) -> dict:
        """The keys that decide what the map draws (the molecule selection does not)."""
        keys = ("dataset", "color", "grouping", "group", "smarts", "view", "axes")
        return {**{k: getattr(self, k) for k in keys}, **extra}

    def with_(self, **changes) -> ViewState:
        return replace(self, **changes)

    def to_query(self) -> str:
        """'?dataset=...&...' with defaults omitted (empty string if everything is default)."""
        default = ViewState()
        items = {k: v for k, v in asdict(self).items() if v not in (None, "") and v != getattr(default, k)}
        return "?" + urlencode(items) if items else ""


def parse_query(search: str | None) -> tuple[ViewState, list[str]]:
    """ViewState from a query string, plus human-readable warnings for values that were ignored."""
    warnings: list[str] = []
    raw = dict(parse_qsl((search or "").lstrip("?"), keep_blank_values=False))
    known = set(ViewState.__dataclass_fields__)
    for key in sorted(set(raw) - known):
        warnings.append(f"ignored unknown URL parameter {key!r}")
    values = {k: v for k, v in raw.items() if k in known}
    if values.get("view") and values["view"] not in VIEW_MODES:
        warnings.append(f"unknown view {values['view']!r}; expected one of {', '.join(VIEW_MODES)}")
        values.pop("view")
    if values.get("grouping") and values["grouping"] not in GROUPINGS:
        warnings.append(f"unknown grouping {values['grouping']!r}; expected one of {', '.join(GROUPINGS)}")
        values.pop("grouping")
    if "axes" in values:
        axes = "".join(sorted({c for c in values["axes"] if c in "123"}))
        if not axes:
            warnings.append(f"axes {values['axes']!r} name no axis; expected digits from 1, 2, 3")
        values["axes"] = axes or DEFAULT_AXES
    return ViewState(**values), warnings
