"""A selection drawn on the flat map, as the URL carries it (``sel=``) and the REST routes take it.

Two shapes, in Mollweide units (the map spans |x| <= 2√2, |y| <= √2), four decimals (a hundredth of a
pixel of the whole map):

- ``box:x0,x1,y0,y1``, a rectangle (edges included);
- ``lasso:x1,y1,x2,y2,...``, a polygon of 3 to :data:`MAX_VERTICES` vertices (closed implicitly).
"""

from __future__ import annotations

from dataclasses import dataclass

SHAPES = ("box", "lasso")
MAX_VERTICES = 200  # a lasso the browser thins to fit a URL; more would not fit one
MAX_COORDINATE = 6.0  # farther out than the whole map selects nothing more
DECIMALS = 4


@dataclass(frozen=True)
class Selection:
    """kind : "box" | "lasso"; xs, ys : the box's (x0, x1), (y0, y1) or the lasso's vertices, Mollweide units."""

    kind: str
    xs: tuple[float, ...]
    ys: tuple[float, ...]

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """(x0, x1, y0, y1) of the shape."""
        return min(self.xs), max(self.xs), min(self.ys), max(self.ys)

    def text(self) -> str:
        """The URL's form of this selection (:func:`parse_selection` reads it back)."""
        if self.kind == "box":
            values = (*self.xs, *self.ys)
        else:
            values = tuple(v for xy in zip(self.xs, self.ys, strict=True) for v in xy)
        return f"{self.kind}:" + ",".join(f"{v:.{DECIMALS}f}" for v in values)


def parse_selection(text: str) -> Selection:
    """The selection of a URL's ``sel`` text; ValueError naming what is wrong and what is accepted."""
    kind, sep, rest = text.partition(":")
    if not sep or kind not in SHAPES:
        raise ValueError(f"selection {text[:40]!r} must start with one of {', '.join(s + ':' for s in SHAPES)}")
    try:
        values = [float(v) for v in rest.split(",")]
    except ValueError:
        raise ValueError(f"selection {text[:40]!r}: expected comma-separated numbers after {kind}:") from None
    if not all(abs(v) <= MAX_COORDINATE for v in values):  # also NaN and inf
        raise ValueError(f"selection {text[:40]!r}: coordinates must lie within ±{MAX_COORDINATE:g}")
    if kind == "box":
        if len(values) != 4:
            raise ValueError(f"selection {text[:40]!r}: a box is four numbers x0,x1,y0,y1")
        x0, x1, y0, y1 = values
        return Selection("box", (min(x0, x1), max(x0, x1)), (min(y0, y1), max(y0, y1)))
    if len(values) % 2 or not 3 <= len(values) // 2 <= MAX_VERTICES:
        raise ValueError(f"selection {text[:40]!r}: a lasso is 3 to {MAX_VERTICES} x,y pairs")
    return Selection("lasso", tuple(values[0::2]), tuple(values[1::2]))
