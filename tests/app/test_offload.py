"""Callbacks registered through `guarded`, on a server with `dispatch_in_threads`, run and
are encoded in worker threads, so slow ones overlap instead of queueing on the event loop
(real uvicorn, real HTTP)."""

import asyncio
import random
import threading

import httpx
import pytest
from dash import Input, Output, callback_context
from fastapi import FastAPI

from orientscope.app.compat import dispatch_in_threads, finish_without_loop
from orientscope.app.offload import guarded
from tests.api.conftest import ServerThread
from tests.app.echo_app import echo_app, echo_request


def test_slow_callbacks_overlap_and_keep_callback_context():
    server = FastAPI()

    loop_thread = []

    @server.get("/ping")
    async def ping():
        loop_thread.append(threading.get_ident())
        return {"ok": True}

    app = echo_app(server)
    callback = guarded(app.callback)
    # Two callbacks at a time must be running to pass this barrier: on the event loop, one at a time, each
    # would wait alone until the (generous) timeout broke it.
    together, met = threading.Barrier(2, timeout=60), []

    encoded_in = []

    class Answer:  # Dash's JSON encoder asks it for its value: records where the encoding runs
        def __init__(self, text):
            self.text = text

        def to_plotly_json(self):
            encoded_in.append(threading.get_ident())
            return self.text

    @callback(Output("o", "children"), Input("i", "value"))
    def slow(value):
        try:
            together.wait()
            met.append(True)
        except threading.BrokenBarrierError:
            met.append(False)
        return Answer(f"{value}|{callback_context.triggered_id}|{threading.get_ident()}")

    body = echo_request("zz")

    async def burst(url):
        async with httpx.AsyncClient(base_url=url, timeout=30) as c:
            calls = [c.post("/_dash-update-component", json=body) for _ in range(4)]
            return await asyncio.gather(*calls, c.get("/ping"))

    dispatch_in_threads(server)
    with ServerThread(server) as srv:
        responses = asyncio.run(burst(srv.url))
    assert all(r.status_code == 200 for r in responses)
    value, triggered, ran_in = responses[0].json()["response"]["o"]["children"].split("|")
    assert (value, triggered) == ("zz", "i")
    # Neither the callback nor the encoding of its answer ran on the event loop.
    assert int(ran_in) != loop_thread[0]
    assert len(encoded_in) == 4 and loop_thread[0] not in encoded_in
    # Each of the four callbacks met another one running at the same time.
    assert met == [True] * 4


def test_dispatch_in_threads_needs_dash_callback_route():
    with pytest.raises(RuntimeError, match="no callback route"):
        dispatch_in_threads(FastAPI())


def test_finish_without_loop():
    async def plain():
        return 7

    async def suspends():
        await asyncio.sleep(0)

    assert finish_without_loop(plain()) == 7
    with pytest.raises(RuntimeError, match="awaited"):
        finish_without_loop(suspends())


JUNK = [None, 1, -1, 1e308, "x", "", [], {}, [1, "a"], {"a": 1}, True, "../../etc", "qm9", {"dataset": "qm9", "color": 5},
        {"dataset": 7}, {"points": [{}]}, {"points": "x"}, {"points": [{"curveNumber": "a", "pointNumber": None}]}]  # fmt: skip


def _callback_bodies(deps: list[dict], rng: random.Random, trials: int):
    """Well-formed callback envelopes for every registered callback, carrying values the page never sends."""

    def target(spec: str) -> dict:
        component, _, prop = spec.rpartition(".")
        return {"id": component, "property": prop.split("@")[0]}

    for dep in deps:
        if dep.get("clientside_function"):
            continue
        out = dep["output"]
        outputs = [target(s) for s in out[2:-2].split("...")] if out.startswith("..") else target(out)
        for _ in range(trials):

            def item(i):
                return {"id": i["id"], "property": i["property"], "value": rng.choice(JUNK)}

            inputs = [item(i) for i in dep["inputs"] if isinstance(i["id"], str)]
            yield {
                "output": out,
                "outputs": outputs,
                "inputs": inputs,
                "state": [item(s) for s in dep.get("state", []) if isinstance(s["id"], str)],
                "changedPropIds": [f"{i['id']}.{i['property']}" for i in inputs[:1]],
            }


def test_every_dashboard_callback_answers_junk_inputs_without_a_5xx(qm9_store):
    from orientscope.server import create_app

    rng = random.Random(0)
    with ServerThread(create_app(qm9_store, dashboard=True)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        deps = c.get("/_dash-dependencies").json()
        seen = set()
        for body in _callback_bodies(deps, rng, trials=12):
            r = c.post("/_dash-update-component", json=body)
            assert r.status_code < 500, (body, r.status_code, r.text[:300])
            if r.status_code == 422:
                assert "cannot use its inputs" in r.json()["detail"]
            seen.add(body["output"])
        assert seen == {d["output"] for d in deps if not d.get("clientside_function")}  # every server callback
