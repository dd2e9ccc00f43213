"""The server's edge over real HTTP (backend/api/edge.py): Host allowlist, origin rule, read token.

Each server is a real uvicorn (API and dashboard) on 127.0.0.1 over a private copy of the
test store; the probes are the issue's curl commands and their kin on every kind of route.
"""

from __future__ import annotations

import logging
import shutil
import socket

import httpx
import pytest

from orientscope.api.tokens import session_value
from orientscope.core.settings import UnsafeServerError
from orientscope.server import create_app
from tests.api.conftest import ServerThread
from tests.api.guarded import READ_TOKEN, WRITE_TOKEN, stored

XYZ = b"3\nwater\nO 0 0 0.1173\nH 0 0.7572 -0.4692\nH 0 -0.7572 -0.4692\n"
WATER = {"elements": ["O", "H", "H"], "positions": [[0, 0, 0.1173], [0, 0.7572, -0.4692], [0, -0.7572, -0.4692]]}
EVIL = "http://evil.example"
PANEL = "/api/datasets/qm9/map/panel/1"
PAINT = "/api/datasets/qm9/map/paint?view=density"  # the map renderer's drawing
CALLBACK = "/_dash-update-component"


@pytest.fixture(scope="module")
def data_dir(qm9_store, tmp_path_factory):
    target = tmp_path_factory.mktemp("edge") / "data"
    shutil.copytree(qm9_store / "datasets", target / "datasets")
    return target


@pytest.fixture(scope="module")
def open_url(data_dir):
    """`make serve`: loopback, no token, no option."""
    with ServerThread(create_app(data_dir)) as server:
        yield server.url


@pytest.fixture(scope="module")
def private_url(data_dir):
    with ServerThread(create_app(data_dir, token=WRITE_TOKEN, read_token=READ_TOKEN)) as server:
        yield server.url


def websocket_status(url: str, headers: dict) -> int:
    """The HTTP status answering a websocket handshake on Dash's /_dash-ws-callback (101 when accepted)."""
    host, port = url.removeprefix("http://").split(":")
    lines = [
        "GET /_dash-ws-callback HTTP/1.1",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
        *(f"{k}: {v}" for k, v in {"Host": f"{host}:{port}", **headers}.items()),
    ]
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return int(sock.recv(4096).split(b" ", 2)[1])


# A callback request naming no registered output: past the edge, the dashboard's own check answers 422.
CALLBACK_BODY = {"output": "no-such.children", "outputs": {"id": "no-such", "property": "children"}}


def test_the_issue_probes_are_refused_and_change_nothing(open_url, data_dir):
    before = stored(data_dir)
    port = open_url.rsplit(":", 1)[1]
    r = httpx.post(
        f"{open_url}/api/datasets",
        files={"file": ("w.xyz", XYZ)},
        data={"name": "csrf-probe"},
        headers={"Origin": EVIL},
    )
    assert r.status_code == 403 and "another site" in r.json()["detail"] and "Bearer" in r.json()["detail"]
    assert r.headers["x-request-id"] and r.headers["x-frame-options"] == "DENY"  # an answer like any other
    r = httpx.delete(f"{open_url}/api/datasets/qm9", headers={"Host": f"evil.example:{port}"})
    assert r.status_code == 400 and "--allowed-hosts" in r.json()["detail"] and "evil.example" in r.json()["detail"]
    assert httpx.get(f"{open_url}/api/datasets", headers={"Host": "evil.example"}).status_code == 400
    assert stored(data_dir) == before


DEPICTION = "/api/datasets/qm9/molecules/1/depiction.svg"


@pytest.mark.parametrize("path", ["/api/datasets", "/", "/_dash-layout", PANEL, PAINT, "/assets/style.css", DEPICTION])
def test_a_forged_host_gets_400_on_every_kind_of_route(open_url, path):
    r = httpx.get(open_url + path, headers={"Host": "rebind.example:8050"})
    assert r.status_code == 400 and "ORIENTSCOPE_ALLOWED_HOSTS" in r.json()["detail"]
    assert httpx.get(open_url + path).status_code == 200


