"""The view state: one typed value, parsed once from the URL, the controls or the map-state store.

Every callback, the server-built first view and the Python library's figures turn their raw inputs
into a :class:`ViewState` at the boundary and pass that on; nothing below reads loose dicts. The
whole URL-visible state round-trips through a query string, so a link reopens exactly the same
view (the dashboard parses a URL with ``orientscope.app.state.parse_query``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from urllib.parse import urlencode

from orientscope.core.selection import parse_selection
from orientscope.services.scatter import COORDINATES
from orientscope.services.scatter import SCALES as Y_SCALES

VIEW_MODES = ("map", "density", "sphere", "scatter")
TABLES = ("original", "control")
DEFAULT_AXES = "123"

# What the URL carries, and what decides what the map draws (the selection does not; the
# table is set only by the compare view, never by a URL).
# The scatter view's controls: a property (y) against a coordinate of one axis (x), app/scatter_panel.py.
SCATTER_FIELDS = ("prop", "xaxis", "coord", "yscale")
URL_FIELDS = (
    "dataset", "color", "grouping", "group", "smarts", "molecule", "view", "axes", "compare", "zoom", "pins", "sel",
    *SCATTER_FIELDS,
)  # fmt: skip
MAP_FIELDS = ("dataset", "table", "color", "grouping", "group", "smarts", "view", "axes", *SCATTER_FIELDS)


@dataclass(frozen=True)
class ViewState:
    dataset: str | None = None
    color: str = "axis"  # axis | group | score | prop:<name>
    grouping: str = "formula"
    group: str | None = None  # filter to one group of `grouping`
    smarts: str | None = None
    molecule: str | None = None
    view: str = "density"  # the first screen: the density beside its control shows a bias at once
    axes: str = DEFAULT_AXES  # the shown axes, sorted digits of 1, 2, 3
    table: str = "original"  # "control": the seeded random-rotation control (compare view)
    compare: str | None = None  # the compare view's dataset B: an id, or "<id>::control"
    # the region shown "x0,x1,y0,y1": the flat map's and the density view's in Mollweide units, the scatter view's
    # in its data units (y: log10 of the property on a log scale); None: the whole map, or the scatter's home
    zoom: str | None = None
    pins: str | None = None  # the pinned molecules "id1,id2:c,..." (at most MAX_PINS) in pinning order, ":c" canonical
    sel: str | None = None  # the flat map's box or lasso selection (orientscope.core.selection); None: none
    prop: str | None = None  # the scatter view's property (y); None: the dataset's first
    xaxis: str = "1"  # the scatter view's axis (x), 1..3
    coord: str = "lat"  # and its coordinate: one of COORDINATES
    yscale: str | None = None  # the property's scale: one of Y_SCALES; None: the one that suits the data

    @property
    def ready(self) -> bool:
        """Whether a dataset is chosen (nothing can be drawn without one)."""
        return bool(self.dataset)

    @property
    def axis_numbers(self) -> tuple[int, ...]:
        return tuple(int(a) for a in self.axes)

    @property
    def region(self) -> tuple[float, float, float, float] | None:
        """The zoomed region (x0, x1, y0, y1), Mollweide units, of the flat map or the density view; None: the whole
        map."""
        return parse_zoom(self.zoom) if self.zoom and self.view in PLANE_VIEWS else None

    @property
    def scatter_region(self) -> tuple[float, float, float, float] | None:
        """The scatter view's zoomed region (x0, x1, y0, y1) in its data units; None: its home region."""
        return parse_region(self.zoom) if self.zoom and self.view == "scatter" else None

    def map_state(self) -> dict:
        """The map-state store's JSON: the fields that decide what the map draws."""
        return {k: getattr(self, k) for k in MAP_FIELDS}

    def with_(self, **changes) -> ViewState:
        return replace(self, **changes)

    def to_query(self) -> str:
        """'?dataset=...&...' with defaults omitted (empty string if everything is default)."""
        default = ViewState()
        items = {
            k: v
            for k, v in asdict(self).items()
            if k in URL_FIELDS and v not in (None, "") and v != getattr(default, k)
        }
        if self.molecule and self.view == "density":
            items["view"] = self.view  # parse_query opens a molecule without a view in the point map
        if self.view not in ZOOMED_VIEWS:
            items.pop("zoom", None)
        if self.view != "map":
            items.pop("sel", None)  # only the flat map selects
        if self.view != "scatter":
            for name in SCATTER_FIELDS:
                items.pop(name, None)
        return "?" + urlencode(items) if items else ""

    @classmethod
    def from_controls(
        cls,
        *,
        dataset: str | None,
        color: str | None,
        grouping: str | None,
        group: str | None,
        smarts: str | None,
        molecule: str | None,
        view: str | None,
        axes: list[str] | None,
        compare: str | None = None,
        zoom: str | None = None,
        pins: str | None = None,
        sel: str | None = None,
        prop: str | None = None,
        xaxis: str | None = None,
        coord: str | None = None,
        yscale: str | None = None,
    ) -> ViewState:
        """The state the controls show (their values as the browser sends them)."""
        return cls(
            dataset=_text(dataset, "dataset"),
            color=_text(color, "color") or "axis",
            grouping=_text(grouping, "grouping") or "formula",
            group=_text(group, "group") or None,
            smarts=(_text(smarts, "smarts") or "").strip() or None,
            molecule=_text(molecule, "molecule"),
            view=_text(view, "view") or "density",
            axes=_axes(axes),
            compare=_text(compare, "compare") or None,
            zoom=_zoom_text(_text(zoom, "zoom"), _text(view, "view") or "density"),
            pins=pins_text(split_pins(_text(pins, "pins"))[0]),
            sel=_sel_text(_text(sel, "sel")),
            prop=_text(prop, "prop") or None,
            xaxis=_one_of(_text(xaxis, "xaxis"), ("1", "2", "3"), "1"),
            coord=_one_of(_text(coord, "coord"), COORDINATES, "lat"),
            yscale=_one_of(_text(yscale, "yscale"), Y_SCALES, None),
        )

    @classmethod
    def from_map_state(cls, data: dict | None) -> ViewState:
        """The state of the map-state store (``map_state()``); the empty state when there is none.

        TypeError/ValueError for a store value the page never writes (a callback answers 422).
        """
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise TypeError(f"map state must be an object, not {type(data).__name__}")
        values = {k: _text(data[k], k) for k in MAP_FIELDS if data.get(k) is not None}
        if values.get("table", "original") not in TABLES:
            raise ValueError(f"unknown table {values['table']!r}; expected one of {TABLES}")
        if "axes" in values:
            values["axes"] = _axes(list(values["axes"]))
        return cls(**values)


