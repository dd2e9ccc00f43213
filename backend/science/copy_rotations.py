"""The rotations of rotated copies (exports, model audits, training augmentation): one rule, two purposes.

Copy ``k`` of a molecule is turned about its centroid by a Haar-uniform rotation drawn by the
counter-based generator (:mod:`orientscope.science.counter_rng`) from (seed, stream
``"<purpose>:copy<k>"``, :func:`~orientscope.science.counter_rng.id_counters` of the molecule's id).
The rotation is therefore a pure function of (purpose, seed, copy, molecule id): the same in any subset,
order or shard cut of the set.

The two purposes are different streams, so at any one seed the copies a model is audited on
(``audit``) are never the copies it was trained on (``augment``, the default of ``export`` and of
``orientscope.rotated_copies``).

Rule 1 (before rotation rule 2) drew copy ``k`` from (seed, ``"export:copy<k>"``, the molecule's row),
one stream for every use: an audit at seed 0 scored the very poses a de-biased export at seed 0 trained on,
and a molecule's copy changed with the rows of a subset. Records made by rule 1 name it (:data:`RULES`).
"""

from __future__ import annotations

import numpy as np

from orientscope.core.settings import check_choice
from orientscope.science.counter_rng import haar_rotations

PURPOSES = ("audit", "augment")
AUDIT, AUGMENT = PURPOSES
ROTATION_RULE_VERSION = 2
ROTATION_RULE = "counter-based Haar rotation of (seed, '<purpose>:copy<k>', BLAKE2b-64 of the molecule id)"
# Every rule ever recorded as ``rotation_rule``, by version: an old record names the one that made it.
RULES = {1: "counter-based Haar rotation of (seed, 'export:copy<k>', molecule index)", 2: ROTATION_RULE}


def check_purpose(purpose: str) -> str:
    return check_choice(purpose, PURPOSES, "rotation purpose")


def copy_rotations(counters: np.ndarray, seed: int, copy: int = 0, purpose: str = AUGMENT) -> np.ndarray:
    """(n, 3, 3) rotations of copy ``copy`` for the molecules whose ``id_counters`` are ``counters`` (n,) uint64."""
    check_purpose(purpose)
    counters = np.asarray(counters)
    if counters.dtype != np.uint64:
        raise TypeError(f"copy_rotations takes id_counters(ids) (uint64), not {counters.dtype} values")
    return haar_rotations(seed, f"{purpose}:copy{int(copy)}", counters)


def rule_version(rule: str | None) -> int | None:
    """The version of a recorded ``rotation_rule`` text (None when unknown or absent)."""
    return next((v for v, text in RULES.items() if text == rule), None)
