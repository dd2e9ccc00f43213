"""Stateless canonicalisation of one user-supplied molecule (same code as the pipeline)."""

from __future__ import annotations

import math

import numpy as np

from orientscope.core.elements import MAX_Z, symbol_to_z
from orientscope.core.errors import DatasetError
from orientscope.core.limits import LimitExceeded, Limits
from orientscope.loaders.xyz import read_xyz_text
from orientscope.science.frames import FRAME_METHODS, SIGN_RULES, frame_of_molecule
from orientscope.services.errors import InvalidInput

# Default atom limit of one canonicalisation request (ORIENTSCOPE_MAX_ATOMS_PER_MOLECULE overrides it).
MAX_ATOMS = Limits().max_atoms_per_molecule


def _body(field: str, *index) -> tuple:
    return ("body", field, *index)


def _element(symbol, i: int) -> int:
    if isinstance(symbol, bool):
        raise InvalidInput(f"elements[{i}]: {symbol!r} is not an element symbol", _body("elements", i))
    if isinstance(symbol, int):
        if not 1 <= symbol <= MAX_Z:
            raise InvalidInput(f"elements[{i}]: atomic number {symbol} is outside 1..{MAX_Z}", _body("elements", i))
        return symbol
    try:
        return symbol_to_z(symbol)
    except ValueError:
        raise InvalidInput(f"elements[{i}]: unknown element symbol {symbol!r}", _body("elements", i)) from None


def _check_size(n: int, field: str) -> None:
    limit = Limits.from_env().max_atoms_per_molecule
    if n > limit:
        raise InvalidInput(f"{field}: {n} atoms; at most {limit} atoms per molecule are accepted", _body(field))


def parse_molecule(elements=None, positions=None, xyz: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Atomic numbers (n,) and positions (n, 3) Å from {elements, positions} or {xyz}; InvalidInput naming the field."""
    if xyz is not None and (elements is not None or positions is not None):
        raise InvalidInput("give either elements and positions, or xyz, not both", _body("xyz"))
    if xyz is not None:
        try:
            z, pos = read_xyz_text(xyz, Limits.from_env())
        except (DatasetError, LimitExceeded) as exc:
            raise InvalidInput(str(exc), _body("xyz")) from None
        elements, positions = z.tolist(), pos.tolist()
        where = "xyz"
    else:
        if elements is None or positions is None:
            missing = "elements" if elements is None else "positions"
            raise InvalidInput(f"{missing} is required (or give the molecule as xyz text)", _body(missing))
        where = "positions"
    if len(elements) == 0:
        raise InvalidInput("elements: the molecule needs at least one atom", _body("elements"))
    _check_size(len(elements), "elements")
    if len(positions) != len(elements):
        raise InvalidInput(f"{len(elements)} elements but {len(positions)} positions", _body("positions"))
    z = np.array([_element(s, i) for i, s in enumerate(elements)], dtype=np.int16)
    pos = np.empty((len(positions), 3), dtype=np.float64)
    for i, p in enumerate(positions):
        if len(p) != 3:
            raise InvalidInput(f"{where}[{i}]: expected 3 coordinates, got {len(p)}", _body(where, i))
        for k, v in enumerate(p):
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise InvalidInput(f"{where}[{i}][{k}]: {v!r} is not a finite number", _body(where, i, k))
        pos[i] = p
    if np.abs(pos).max() > 1e6:
        raise InvalidInput(f"{where}: coordinates beyond 1e6 Å are not accepted", _body(where))
    return z, pos


def canonicalize(
    elements=None,
    positions=None,
    xyz: str | None = None,
    method: str = "pca",
    sign_rule: str = "max",
    mass_weighted: bool | None = None,
) -> dict:
    """Canonical frame of one molecule: rotation (rows = axes), quaternion (x,y,z,w), eigenvalues, canonical positions."""
    if method not in FRAME_METHODS:
        raise InvalidInput(f"unknown method {method!r}; expected one of {FRAME_METHODS}", _body("method"))
    if sign_rule not in SIGN_RULES:
        raise InvalidInput(f"unknown sign_rule {sign_rule!r}; expected one of {SIGN_RULES}", _body("sign_rule"))
    if mass_weighted is True and method == "pca":
        method = "pca-mass"
    elif mass_weighted is False and method != "pca":
        raise InvalidInput(
            f"method {method!r} is mass-weighted; mass_weighted=false needs method 'pca'", _body("mass_weighted")
        )
    z, pos = parse_molecule(elements, positions, xyz)
    frames, canonical = frame_of_molecule(z, pos, method=method, sign_rule=sign_rule)
    return {
        "method": method,
        "sign_rule": sign_rule,
        "n_atoms": len(z),
        "rotation": frames.rotations[0].tolist(),
        "quaternion": frames.quaternions[0].tolist(),
        "eigenvalues": frames.eigenvalues[0].tolist(),
        "centroid": frames.centroids[0].tolist(),
        "canonical_positions": canonical.tolist(),
        "degenerate": bool(frames.degenerate[0]),
        "degenerate_reason": str(frames.reasons[0]) or None,
    }
