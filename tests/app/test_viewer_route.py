"""GET /_molecule-viewer: a map click's viewer spec is the one the molecule callback answers (real HTTP)."""

import httpx
import pytest

from orientscope.app import panels
from orientscope.app.state import ViewState
from orientscope.app.viewer_route import PATH
from orientscope.server import create_app
from orientscope.services.map_data import load_map_data
from tests.api.conftest import ServerThread


@pytest.fixture(scope="module")
def client(qm9_store):
    with ServerThread(create_app(qm9_store, dashboard=True)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        yield c


def test_the_spec_is_what_the_molecule_callback_puts_into_the_viewer_store(client, qm9_store):
    st = ViewState(dataset="qm9")
    for mol in map(str, load_map_data(qm9_store, "qm9").ids[[0, 5, 77]]):
        r = client.get(PATH, params={"dataset": "qm9", "molecule": mol})
        assert r.status_code == 200
        spec = r.json()
        assert spec == panels.molecule_outputs(qm9_store, st, mol).viewer  # so the viewer does not draw it twice
        assert spec["molecule"] == mol and [s["title"].split(" · ")[0] for s in spec["scenes"]] == [
            "stored pose",
            "canonical pose",
        ]


def test_unknown_molecules_and_datasets_are_404_naming_them_and_missing_fields_are_422(client):
    r = client.get(PATH, params={"dataset": "qm9", "molecule": "no-such-id"})
    assert r.status_code == 404 and "no-such-id" in r.json()["detail"]
    r = client.get(PATH, params={"dataset": "no-such-set", "molecule": "1"})
    assert r.status_code == 404 and "no-such-set" in r.json()["detail"]
    assert client.get(PATH, params={"dataset": "qm9"}).status_code == 422
    assert client.get(PATH, params={"dataset": "qm9", "molecule": ""}).status_code == 422
