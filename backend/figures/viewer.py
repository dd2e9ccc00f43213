"""3D viewer specs as plain data: Python decides what to draw, 3Dmol.js (frontend_assets) draws it.

A spec is JSON: ``{"molecule": id, "rows": r, "cols": c, "linked": bool, "scenes": [scene, ...]}``
where each scene is ``{"title", "xyz", "arrows": [{"start", "end", "color", "label"}]}`` with
coordinates in ångström. ``frontend_assets/orientscope.js`` renders it in one WebGL
context (a 3Dmol viewer grid) and links the rotation of all scenes.
"""

from __future__ import annotations

import numpy as np

from orientscope.core.palette import AXIS_COLORS, LAB_FRAME
from orientscope.services.molecules import xyz_text as _xyz_text

# The lab frame in one neutral colour that no data series uses: the principal axes own blue,
# orange and green everywhere in the app, and vermillion is the SMARTS highlight.
# One-letter labels: the caption says which frame they are ("lab x/y/z", "principal axes 1/2/3"), and a
# short label fits beside small molecules without running off the viewer or over an atom.
LAB_AXES = (
    ("x", (1.0, 0.0, 0.0), LAB_FRAME),
    ("y", (0.0, 1.0, 0.0), LAB_FRAME),
    ("z", (0.0, 0.0, 1.0), LAB_FRAME),
)
PRINCIPAL_COLORS = [AXIS_COLORS[a] for a in (1, 2, 3)]
ARROW_BEYOND = 0.5  # arrows reach this far (Å) past the farthest atom's centre, clear of its sphere
LABEL_BEYOND = 0.3  # labels sit this far (Å) past the arrow tip


def xyz_text(elements: list[str], positions_angstrom, comment: str = "") -> str:
    # 4 decimals (1e-4 Å) are plenty on screen and keep the callback payload small.
    return _xyz_text(elements, positions_angstrom, comment, decimals=4)


def _arrows(origin, directions, length: float) -> list[dict]:
    """Arrows from ``origin`` (Å) along unit ``directions``, longer than the molecule so tips and labels clear it."""
    origin = np.asarray(origin, np.float64)
    return [
        {
            "start": origin.tolist(),
            "end": (origin + length * np.asarray(vec)).tolist(),
            "label_at": (origin + (length + LABEL_BEYOND) * np.asarray(vec)).tolist(),
            "color": color,
            "label": label,
        }
        for label, vec, color in directions
    ]


def _extent(positions) -> float:
    """The arrows' length (Å): the farthest atom from the centroid, plus :data:`ARROW_BEYOND`."""
    pos = np.asarray(positions, np.float64).reshape(-1, 3)
    return float(np.max(np.linalg.norm(pos - pos.mean(axis=0), axis=1), initial=0.0)) + ARROW_BEYOND


def molecule_scenes(detail: dict) -> list[dict]:
    """Stored pose with lab axes, and canonical pose with its principal axes (= lab axes of that frame)."""
    elements = detail["elements"]
    stored = np.asarray(detail["positions"], np.float64)
    canonical = np.asarray(detail["canonical_positions"], np.float64)
    principal = [(str(a + 1), row, PRINCIPAL_COLORS[a]) for a, row in enumerate(np.eye(3))]
    return [
        {
            "title": f"stored pose · lab x/y/z · {detail['id']}",
            "xyz": xyz_text(elements, stored, str(detail["id"])),
            "arrows": _arrows(stored.mean(axis=0), LAB_AXES, _extent(stored)),
        },
        {
            "title": "canonical pose · principal axes 1/2/3",
            "xyz": xyz_text(elements, canonical, str(detail["id"])),
            "arrows": _arrows(np.zeros(3), principal, _extent(canonical)),
        },
    ]


def viewer_spec(scenes: list[dict], molecule: str | None = None, cols: int | None = None, linked: bool = True) -> dict:
    """Grid layout around a list of scenes (one WebGL context)."""
    n = max(len(scenes), 1)
    cols = cols or min(n, 4)
    rows = -(-n // cols)
    return {"molecule": molecule, "rows": rows, "cols": cols, "linked": linked, "scenes": scenes}


def molecule_viewer_spec(detail: dict) -> dict:
    """The molecule panel's viewer: the stored and the canonical pose side by side, rotations linked."""
    return viewer_spec(molecule_scenes(detail), molecule=str(detail["id"]), cols=2)


def group_scenes(details: list[dict]) -> list[dict]:
    """Members of a group, each in its canonical pose with the principal axes, captioned by formula and id."""
    out = []
    for d in details:
        canonical = np.asarray(d["canonical_positions"], np.float64)
        principal = [(str(a + 1), row, PRINCIPAL_COLORS[a]) for a, row in enumerate(np.eye(3))]
        name = d.get("label") or d.get("formula")
        out.append(
            {
                "title": f"{name} · {d['id']}" if name else str(d["id"]),
                "molecule": str(d["id"]),  # a click on the cell opens it (frontend_assets/group_grid.js)
                "xyz": xyz_text(d["elements"], canonical, str(d["id"])),
                "arrows": _arrows(np.zeros(3), principal, _extent(canonical)),
            }
        )
    return out
