"""Malformed Dash callback requests get a 422 with a reason, well-formed ones still work (real uvicorn, real HTTP)."""

import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orientscope.app.request_guard import envelope_problem
from orientscope.server import create_app
from tests.api.conftest import ServerThread

GOOD = {
    "output": "molecule-id.children",
    "outputs": {"id": "molecule-id", "property": "children"},
    "inputs": [{"id": "selected", "property": "data", "value": None}],
    "changedPropIds": ["selected.data"],
    "state": [],
}
# What Dash's callback map holds for GOOD's output (a server callback, one input, no state).
SPECS = {
    "molecule-id.children": {"callback": object(), "inputs": [{"id": "selected", "property": "data"}], "state": []}
}
MULTI = "..a.children...b.children.."


@pytest.fixture(scope="module")
def dash_url(qm9_store):
    with ServerThread(create_app(qm9_store, dashboard=True)) as server:
        yield server.url


@pytest.fixture(scope="module")
def real_output(dash_url) -> dict:
    """A registered callback and a valid body for it, from the dependency graph the browser reads."""
    deps = httpx.get(dash_url + "/_dash-dependencies", timeout=60).json()
    dep = next(d for d in deps if not d["output"].startswith("..") and d["inputs"] and not d.get("state"))
    component, _, prop = dep["output"].rpartition(".")
    return {
        "output": dep["output"],
        "outputs": {"id": component, "property": prop.split("@")[0]},
        "inputs": [{"id": i["id"], "property": i["property"], "value": None} for i in dep["inputs"]],
        "changedPropIds": [],
        "state": [],
    }


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (json.dumps({**GOOD, "output": 7}).encode(), "'output' must be a string"),
        (json.dumps({**GOOD, "output": "nope.children"}).encode(), "no callback has the output"),
        (json.dumps({**GOOD, "inputs": "x"}).encode(), "'inputs' must be a list"),
        (json.dumps({**GOOD, "inputs": [{"value": 1}]}).encode(), "needs an 'id' and a 'property'"),
        # once 500s inside Dash: nested thousands deep, a browser-side callback, counts and shapes Dash indexes
        (b"[" * 50_000, "nested too deeply"),
        (json.dumps({**GOOD, "output": "copy-status.children"}).encode(), "runs in the browser"),
        (json.dumps({**GOOD, "inputs": []}).encode(), "'inputs' must have 1 entries"),
        (json.dumps({**GOOD, "state": [{"id": "x", "property": "value"}]}).encode(), "'state' must have 0 entries"),
        (json.dumps({**GOOD, "outputs": []}).encode(), "'outputs' must be an entry"),
        (json.dumps({**GOOD, "output": MULTI, "outputs": {"id": "a", "property": "children"}}).encode(), "list of 2"),
        (json.dumps({**GOOD, "output": MULTI, "outputs": [{"id": "a", "property": "children"}]}).encode(), "list of 2"),
    ],
)
def test_malformed_envelopes_are_named(body, reason):
    specs = {**SPECS, "copy-status.children": {"inputs": [], "state": []}, MULTI: SPECS["molecule-id.children"]}
    assert reason in envelope_problem(body, specs)


def test_well_formed_envelope_passes():
    assert envelope_problem(json.dumps(GOOD).encode(), SPECS) is None
    outputs = [{"id": "a", "property": "children"}, {"id": "b", "property": "children"}]
    multi = {**GOOD, "output": MULTI, "outputs": outputs}
    assert envelope_problem(json.dumps(multi).encode(), {MULTI: SPECS["molecule-id.children"]}) is None


def test_over_http_malformed_is_422_and_valid_still_answers(dash_url, real_output):
    with httpx.Client(base_url=dash_url, timeout=60) as c:
        bad = c.post("/_dash-update-component", content=b"{oops", headers={"content-type": "application/json"})
        assert bad.status_code == 422 and "not valid JSON" in bad.json()["detail"]
        unknown = c.post("/_dash-update-component", json={**GOOD, "output": "nothing.here"})
        assert unknown.status_code == 422 and "nothing.here" in unknown.json()["detail"]
        ok = c.post("/_dash-update-component", json=real_output)
        assert ok.status_code in (200, 204), ok.text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.one_of(
        st.binary(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=15), inner, max_size=5),
            max_leaves=20,
        ).map(lambda v: json.dumps(v).encode()),
    )
)
def test_fuzzed_callback_bodies_never_get_a_5xx(dash_url, body):
    r = httpx.post(dash_url + "/_dash-update-component", content=body, headers={"content-type": "application/json"})
    assert r.status_code < 500, (body, r.status_code, r.text[:300])
