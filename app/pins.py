"""The pinned comparison: up to four molecules side by side under the map, each in one viewer that
switches between its stored and its canonical pose.

The pins are a URL field (``pins``, :mod:`orientscope.figures.state`) whose control is the ``pins`` store;
``frontend_assets/pins.js`` pins the molecule the panel shows, refuses a fifth, and draws the strip from
the molecule panel's viewer spec. Nothing here reads data: the strip asks the panel route per pin.
"""

from __future__ import annotations

import dash
from dash import Input, Output, State, dcc, html

from orientscope.app import ids


def pin_controls() -> html.Div:
    """The molecule panel's "Pin" button and what it answers (e.g. that four are pinned already)."""
    return html.Div(
        [
            html.Button("Pin", id=ids.PIN_BUTTON, className="pin-button", title="pin this molecule beside the others"),
            html.Span(id=ids.PIN_MESSAGE, className="note pin-message"),
        ],
        className="pin-controls",
    )


def pin_strip() -> list:
    """The pins' store, its drawn hook and the strip of pinned viewers (empty and hidden without pins)."""
    return [
        dcc.Store(id=ids.PINS),
        dcc.Store(id=ids.PINS_DONE),
        html.Div(id=ids.PIN_STRIP, className="pin-strip", hidden=True),
    ]


def register(app: dash.Dash) -> None:
    """The strip's clientside callbacks (frontend_assets/pins.js)."""
    app.clientside_callback(
        dash.ClientsideFunction("pins", "pin"),
        Output(ids.PINS, "data", allow_duplicate=True),
        Output(ids.PIN_MESSAGE, "children"),
        Input(ids.PIN_BUTTON, "n_clicks"),
        State(ids.SELECTED, "data"),
        State(ids.PINS, "data"),
        prevent_initial_call=True,
    )
    app.clientside_callback(  # also on the page's first load: a URL with pins shows them
        dash.ClientsideFunction("pins", "renderPins"),
        Output(ids.PINS_DONE, "data"),
        Input(ids.PINS, "data"),
        Input(ids.MAP_STATE, "data"),
        State(ids.PIN_STRIP, "id"),
    )
