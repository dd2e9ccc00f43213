"""The registered statistics as the API, the dashboard and the Python API see them.

The registry lives in ``science/statistics_registry.py``; the layers above services read it, and the report keys
they need, through this module. The API builds the statistics part of its summary schema from
:func:`report_fields`.
"""

from __future__ import annotations

from orientscope.science.classifiers import CLASSIFIERS_KEY
from orientscope.science.regression import REGRESSION_KEY
from orientscope.science.so3_stats import (
    ANGLE_HISTOGRAM_KEY,
    KL_KEY,
    REFERENCE_KEY,
    REFERENCE_MOLECULE_KEY,
)
from orientscope.science.statistics_registry import TABLES, report_fields

__all__ = [
    "ANGLE_HISTOGRAM_KEY",
    "CLASSIFIERS_KEY",
    "KL_KEY",
    "REFERENCE_KEY",
    "REFERENCE_MOLECULE_KEY",
    "REGRESSION_KEY",
    "report_fields",
    "table_keys",
]


def table_keys() -> tuple[str, ...]:
    """The report's tables, in reading order (``services.report_format.report_sections`` gives one per key)."""
    return tuple(t.key for t in TABLES)
