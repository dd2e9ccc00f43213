"""The one plotly internal the figures use (the Dash tricks are ``orientscope.app.compat``, above this layer).

The trick says what it saves, measured on full-QM9-sized data (``python -m tests.bench.bench_compat``);
``tests/app/test_compat.py`` holds its canary and greps the tree so that no private plotly name
appears outside the compat modules. ``pyproject.toml`` pins plotly to the minor version (``PINNED``).
"""

from __future__ import annotations

import plotly.graph_objects as go

# The minor version the trick here was written and measured against (pyproject.toml pins it).
PINNED = {"plotly": "7.1"}


# ----------------------------------------------------------------- figures without validation
# ``go.Figure(..., _validate=False)`` skips plotly's per-property validation of the figure's
# traces and layout. Measured: the density figure (144 x 72 grid; density view, compare, report)
# builds in 2.8 ms against 16.1 ms validated; a full-QM9 map figure in 2.6 ms against 20.0 ms.


def unvalidated_figure(data=None, layout=None, **kwargs) -> go.Figure:
    """``go.Figure(data, layout, ...)`` built without plotly's property validation."""
    return go.Figure(data, layout=layout, _validate=False, **kwargs)
