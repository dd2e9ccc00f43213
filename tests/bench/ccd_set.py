"""A real-chemistry set for the benchmarks: components of the wwPDB Chemical Component Dictionary.

The dictionary ships inside the PyPI wheel ``biotite`` (``biotite/structure/info/components.bcif``;
install the ``ccd`` extra). Each component is taken in its ideal coordinates, which chemistry
programs wrote in a pose of their choosing: the set is aligned, as the real datasets are. Ions,
metal complexes, linear molecules, symmetric tops and ligands of up to ~400 atoms are all there.

The arrays are read in bulk from the dictionary's atom table (seconds, not the minutes of one
``biotite.structure.info.residue`` call per component) and kept in a cache file.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from orientscope.core.elements import symbol_to_z

CACHE = Path(os.environ.get("ORIENTSCOPE_BENCH_CACHE", Path.home() / ".cache" / "orientscope-bench")) / "ccd.npz"
MAX_ATOMS = 400


def load_ccd(cache: Path = CACHE, max_atoms: int = MAX_ATOMS) -> dict:
    """``{"ids", "z", "pos", "offsets"}`` of every component with ideal coordinates for all its atoms (and
    recognised elements), at most ``max_atoms`` atoms; cached as an npz file."""
    if cache.is_file():
        with np.load(cache) as data:
            return {k: data[k] for k in data.files}
    from biotite.structure.info.ccd import get_ccd  # the optional `ccd` extra

    atoms = get_ccd()["chem_comp_atom"]
    comp = atoms["comp_id"].as_array(str)
    symbols = atoms["type_symbol"].as_array(str)
    xyz = np.column_stack(
        [atoms[f"pdbx_model_Cartn_{c}_ideal"].as_array(np.float64, masked_value=np.nan) for c in "xyz"]
    )
    starts = np.flatnonzero(np.r_[True, comp[1:] != comp[:-1]])
    bounds = np.r_[starts, len(comp)]
    z_of = {}
    keep_ids, zs, poss = [], [], []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        if b - a > max_atoms or np.isnan(xyz[a:b]).any():
            continue
        try:
            z = [z_of.setdefault(s, symbol_to_z(s)) for s in symbols[a:b]]
        except (KeyError, ValueError):  # an unknown element (e.g. "X"): not a molecule we can weigh
            continue
        keep_ids.append(comp[a])
        zs.append(z)
        poss.append(xyz[a:b])
    out = {
        "ids": np.array(keep_ids),
        "z": np.concatenate(zs).astype(np.int16),
        "pos": np.concatenate(poss),
        "offsets": np.r_[0, np.cumsum([len(z) for z in zs])].astype(np.int64),
    }
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, **out)
    return out
