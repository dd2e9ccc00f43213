"""Every colour the map, the dashboard and the exports draw with, in one place, each meaning one thing.

In the core layer so that the services' server-side map image and the dashboard's figures
colour a view identically (and can share one resolved view).

Okabe & Ito (2008) colour-blind-safe hues. The three principal axes own blue,
orange and green; the SMARTS highlight owns vermillion; the lab frame of the
3D viewer is drawn in neutral dark grey (a colour no data series uses), the
selected molecule's ring in black, the reference orientation as yellow stars.
``frontend_assets/style.css`` repeats the ring and verdict colours (CSS cannot
import Python); tests/app/test_palette.py keeps them equal.
"""

from __future__ import annotations

OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]

AXIS_COLORS = {1: "#0072B2", 2: "#E69F00", 3: "#009E73"}  # principal axes, map and 3D viewer alike
HIGHLIGHT = "#D55E00"  # SMARTS matches
SELECTION_RING = "#000000"  # the selected molecule on the map
REFERENCE_STAR = "#F0E442"  # the reference orientation (yellow star, black edge)
LAB_FRAME = "#5A5A5A"  # lab x/y/z arrows of the stored pose
OTHER_GREY = "#BBBBBB"  # values that are missing
UNGROUPED_GREY = "#DDDDDD"  # molecules in no group (e.g. unclustered): muted, never a group colour
OUTLINE = "#888888"
GRATICULE = "#DDDDDD"
# Group colours: none of the axis-free hues that mean something else (vermillion, black, yellow).
GROUP_COLORS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#8C6D31"]
VERDICT_ALIGNED = "#9B1C1C"
VERDICT_NOT_ALIGNED = "#2F5D2F"
CONTINUOUS_SCALE = "Cividis"  # perceptually uniform and colour-blind safe
# Its stops (Nuñez et al. 2018), evenly spaced, as plotly.colors.sequential.Cividis: the server's map
# image interpolates them itself; tests/app/test_palette.py keeps them equal to plotly's.
CIVIDIS = ("#00224e", "#123570", "#3b496c", "#575d6d", "#707173", "#8a8678", "#a59c74", "#c3b369", "#e1cc55", "#fee838")
DATASET_SERIES = "#332288"
CONTROL_SERIES = "#7F7F7F"
