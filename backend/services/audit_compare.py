"""Model audits side by side (``orientscope.compare_audits``, ``orientscope.sweep``): the table.

One row per (audit, property, split): the reliance with its CI, the rotation shift (median and 95th
percentile with its CI), the MAE on stored and on rotated poses and the tier. Its figure is
``orientscope.figures.audits.comparison_figure``.
"""

from __future__ import annotations

import pandas as pd

TABLE_COLUMNS = (
    "audit", "property", "split", "n", "reliance_percent", "reliance_ci_low_percent", "reliance_ci_high_percent",
    "shift_median",
    "shift_p95", "shift_p95_ci_low", "shift_p95_ci_high", "mae_stored", "mae_rotated", "unit", "tier", "margin",
)  # fmt: skip


def comparison_table(records: list[dict], labels: list[str], split: str | None = None) -> pd.DataFrame:
    """One row per (audit, property) of ``records`` (audit records, as the REST API serves them), on ``split``
    (None: all audited molecules)."""
    rows = []
    for label, record in zip(labels, records, strict=True):
        for p in record["properties"]:
            if p.get("split") != split:
                continue
            ci = [None if x is None else 100.0 * x for x in (p.get("ci95") or {}).get("reliance") or [None, None]]
            reliance = p.get("reliance")
            shift_ci = p.get("shift_p95_ci95") or [None, None]
            rows.append({
                "audit": label, "property": p["property"], "split": p.get("split") or "all", "n": p["n"],
                "reliance_percent": None if reliance is None else 100.0 * reliance,
                "reliance_ci_low_percent": ci[0], "reliance_ci_high_percent": ci[1],
                "shift_median": p.get("shift_median"), "shift_p95": p.get("shift_p95"),
                "shift_p95_ci_low": shift_ci[0], "shift_p95_ci_high": shift_ci[1],
                "mae_stored": p.get("mae_stored"), "mae_rotated": p.get("mae_rotated"), "unit": p.get("unit", ""),
                "tier": p["verdict"]["code"], "margin": p["verdict"].get("margin"),
            })  # fmt: skip
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
