"""The view-state callback over real HTTP: the controls become one ViewState, the URL and the map state."""

import httpx
import pytest

from orientscope.app import ids
from orientscope.app.dashboard import STATE_OUT, first_view
from orientscope.app.state import control_values, parse_query
from orientscope.figures.state import ViewState
from orientscope.server import create_app
from tests.api.conftest import ServerThread


@pytest.fixture(scope="module")
def client(qm9_store):
    with ServerThread(create_app(qm9_store, dashboard=True)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        yield c


def _sync_state_body(deps: list[dict], shown: ViewState, changed: str, current: dict | None) -> dict:
    """The browser's request for sync_state, the controls showing ``shown`` and ``changed`` just changed."""
    dep = next(d for d in deps if f"{ids.URL}.search" in d["output"] and f"{ids.MAP_STATE}.data" in d["output"])
    values = {f"{c}.{p}": v for c, p, v in [(ids.URL, "search", shown.to_query()), (ids.COMPARE_A, "value", shown.dataset)] + [
        (*ids.CONTROL_OF[name], value) for name, value in control_values(shown).items()
    ]}  # fmt: skip
    outputs = [{"id": c, "property": p} for c, p in (s.split(".") for s in dep["output"].strip(".").split("..."))]
    return {
        "output": dep["output"],
        "outputs": outputs,
        "inputs": [{**i, "value": values[f"{i['id']}.{i['property']}"]} for i in dep["inputs"]],
        "state": [{**s, "value": current} for s in dep["state"]],
        "changedPropIds": [changed],
    }


def test_a_control_change_updates_the_url_and_the_map_state_by_name(client):
    deps = client.get("/_dash-dependencies").json()
    before = ViewState(dataset="qm9", molecule="x")
    shown = before.with_(color="score", axes="13")
    r = client.post(
        "/_dash-update-component",
        json=_sync_state_body(deps, shown, f"{ids.COLOR}.value", before.map_state()),
    )
    assert r.status_code == 200, r.text
    answer = r.json()["response"]
    search = answer[ids.URL]["search"]
    assert parse_query(search) == (shown, [])  # the link reopens exactly this view
    assert ViewState.from_map_state(answer[ids.MAP_STATE]["data"]) == shown.with_(molecule=None)
    assert set(answer) <= {c for c, _ in STATE_OUT.values()}


def test_the_first_view_fills_every_state_output_of_a_url(qm9_store):
    st = ViewState(dataset="qm9", color="group", grouping="scaffold", view="density", axes="2")
    props = first_view(qm9_store, st.to_query())
    for name, (component, prop) in STATE_OUT.items():
        if name not in (
            "molecule",
            "zoom",
            "pins",
            "sel",
        ):  # no molecule, zoom, pins or selection: their stores stay unset
            assert prop in props[component], name
    assert props[ids.URL]["search"] == st.to_query()
    assert ViewState.from_map_state(props[ids.MAP_STATE]["data"]) == st
    assert props[ids.AXES]["value"] == ["2"] and ids.SELECTED not in props and ids.PINS not in props
    assert first_view(qm9_store, st.with_(pins="1,2").to_query())[ids.PINS]["data"] == "1,2"


def test_an_empty_store_still_fills_the_map_state_so_the_panels_say_so_and_poll(tmp_path):
    with ServerThread(create_app(tmp_path, dashboard=True)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        deps = c.get("/_dash-dependencies").json()
        body = _sync_state_body(deps, ViewState(), f"{ids.URL}.search", None)
        answer = c.post("/_dash-update-component", json=body).json()["response"]
        assert ViewState.from_map_state(answer[ids.MAP_STATE]["data"]) == ViewState()
        verdict_dep = next(d for d in deps if f"{ids.VERDICT}.children" in d["output"])
        outputs = [
            {"id": o.split(".")[0], "property": o.split(".")[1]} for o in verdict_dep["output"].strip(".").split("...")
        ]
        r = c.post(
            "/_dash-update-component",
            json={
                "output": verdict_dep["output"],
                "outputs": outputs,
                "inputs": [
                    {**i, "value": answer[ids.MAP_STATE]["data"] if i["id"] == ids.MAP_STATE else 0}
                    for i in verdict_dep["inputs"]
                ],
                "state": [],
                "changedPropIds": [f"{ids.MAP_STATE}.data"],
            },
        )
        panel = r.json()["response"]
        assert "No dataset is ready yet" in str(panel[ids.VERDICT]) and panel[ids.STATUS_POLL]["disabled"] is False
