"""A one-input, one-output Dash app on FastAPI, and the request a browser sends to its callback."""

from dash import Dash, dcc, html
from fastapi import FastAPI


def echo_app(server: FastAPI) -> Dash:
    """Dash on ``server`` with an input ``i`` and an output ``o`` (register the callback yourself)."""
    app = Dash(__name__, server=server, backend="fastapi")
    app.layout = html.Div([dcc.Input(id="i", value="a"), html.Div(id="o")])
    return app


def echo_request(value) -> dict:
    """The browser's ``/_dash-update-component`` body for ``i.value`` → ``o.children``."""
    return {
        "output": "o.children",
        "outputs": {"id": "o", "property": "children"},
        "inputs": [{"id": "i", "property": "value", "value": value}],
        "changedPropIds": ["i.value"],
        "state": [],
    }