def test_a_forged_host_gets_400_on_the_websocket(open_url):
    port = open_url.rsplit(":", 1)[1]
    own = {"Origin": open_url}
    assert websocket_status(open_url, own) == 101
    assert (
        websocket_status(open_url, {**own, "Host": f"rebind.example:{port}", "Origin": f"http://rebind.example:{port}"})
        == 400
    )


@pytest.mark.parametrize("host", ["[::1]evil.example", "localhost:abc", "localhost:8050@evil.example", "[::1"])
def test_a_host_header_no_browser_sends_gets_400(open_url, host):
    """Only a name and an optional port: "[::1]evil.example" was once read as [::1] and answered."""
    assert httpx.get(f"{open_url}/api/datasets", headers={"Host": host}).status_code == 400


def test_several_host_headers_get_400(open_url):
    """The guard and the app might read different ones; HTTP/1.1 wants exactly one."""
    host, port = open_url.removeprefix("http://").split(":")
    for hosts in (("localhost", "evil.example"), ("evil.example", "localhost"), ("localhost", "localhost")):
        request = (
            "GET /api/datasets HTTP/1.1\r\n" + "".join(f"Host: {h}\r\n" for h in hosts) + "Connection: close\r\n\r\n"
        )
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(request.encode())
            assert sock.recv(4096).split(b" ", 2)[1] == b"400", hosts


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]", "LocalHost"])
def test_loopback_names_are_answered_with_any_port(open_url, host):
    for port in ("", ":8050", ":1"):
        assert httpx.get(f"{open_url}/api/health", headers={"Host": host + port}).status_code == 200


def test_pages_of_this_server_and_non_browsers_may_run_requests(open_url):
    port = open_url.rsplit(":", 1)[1]
    for headers in (
        {},  # curl, the CLI, scripts
        {"Origin": open_url},
        {"Origin": f"http://localhost:{port}", "Host": f"localhost:{port}"},
        {"Sec-Fetch-Site": "same-origin"},
        {"Referer": f"{open_url}/upload"},  # an older browser on this server's page
        {"Referer": "not a url"},  # names no page: not a browser's
    ):
        assert httpx.post(f"{open_url}/api/canonicalize", json=WATER, headers=headers).status_code == 200, headers
        r = httpx.post(open_url + CALLBACK, json=CALLBACK_BODY, headers=headers)
        assert r.status_code == 422 and "no callback has the output" in r.json()["detail"], (headers, r.text)


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": EVIL},
        {"Origin": "null"},  # a sandboxed frame or a file:// page
        {"Origin": "http://127.0.0.1:1"},  # another port of the same host is another origin
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Origin": EVIL, "Authorization": "Bearer not-a-token"},
        {"Origin": ""},  # present but empty: no page of this server (it once crashed the guard with a 500)
        {"Referer": "http://evil.example/page.html"},  # a browser that sends no Origin on a form post
    ],
    ids=["foreign", "null", "other-port", "cross-site", "same-site", "wrong-bearer", "empty-origin", "referer"],
)
def test_requests_from_other_pages_are_refused_before_their_body(open_url, data_dir, headers):
    before = stored(data_dir)
    for method, path, body in (
        ("POST", "/api/datasets", None),
        ("PATCH", "/api/datasets/qm9", {"name": "pwned"}),
        ("DELETE", "/api/datasets/qm9", None),
        ("POST", "/api/canonicalize", WATER),
        ("POST", "/api/datasets/qm9/exports", {"format": "xyz"}),
        ("POST", "/api/datasets/qm9/smarts", {"smarts": "C=O"}),
        ("POST", CALLBACK, CALLBACK_BODY),
    ):
        r = httpx.request(method, open_url + path, json=body, headers=headers)
        assert r.status_code == 403 and "another site" in r.json()["detail"], (method, path, r.text)
    assert websocket_status(open_url, headers) in (400, 403)
    assert stored(data_dir) == before


