"""Callback answers: parsed exactly as plotly's encoding, safe inside HTML, and slashes left as they are."""

import json
import math

import httpx
import numpy as np
from dash import Input, Output, dcc, html
from fastapi import FastAPI
from plotly.io.json import to_json_plotly

from app import callback_json
from app.callback_json import answer_json
from tests.api.conftest import ServerThread
from tests.app.echo_app import echo_app, echo_request

VALUES = [
    {"bdata": "AAAA/+//AAA=", "dtype": "f4", "shape": "3"},
    {"x": np.arange(5, dtype=np.float32), "y": np.array([1.5, np.nan]), "n": np.int64(7)},
    {"title": "</script><script>alert(1)</script> & <b>bold</b>", "sep": "a\u2028b\u2029c", "é": "ünïcode ∞"},
    {"nan": math.nan, "inf": [math.inf, -math.inf], 3: "int key", "nested": [[1, 2], {"a": None}]},
    html.Div([html.B("a</b>"), dcc.Markdown("x/y")], id="d"),  # components: plotly's own path
]


def test_answers_parse_like_plotlys_and_cannot_close_a_script_element():
    for value in VALUES:
        text = answer_json(value)
        assert json.loads(text) == json.loads(to_json_plotly(value))
        for unsafe in ("<", ">", "\u2028", "\u2029"):
            assert unsafe not in text


def test_slashes_stay_as_they_are():
    text = answer_json({"bdata": "AAAA/+//AAA=", "url": "a/b"})
    assert "AAAA/+//AAA=" in text and "a/b" in text
    assert "\\u002f" in to_json_plotly({"url": "a/b"})  # what plotly's encoder would send


def test_installed_encoder_answers_real_callbacks():
    server = FastAPI()
    app = echo_app(server)

    @app.callback(Output("o", "children"), Input("i", "value"))
    def echo(value):
        return f"{value}/</script>"

    callback_json.install()
    body = echo_request("x")
    with ServerThread(server) as srv:
        r = httpx.post(f"{srv.url}/_dash-update-component", json=body, timeout=30)
    assert r.status_code == 200
    assert "x/\\u003c/script\\u003e" in r.text
    assert r.json()["response"]["o"]["children"] == "x/</script>"
