"""Callbacks registered through `offloaded` run in worker threads, so slow ones
overlap instead of queueing on the event loop (real uvicorn, real HTTP)."""

import asyncio
import threading
import time

import httpx
from dash import Dash, Input, Output, callback_context, dcc, html
from fastapi import FastAPI

from app.offload import offloaded
from tests.api.conftest import ServerThread


def test_slow_callbacks_overlap_and_keep_callback_context():
    server = FastAPI()

    @server.get("/ping")
    def ping():
        return {"ok": True}

    app = Dash(__name__, server=server, backend="fastapi")
    app.layout = html.Div([dcc.Input(id="i", value="a"), html.Div(id="o")])
    callback = offloaded(app.callback)
    running, peak, lock = [0], [0], threading.Lock()

    @callback(Output("o", "children"), Input("i", "value"))
    def slow(value):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.4)
        with lock:
            running[0] -= 1
        return f"{value}|{callback_context.triggered_id}|{threading.current_thread() is threading.main_thread()}"

    body = {
        "output": "o.children",
        "outputs": {"id": "o", "property": "children"},
        "inputs": [{"id": "i", "property": "value", "value": "zz"}],
        "changedPropIds": ["i.value"],
        "state": [],
    }

    async def burst(url):
        async with httpx.AsyncClient(base_url=url, timeout=30) as c:
            calls = [c.post("/_dash-update-component", json=body) for _ in range(4)]
            return await asyncio.gather(*calls, c.get("/ping"))

    with ServerThread(server) as srv:
        responses = asyncio.run(burst(srv.url))
    assert all(r.status_code == 200 for r in responses)
    assert responses[0].json()["response"]["o"]["children"] == "zz|i|False"
    # On the event loop the callbacks would run one at a time.
    assert peak[0] >= 2
