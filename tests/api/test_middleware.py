"""Security headers, request ids and the closed-by-default CORS policy, over real HTTP."""

import re

import httpx

from orientscope.server import create_app
from tests.api.conftest import ServerThread


def test_every_response_carries_request_id_and_security_headers(client):
    for path in ("/api/health", "/api/datasets/nope/summary"):
        r = client.get(path)
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
        assert re.fullmatch(r"[0-9a-f]{12}-[0-9a-f]+", r.headers["x-request-id"])


def test_caller_request_id_is_echoed_only_when_plain(client):
    assert client.get("/api/health", headers={"X-Request-ID": "job-42.a"}).headers["x-request-id"] == "job-42.a"
    hostile = client.get("/api/health", headers={"X-Request-ID": "x<script>" + "a" * 80}).headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{12}-[0-9a-f]+", hostile)
    assert client.get("/api/health").headers["x-request-id"] != hostile  # a fresh id per request


def test_cors_is_closed_by_default(client):
    r = client.get("/api/health", headers={"Origin": "http://elsewhere.example"})
    assert "access-control-allow-origin" not in r.headers
    pre = client.options(
        "/api/health", headers={"Origin": "http://elsewhere.example", "Access-Control-Request-Method": "GET"}
    )
    assert "access-control-allow-origin" not in pre.headers


def test_cors_opens_only_for_configured_origins(api_data, monkeypatch):
    monkeypatch.setenv("ORIENTSCOPE_CORS_ORIGINS", "http://lab.example")
    with ServerThread(create_app(api_data, dashboard=False)) as server, httpx.Client(base_url=server.url) as c:
        ok = c.get("/api/health", headers={"Origin": "http://lab.example"})
        assert ok.headers["access-control-allow-origin"] == "http://lab.example"
        other = c.get("/api/health", headers={"Origin": "http://elsewhere.example"})
        assert "access-control-allow-origin" not in other.headers


def test_selective_gzip_skips_only_the_listed_paths():
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from orientscope.api.middleware import SelectiveGZip

    def big(request):
        return PlainTextResponse("orientation " * 2000)

    inner = Starlette(routes=[Route("/api/big", big), Route("/_dash-update-component", big, methods=["POST"])])
    app = SelectiveGZip(inner, skip_suffixes=("/_dash-update-component",), minimum_size=1024)
    with ServerThread(app) as server, httpx.Client(base_url=server.url, headers={"Accept-Encoding": "gzip"}) as c:
        compressed = c.get("/api/big")
        plain = c.post("/_dash-update-component")
    assert compressed.headers["content-encoding"] == "gzip" and compressed.text == "orientation " * 2000
    assert "content-encoding" not in plain.headers and plain.text == "orientation " * 2000


def test_the_json_log_formatter_writes_access_records_as_objects_and_other_lines_as_messages():
    import json
    import logging

    from orientscope.api.middleware import JsonLogFormatter

    access = {"request_id": "r1", "method": "GET", "path": "/api/health", "status": 200}
    record = logging.LogRecord("orientscope.access", logging.INFO, __file__, 1, "GET /api/health 200", (), None)
    record.access = access
    line = json.loads(JsonLogFormatter().format(record))
    assert line["access"] == access and line["logger"] == "orientscope.access" and line["level"] == "INFO"
    assert set(line) == {"time", "level", "logger", "access"}
    other = logging.LogRecord("orientscope", logging.WARNING, __file__, 1, "disk %s full", ("/data",), None)
    assert json.loads(JsonLogFormatter().format(other))["message"] == "disk /data full"
