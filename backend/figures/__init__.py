"""The plotly figures that the dashboard and the Python library share: the orientation map in every mode,
the density map, the sphere, the angle histogram, the 3D viewer's scene specs, and the view state they take
(plus the library's own audit comparison, which needs the same freedom from Dash).

Below both ``orientscope.app`` and ``orientscope.notebook``, reading data only through services, and
importing no Dash (``lint-imports`` keeps it so), so a notebook draws the dashboard's own figures
without loading the dashboard.
"""