def test_a_bearer_token_may_write_from_any_origin(data_dir):
    with ServerThread(create_app(data_dir, token=WRITE_TOKEN)) as server:
        auth = {"Authorization": f"Bearer {WRITE_TOKEN}", "Origin": EVIL}
        r = httpx.patch(f"{server.url}/api/datasets/qm9", json={"name": "QM9 (lab)"}, headers=auth)
        assert r.status_code == 200
        assert httpx.patch(f"{server.url}/api/datasets/qm9", json={"name": "QM9"}, headers=auth).status_code == 200
        # a script with a token cannot pretend to be another host, though
        assert httpx.get(f"{server.url}/api/datasets", headers={**auth, "Host": "evil.example"}).status_code == 400


def test_allowed_hosts_add_names_whose_pages_may_write(data_dir):
    with ServerThread(create_app(data_dir, allowed_hosts=("tunnel.example",))) as server:
        tunnel = {"Host": "tunnel.example", "Origin": "https://tunnel.example"}
        assert httpx.post(f"{server.url}/api/canonicalize", json=WATER, headers=tunnel).status_code == 200
        assert httpx.get(f"{server.url}/api/health", headers={"Host": "localhost:8050"}).status_code == 200
        assert httpx.get(f"{server.url}/api/health", headers={"Host": "other.example"}).status_code == 400


def test_a_non_loopback_bind_answers_any_host_unless_names_are_given(data_dir, caplog):
    with caplog.at_level(logging.WARNING, logger="orientscope.api.edge"):
        lab = create_app(data_dir, read_only=True, bind_host="0.0.0.0")
    assert "--allowed-hosts" in caplog.text  # the start-up log says so
    with ServerThread(lab) as server:
        assert httpx.get(f"{server.url}/api/datasets", headers={"Host": "lab.example:8050"}).status_code == 200
        # the origin rule still holds there
        assert httpx.post(f"{server.url}/api/canonicalize", json=WATER, headers={"Origin": EVIL}).status_code == 403
    named = create_app(data_dir, read_only=True, bind_host="0.0.0.0", allowed_hosts=("lab.example",))
    with ServerThread(named) as server:
        assert httpx.get(f"{server.url}/api/datasets", headers={"Host": "lab.example:8050"}).status_code == 200
        assert httpx.get(f"{server.url}/api/datasets", headers={"Host": "127.0.0.1:8050"}).status_code == 200
        assert httpx.get(f"{server.url}/api/datasets", headers={"Host": "evil.example"}).status_code == 400


