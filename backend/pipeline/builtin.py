"""Datasets that OrientScope can materialise by itself (no upload needed)."""

from __future__ import annotations

from collections.abc import Callable

from orientscope.core.dataset import MoleculeSet
from orientscope.loaders.qm9 import load_qm9

BUILTIN: dict[str, tuple[str, str, Callable[[], MoleculeSet]]] = {
    "qm9": ("QM9", "qm9pack (PyPI): original QM9 B3LYP/6-31G(2df,p) geometries", load_qm9),
}
