"""Model audits side by side as a figure (``orientscope.compare_audits(...).figure()``): each audit's reliance
CI against the ±margin band, beside its rotation shift, so a fix that brings the reliance inside the margin
but leaves predictions moving shows as such. The table it draws is ``orientscope.services.audit_compare``'s.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots


def _error_bars(values: pd.Series, low: pd.Series, high: pd.Series) -> dict:
    return {
        "type": "data",
        "symmetric": False,
        "array": (high - values).fillna(0).tolist(),
        "arrayminus": (values - low).fillna(0).tolist(),
    }


def comparison_figure(table: pd.DataFrame):
    """The reliance (percent, with its CI and the ±margin band) and the rotation shift's 95th percentile (with
    its CI) and median of every row of :func:`comparison_table`, one colour per property."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("reliance on the pose [95 % CI]", "rotation shift"))
    for prop, rows in table.groupby("property", sort=False):
        unit = rows["unit"].iloc[0]
        in_unit = f" ({unit})" if unit else ""
        fig.add_trace(go.Scatter(
            x=rows["audit"], y=rows["reliance_percent"], mode="markers", name=f"{prop}: reliance",
            error_y=_error_bars(rows["reliance_percent"], rows["reliance_ci_low_percent"],
                                rows["reliance_ci_high_percent"]),
            customdata=rows[["tier"]], hovertemplate="%{x}: %{y:+.1f} % (%{customdata[0]})<extra></extra>",
        ), row=1, col=1)  # fmt: skip
        fig.add_trace(go.Scatter(
            x=rows["audit"], y=rows["shift_p95"], mode="markers", name=f"{prop}: shift 95th pct{in_unit}",
            error_y=_error_bars(rows["shift_p95"], rows["shift_p95_ci_low"], rows["shift_p95_ci_high"]),
            hovertemplate=f"%{{x}}: %{{y:.3g}} {unit}<extra></extra>",
        ), row=1, col=2)  # fmt: skip
        fig.add_trace(go.Scatter(
            x=rows["audit"], y=rows["shift_median"], mode="markers", marker={"symbol": "diamond-open"},
            name=f"{prop}: shift median{in_unit}", hovertemplate=f"%{{x}}: %{{y:.3g}} {unit}<extra></extra>",
        ), row=1, col=2)  # fmt: skip
    margins = table["margin"].dropna().unique()
    if len(margins) == 1:
        m = 100 * float(margins[0])
        fig.add_hrect(y0=-m, y1=m, fillcolor="#2ca02c", opacity=0.12, line_width=0, row=1, col=1)
    fig.update_yaxes(title_text="reliance (%)", zeroline=True, row=1, col=1)
    fig.update_yaxes(title_text="shift (property unit)", rangemode="tozero", row=1, col=2)
    fig.update_layout(height=380, margin={"l": 60, "r": 20, "t": 40, "b": 40}, legend={"orientation": "h"})
    return fig