def test_behind_a_proxy_the_passed_host_and_scheme_count(data_dir):
    """nginx passes Host and X-Forwarded-Proto; uvicorn trusts them from 127.0.0.1 (forwarded-allow-ips)."""
    app = create_app(data_dir, token=WRITE_TOKEN, read_token=READ_TOKEN, allowed_hosts=("lab.example.org",))
    with ServerThread(app) as server:
        proxied = {"Host": "lab.example.org", "X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}
        r = httpx.get(f"{server.url}/?token={READ_TOKEN}", headers=proxied)
        assert r.status_code == 303 and "secure" in r.headers["set-cookie"].lower()
        page = {**proxied, "Origin": "https://lab.example.org", "Cookie": r.headers["set-cookie"].split(";")[0]}
        assert httpx.post(f"{server.url}/api/canonicalize", json=WATER, headers=page).status_code == 200


# ----------------------------------------------------------------------------------------- read token
def test_without_the_read_token_only_the_sign_in_page_and_health_answer(private_url):
    with httpx.Client(base_url=private_url, timeout=60) as c:
        for path in ("/api/datasets", "/api/datasets/qm9/summary", "/_dash-layout", PANEL, PAINT, "/assets/style.css"):
            r = c.get(path)
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", path
            assert "sign in" in r.json()["detail"] and READ_TOKEN not in r.text
        page = c.get("/?dataset=qm9", headers={"Accept": "text/html"})
        assert page.status_code == 401 and 'id="sign-in"' in page.text and 'value="/?dataset=qm9"' in page.text
        assert c.get("/sign-in").status_code == 200
        assert c.get("/api/health").json() == {"status": "ok"}
        assert c.get("/api/datasets", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert websocket_status(private_url, {"Origin": private_url}) == 401


def test_token_in_the_url_signs_in_once_and_leaves_the_url(private_url, caplog):
    port = private_url.rsplit(":", 1)[1]
    with caplog.at_level(logging.INFO), httpx.Client(base_url=private_url, timeout=60) as c:
        r = c.get(f"/?dataset=qm9&token={READ_TOKEN}&color=axis")
        assert r.status_code == 303 and r.headers["location"] == "/?dataset=qm9&color=axis"
        cookie = r.headers["set-cookie"]
        name, value = cookie.split(";")[0].split("=", 1)
        assert name == f"orientscope-session-{port}" and value == session_value(READ_TOKEN)
        assert READ_TOKEN not in cookie and "httponly" in cookie.lower() and "samesite=lax" in cookie.lower()
        assert c.get("/api/datasets").status_code == 200  # the client keeps the cookie
        assert c.get("/_dash-layout").status_code == 200 and c.get(PANEL).status_code == 200
        assert c.get("/?dataset=qm9", headers={"Accept": "text/html"}).status_code == 200
        assert websocket_status(private_url, {"Origin": private_url, "Cookie": f"{name}={value}"}) == 101
        assert c.get("/sign-out").status_code == 303 and c.cookies.get(name) is None
        assert c.get("/api/datasets").status_code == 401
        bad = c.get("/?token=wrong")
        assert bad.status_code == 401 and "not valid" in bad.text and "set-cookie" not in bad.headers
    access = [r.access for r in caplog.records if r.name == "orientscope.access"]
    assert {"method": "GET", "path": "/", "status": 303}.items() <= access[0].items()  # logged, without its query
    server_lines = [r.getMessage() + str(getattr(r, "access", "")) for r in caplog.records if r.name != "httpx"]
    assert server_lines and not [line for line in server_lines if READ_TOKEN in line or "token=" in line]


def test_a_token_link_never_redirects_to_another_site(private_url):
    """A shared link whose path starts with two slashes would redirect to another host once signed in."""
    with httpx.Client(base_url=private_url, timeout=60) as c:
        for path in ("//evil.example/", "//evil.example/?dataset=qm9", "/\\evil.example/"):
            sep = "&" if "?" in path else "?"
            r = c.get(f"{private_url}{path}{sep}token={READ_TOKEN}")
            assert r.status_code == 303 and r.headers["location"] == "/", (path, r.headers["location"])
            assert "orientscope-session-" in r.headers["set-cookie"]
        # a link to the sign-in page itself goes on to the dashboard, not back to the form
        r = c.get(f"/sign-in?token={READ_TOKEN}")
        assert r.status_code == 303 and r.headers["location"] == "/"


def test_the_sign_in_form_posts_the_token_and_returns_to_the_page(private_url):
    with httpx.Client(base_url=private_url, timeout=60) as c:
        r = c.post("/sign-in", data={"token": WRITE_TOKEN, "next": "/?dataset=qm9"}, headers={"Origin": private_url})
        assert r.status_code == 303 and r.headers["location"] == "/?dataset=qm9"
        assert c.get("/api/datasets").status_code == 200  # the write token also reads
        r = c.post("/sign-in", data={"token": READ_TOKEN, "next": "//evil.example/"}, headers={"Origin": private_url})
        assert r.headers["location"] == "/"  # never to another site
        assert c.post("/sign-in", data={"token": READ_TOKEN}, headers={"Origin": EVIL}).status_code == 403


def test_the_read_token_reads_but_never_changes_stored_data(private_url, data_dir):
    before = stored(data_dir)
    read = {"Authorization": f"Bearer {READ_TOKEN}"}
    with httpx.Client(base_url=private_url, timeout=60, headers=read) as c:
        assert c.get("/api/datasets").status_code == 200
        assert c.post("/api/canonicalize", json=WATER).status_code == 200  # stores nothing
        for r in (
            c.post("/api/datasets", files={"file": ("w.xyz", XYZ)}, data={"name": "Water"}),
            c.patch("/api/datasets/qm9", json={"name": "pwned"}),
            c.delete("/api/datasets/qm9"),
        ):
            assert r.status_code == 401 and "ORIENTSCOPE_TOKEN" in r.json()["detail"]
            assert READ_TOKEN not in r.text
        # signed in with the read token, a page of this server still cannot write
        c.get(f"/?token={READ_TOKEN}", headers={})
        r = c.delete("/api/datasets/qm9", headers={"Authorization": "", "Origin": private_url})
        assert r.status_code == 401
    assert stored(data_dir) == before


def test_a_cors_origin_reaches_a_private_server(data_dir, monkeypatch):
    """Its preflight carries no token (browsers never send one there); then its requests carry the token."""
    notebook = "http://notebook.example:8888"
    monkeypatch.setenv("ORIENTSCOPE_CORS_ORIGINS", notebook)
    with ServerThread(create_app(data_dir, token=WRITE_TOKEN, read_token=READ_TOKEN, dashboard=False)) as server:
        preflight = {"Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"}
        r = httpx.options(f"{server.url}/api/datasets", headers={"Origin": notebook, **preflight})
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == notebook
        r = httpx.get(
            f"{server.url}/api/datasets", headers={"Origin": notebook, "Authorization": f"Bearer {READ_TOKEN}"}
        )
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == notebook
        # another origin's preflight, and the notebook's reads without the token, still meet the read token
        assert httpx.options(f"{server.url}/api/datasets", headers={"Origin": EVIL, **preflight}).status_code == 401
        assert httpx.get(f"{server.url}/api/datasets", headers={"Origin": notebook}).status_code == 401


def test_a_non_ascii_token_works_as_a_header_as_in_the_url(data_dir):
    """Header values reach the server as Latin-1; a UTF-8 token was once accepted in ?token= but never as a header."""
    write, read = "pässwörd-∑", "lésen-日本"
    with ServerThread(create_app(data_dir, token=write, read_token=read, dashboard=False)) as server:
        for token in (read, write):
            r = httpx.get(f"{server.url}/api/datasets", headers={"Authorization": f"Bearer {token}".encode()})
            assert r.status_code == 200, token
            assert httpx.get(f"{server.url}/?token={token}").status_code == 303
        assert httpx.get(f"{server.url}/api/datasets", headers={"Authorization": b"Bearer l\xe9sen"}).status_code == 401
        before = stored(data_dir)
        for token, status in ((read, 401), (write, 200)):  # the roles hold for UTF-8 tokens too
            r = httpx.patch(
                f"{server.url}/api/datasets/qm9",
                json={"name": "QM9"},
                headers={"Authorization": f"Bearer {token}".encode()},
            )
            assert r.status_code == status, (token, r.text)
        assert stored(data_dir) == before


def test_a_new_token_invalidates_every_cookie(data_dir):
    old_cookie = None
    with ServerThread(create_app(data_dir, token=WRITE_TOKEN, read_token=READ_TOKEN)) as server:
        r = httpx.get(f"{server.url}/?token={READ_TOKEN}")
        old_cookie = r.headers["set-cookie"].split(";")[0]
        assert httpx.get(f"{server.url}/api/datasets", headers={"Cookie": old_cookie}).status_code == 200
    with ServerThread(create_app(data_dir, token=WRITE_TOKEN, read_token="a-new-read-token")) as server:
        name = old_cookie.split("=")[0].rsplit("-", 1)[0] + "-" + str(server.port)
        resent = f"{name}={old_cookie.split('=', 1)[1]}"
        assert httpx.get(f"{server.url}/api/datasets", headers={"Cookie": resent}).status_code == 401


def test_a_read_token_needs_a_write_token_or_read_only(data_dir):
    with pytest.raises(UnsafeServerError, match="ORIENTSCOPE_TOKEN"):
        create_app(data_dir, read_token=READ_TOKEN)
    create_app(data_dir, read_only=True, read_token=READ_TOKEN, dashboard=False)