def _text(value, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{name} must be a string, not {type(value).__name__}")


def _axes(axes) -> str:
    """Sorted axis digits of a checklist value (['3', '1'] -> '13'); all axes when none is valid."""
    if axes is None:
        return DEFAULT_AXES
    if not isinstance(axes, list | tuple):
        raise TypeError(f"axes must be a list, not {type(axes).__name__}")
    return "".join(sorted({a for a in axes if isinstance(a, str) and a in ("1", "2", "3")})) or DEFAULT_AXES


PLANE_VIEWS = ("map", "density")  # views of the Mollweide plane: a zoom of one is a zoom of the other
ZOOMED_VIEWS = (*PLANE_VIEWS, "scatter")  # the views whose zoom the URL carries
# A zoom farther out than the whole map (|x| <= 2.83, |y| <= 1.42) shows nothing more.
MAX_ZOOM_COORDINATE = 6.0
ZOOM_DECIMALS = 4  # 1e-4 Mollweide units: a hundredth of a pixel of the whole map


REGION_DIGITS = 7  # significant digits of a scatter zoom's bounds: far finer than a pixel of any plot
MAX_REGION_COORDINATE = 1e300  # a scatter zoom is in its data units: any finite numbers


def parse_zoom(text: str, bound: float = MAX_ZOOM_COORDINATE) -> tuple[float, float, float, float]:
    """(x0, x1, y0, y1) of a zoom "x0,x1,y0,y1" (Mollweide units, or the scatter view's data units with ``bound``
    :data:`MAX_REGION_COORDINATE`); ValueError naming what is wrong."""
    parts = text.split(",")
    if len(parts) != 4:
        raise ValueError(f"zoom {text!r} must be four numbers x0,x1,y0,y1")
    x0, x1, y0, y1 = (float(p) for p in parts)
    if not all(abs(v) <= bound for v in (x0, x1, y0, y1)):  # also NaN and inf
        raise ValueError(f"zoom {text!r} must lie within ±{bound:g}")
    if not (x1 > x0 and y1 > y0):
        raise ValueError(f"zoom {text!r} must have x0 < x1 and y0 < y1")
    return x0, x1, y0, y1


def parse_region(text: str) -> tuple[float, float, float, float]:
    """(x0, x1, y0, y1) of the scatter view's zoom "x0,x1,y0,y1" (its data units)."""
    return parse_zoom(text, MAX_REGION_COORDINATE)


def zoom_text(x0: float, x1: float, y0: float, y1: float) -> str:
    """The URL's zoom of a region (Mollweide units)."""
    return ",".join(f"{v:.{ZOOM_DECIMALS}f}" for v in (x0, x1, y0, y1))


def region_text(x0: float, x1: float, y0: float, y1: float) -> str:
    """The URL's zoom of a scatter region (its data units)."""
    return ",".join(f"{v:.{REGION_DIGITS}g}" for v in (x0, x1, y0, y1))


def checked_zoom(text: str, view: str) -> str:
    """A zoom as the URL writes it for ``view`` (Mollweide for the map and the density view, data units for the
    scatter view); ValueError naming what is wrong."""
    if view == "scatter":
        return region_text(*parse_region(text))
    return zoom_text(*parse_zoom(text))


def _zoom_text(text: str | None, view: str) -> str | None:
    """A valid zoom of ``view``, else None (the zoom store only ever holds what the page wrote)."""
    try:
        return checked_zoom(text, view) if text else None
    except ValueError:
        return None


MAX_PINS = 4  # molecules side by side in the pinned strip, each in a WebGL context of its own


# A pin's pose: "id:c" shows the canonical pose, "id" (or "id:s") the stored one (frontend_assets/pins.js).
PIN_POSES = {"s": "stored", "c": "canonical"}


def pin_entry(text: str) -> tuple[str, str]:
    """(molecule id, pose "s" or "c") of one pin of a pins value: "12", "12:s" or "12:c"."""
    head, sep, tail = text.rpartition(":")
    return (head, tail) if sep and head and tail in PIN_POSES else (text, "s")


def pin_text(mol: str, pose: str) -> str:
    """The pins value's form of one pin: the id alone for the stored pose, unless the id itself ends as a pose
    would (then ":s" keeps it whole)."""
    if pose == "c" or pin_entry(mol)[0] != mol:
        return f"{mol}:{pose}"
    return mol


def split_pins(text: str | None) -> tuple[list[str], list[str]]:
    """(pins, warnings) of a pins value "id1,id2:c,...": blanks and repeated molecules dropped (the first pin of
    a molecule kept), at most :data:`MAX_PINS`, each as :func:`pin_text` writes it."""
    pins: list[str] = []
    seen: set[str] = set()
    for part in (text or "").split(","):
        if not part.strip():
            continue
        mol, pose = pin_entry(part.strip())
        if mol not in seen:
            seen.add(mol)
            pins.append(pin_text(mol, pose))
    if len(pins) > MAX_PINS:
        return pins[:MAX_PINS], [f"pins name {len(pins)} molecules; at most {MAX_PINS} are pinned, the first kept"]
    return pins, []


def pins_text(pins: list[str]) -> str | None:
    return ",".join(pins) or None


def _one_of(value: str | None, allowed: tuple[str, ...], default: str) -> str:
    """``value`` if allowed, else ``default``."""
    return value if value in allowed else default


def _sel_text(text: str | None) -> str | None:
    """A valid selection in its URL form, else None (the selection store only ever holds what the page wrote)."""
    try:
        return parse_selection(text).text() if text else None
    except ValueError:
        return None
