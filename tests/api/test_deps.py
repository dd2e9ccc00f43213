"""Shared dependencies: an unknown query parameter is a 422 naming the accepted ones."""

import httpx
import pytest

from orientscope.server import create_app
from tests.api.conftest import ServerThread


def _unknown(r: httpx.Response, name: str) -> str:
    assert r.status_code == 422, r.text
    (error,) = r.json()["detail"]
    assert error["loc"] == ["query", name]
    return error["msg"]


@pytest.mark.parametrize(
    ("path", "typo", "accepted"),
    [
        ("/api/datasets/qm9/molecules", "limt", "group, group_by, limit, offset, smarts, sort"),
        ("/api/datasets/qm9/groups", "bye", "by"),
        ("/api/datasets/qm9/neighbors/1", "kk", "by, k"),
        ("/api/datasets/qm9/molecules/1", "fromat", "format, pose"),
        ("/api/datasets", "limit", "none"),
        ("/api/health", "verbose", "none"),
    ],
)
def test_unknown_query_parameter_names_the_accepted_ones(client, path, typo, accepted):
    msg = _unknown(client.get(path, params={typo: "5"}), typo)
    assert f"unknown query parameter {typo!r}" in msg and msg.endswith(f"accepts: {accepted}")


def test_each_unknown_parameter_is_reported(client):
    r = client.get("/api/datasets/qm9/orientations", params={"format": "csv", "a": 1, "b": 2})
    assert r.status_code == 422
    assert [e["loc"] for e in r.json()["detail"]] == [["query", "a"], ["query", "b"]]


def test_known_parameters_still_work(client):
    r = client.get("/api/datasets/qm9/molecules", params={"limit": 3, "offset": 1, "sort": "-n_atoms"})
    assert r.status_code == 200 and len(r.json()["items"]) == 3
    assert client.get("/api/datasets/qm9/groups", params={"by": "formula"}).status_code == 200
    assert client.get("/api/datasets/qm9/molecules/1", params={"format": "xyz"}).status_code == 200


def test_dashboard_routes_keep_their_query_strings(api_data):
    with ServerThread(create_app(api_data, dashboard=True)) as server, httpx.Client(base_url=server.url) as c:
        assert c.get("/", params={"dataset": "qm9", "anything": "1"}).status_code == 200
        assert c.get("/_dash-layout", params={"dataset": "qm9", "limt": "1"}).status_code == 200
        assert c.get("/api/health", params={"limt": "1"}).status_code == 422
