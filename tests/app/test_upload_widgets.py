"""The drop zone and its "Chosen" label, shared by the upload page and the model audit."""

import re
from pathlib import Path

import dash
from dash import html

from orientscope.app.upload_widgets import MAX_BROWSER_UPLOAD_BYTES, drop_zone, register_chosen_label

ASSETS = Path(__file__).resolve().parents[2] / "frontend_assets" / "orientscope.js"


def _exported() -> set[str]:
    """Names the asset puts in ``window.dash_clientside.orientscope``."""
    block = re.search(r"orientscope:\s*\{(.*?)\}", ASSETS.read_text(), re.S).group(1)
    return set(re.findall(r"(\w+)\s*:", block))


def test_drop_zone_takes_one_file_up_to_the_browser_limit():
    zone = drop_zone(["Drop here"], "f", "f-text")
    assert zone.id == "f" and zone.multiple is False and zone.max_size == MAX_BROWSER_UPLOAD_BYTES
    assert isinstance(zone.children, html.Div) and zone.children.id == "f-text"


def test_the_chosen_label_is_a_function_the_asset_exports():
    app = dash.Dash(__name__)
    app.layout = html.Div([drop_zone(["Drop here"], "f", "f-text")])
    register_chosen_label(app, "f", "f-text")
    assert len(app._callback_list) == 1
    (callback,) = app._callback_list
    assert callback["output"] == "f-text.children"
    assert "chosenFile" in callback["clientside_function"]["function_name"]
    assert {"chosenFile", "pollRecord", "postUpload"} <= _exported()
