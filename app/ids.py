"""Every component id of the dashboard, in one place (layout, callbacks, first view and tests use these).

The same strings appear in ``frontend_assets/orientscope.js`` and the browser tests,
which read the page as a user's browser does.
"""

# location and stores
URL = "url"
MAP_STATE = "map-state"  # the view state the map draws (ViewState.map_state())
SELECTED = "selected"  # the selected molecule id
MAP_VIEWPORT = "map-viewport"  # the map region the browser shows: {x0, x1, y0, y1 Mollweide, width, height px}
MAP_ZOOM = "map-zoom"  # the flat map's zoom as the URL carries it ("x0,x1,y0,y1"), set by orientscope.js
MAP_ZOOM_DONE = "map-zoom-done"
MAP_SELECTION = "map-selection"  # the flat map's selection as the URL carries it ("box:..."), set by orientscope.js
MAP_DRAWN = "map-drawn"
SELECTED_RING = "selected-ring"
RING_DONE = "ring-done"
VIEWER_SPEC = "viewer-spec"
VIEWER_DONE = "viewer-done"
GROUP_SPEC = "group-spec"
GROUP_DONE = "group-done"
EXPORT_DONE = "export-done"
DOWNLOAD_REPORT = "download-report"
STATUS_POLL = "status-poll"

# header
DATASET = "dataset-select"
COPY_LINK = "copy-link"
COPY_STATUS = "copy-status"
UPLOAD_LINK = "upload-link"

# controls
VIEW_MODE = "view-mode"
AXES = "axes-select"
AXES_HINT = "axes-hint"
COLOR = "color-by"
GROUPING = "grouping"
GROUP_FILTER = "group-filter"
SMARTS = "smarts"
SMARTS_PROGRESS = "smarts-progress"  # a background SMARTS search's progress (app/smarts_progress.py)
SMARTS_ASK = "smarts-ask"
SMARTS_JOB = "smarts-job"
SMARTS_POLL = "smarts-poll"
SMARTS_DONE = "smarts-done"
EXPORT_PNG = "export-png"
EXPORT_SVG = "export-svg"
REPORT_BUTTON = "download-report-btn"

# panels
MESSAGES = "messages"
PROGRESS = "progress"
VERDICT = "verdict"
ANGLE_HISTOGRAM = "angle-histogram"
MAP_NOTES = "map-notes"
MAP = "orientation-map"  # the map's box: map_draw.js draws the plane views (map, density) in it
MAP_PAINT = "map-paint"  # the plane views' paint (app/plane_paint.py), drawn by a clientside callback
MAP_PAINT_DONE = "map-paint-done"
MAP_GRAPH = "orientation-graph"  # the sphere's and the scatter view's plotly graph, inside the map's box
MAP_GRAPH_BOX = "orientation-graph-box"
MAP_HINT = "map-hint"  # a short line under the map (a click with no molecule near it)
MOLECULE_PANEL = "molecule-panel"
MOLECULE_ID = "molecule-id"
MOLECULE_INFO = "molecule-info"
MOLECULE_VIEWER = "molecule-viewer"
MOLECULE_EXTRA = "molecule-extra"
# The pinned comparison (frontend_assets/pins.js): the pins "id1,id2:c,..." (":c": shown in the canonical pose) and the strip that shows them.
PINS = "pins"
PIN_BUTTON = "pin-molecule"
PIN_MESSAGE = "pin-message"
PIN_STRIP = "pin-strip"
PINS_DONE = "pins-done"
GROUPS_TABLE = "groups-table"
GROUPS_SUMMARY = "groups-summary"
GROUP_VIEWER = "group-viewer"
COMPARE_A = "compare-a"
COMPARE_B = "compare-b"
COMPARE_BODY = "compare-body"
COMPARE_PANEL_A = "compare-panel-a"
COMPARE_PANEL_B = "compare-panel-b"
SELECTION_PANEL = "selection-panel"  # the list of the selected molecules (app/selection_panel.py)
SELECTION_COUNT = "selection-count"
SELECTION_TABLE = "selection-table"
SELECTION_PREV = "selection-prev"
SELECTION_NEXT = "selection-next"
SELECTION_PAGE = "selection-page"
SELECTION_CSV = "selection-csv"
SELECTION_CLEAR = "selection-clear"
SCATTER_CONTROLS = "scatter-controls"  # the scatter view's controls (app/scatter_panel.py)
SCATTER_PROP = "scatter-prop"
SCATTER_AXIS = "scatter-axis"
SCATTER_COORD = "scatter-coord"
SCATTER_SCALE = "scatter-scale"
SCATTER_SCALE_HINT = "scatter-scale-hint"  # why the scale shown is not the one asked for
NEIGHBOUR = "neighbour"  # the "type" of the pattern-matched neighbour buttons
FRAME_NOTES = "frame-notes"  # under the map: the frames the verdict rests on, and why some are degenerate
# the first screen's downloads (app/downloads.py): the buttons' pattern "type", the job and its progress
DOWNLOAD = "download"
DOWNLOAD_STATUS = "download-status"
DOWNLOAD_JOB = "download-job"
DOWNLOAD_POLL = "download-poll"

# model audit
AUDIT_FILE = "audit-file"
AUDIT_DROP = "audit-drop-text"
AUDIT_NAME = "audit-name"
AUDIT_TOKEN = "audit-token"
AUDIT_SUBMIT = "audit-submit"
AUDIT_STATUS = "audit-status"
AUDIT_JOB = "audit-job"
AUDIT_POLL = "audit-poll"
AUDIT_DONE = "audit-done"
AUDIT_SELECT = "audit-select"
AUDIT_TABLE = "audit-table"
AUDIT_TEXT = "audit-text"

# Where each URL field of the view state is shown: field -> (component id, property).
CONTROL_OF = {
    "dataset": (DATASET, "value"),
    "color": (COLOR, "value"),
    "grouping": (GROUPING, "value"),
    "group": (GROUP_FILTER, "value"),
    "smarts": (SMARTS, "value"),
    "view": (VIEW_MODE, "value"),
    "axes": (AXES, "value"),
    "molecule": (SELECTED, "data"),
    "compare": (COMPARE_B, "value"),
    "zoom": (MAP_ZOOM, "data"),
    "pins": (PINS, "data"),
    "sel": (MAP_SELECTION, "data"),
    "prop": (SCATTER_PROP, "value"),
    "xaxis": (SCATTER_AXIS, "value"),
    "coord": (SCATTER_COORD, "value"),
    "yscale": (SCATTER_SCALE, "value"),
}
