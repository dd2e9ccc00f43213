"""The server's edge against a real browser: a page of another site, DNS rebinding, a private server.

OrientScope runs in uvicorn at 127.0.0.1:PORT over a private copy of the store; the hostile page
is served from localhost:PORT2 (another origin, but the same site for cookies). The server's
access log (captured from its thread) shows which requests reached it and how they were answered.
"""

from __future__ import annotations

import http.server
import logging
import shutil
import threading

import numpy as np
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from orientscope.loaders.extxyz import write_extxyz
from orientscope.server import create_app
from tests.api.conftest import ServerThread
from tests.api.guarded import READ_TOKEN, WRITE_TOKEN, stored
from tests.browser.chrome import chromium_available, make_driver, map_traces, quit_driver
from tests.browser.pages import isolated_point_pixel, open_page, text_of
from tests.harness import free_port, wait_until

pytestmark = pytest.mark.browser

HOSTILE_JS = """
const target = arguments[0], done = arguments[arguments.length - 1], results = {};
const xyz = '3\\nwater\\nO 0 0 0.1173\\nH 0 0.7572 -0.4692\\nH 0 -0.7572 -0.4692\\n';
const form = document.createElement('form');
form.method = 'POST'; form.enctype = 'multipart/form-data'; form.target = 'sink';
form.action = target + '/api/datasets';
const name = document.createElement('input'); name.name = 'name'; name.value = 'form-probe';
const file = document.createElement('input'); file.type = 'file'; file.name = 'file';
const files = new DataTransfer(); files.items.add(new File([xyz], 'w.xyz')); file.files = files.files;
form.append(name, file); document.body.append(form); form.submit();
const body = new FormData(); body.append('name', 'fetch-probe'); body.append('file', new File([xyz], 'w.xyz'));
const outcome = p => p.then(r => r.text().then(t => 'read ' + r.status + ': ' + t), e => 'error: ' + e.name);
Promise.all([
  outcome(fetch(target + '/api/datasets', {method: 'POST', body})),
  outcome(fetch(target + '/api/datasets/qm9', {method: 'DELETE'})),
  outcome(fetch(target + '/api/datasets')),
]).then(([post, del, get]) => done({post, del, get}));
"""


@pytest.fixture(scope="module")
def browser():
    if not chromium_available():
        pytest.skip("needs /usr/bin/chromium and /usr/bin/chromedriver")
    # rebind.test resolves to this machine, as a DNS-rebinding attacker's name does once rebound.
    drv = make_driver(args=("--host-resolver-rules=MAP rebind.test 127.0.0.1",))
    drv.set_script_timeout(60)
    yield drv
    quit_driver(drv)


@pytest.fixture(scope="module")
def data_dir(qm9_store, tmp_path_factory):
    target = tmp_path_factory.mktemp("edge-browser") / "data"
    shutil.copytree(qm9_store / "datasets", target / "datasets")
    return target


@pytest.fixture()
def hostile_page(tmp_path):
    """A page of another origin: http://localhost:PORT2/ (an empty page with a frame its form posts into)."""
    (tmp_path / "index.html").write_text('<!doctype html><html><body><iframe name="sink"></iframe></body></html>')
    handler = lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory=str(tmp_path))  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://localhost:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def access_lines(caplog) -> list[dict]:
    return [r.access for r in caplog.records if r.name == "orientscope.access"]


# The browser reports each refusal in its console: the point of these tests.
@pytest.mark.console_errors(
    r"blocked by CORS policy", r"net::ERR_FAILED", r"frame-ancestors 'none'", r"favicon\.ico .*404"
)
def test_a_page_of_another_site_changes_nothing_and_reads_nothing(browser, data_dir, hostile_page, caplog):
    before = stored(data_dir)
    with ServerThread(create_app(data_dir)) as server, caplog.at_level(logging.INFO, logger="orientscope.access"):
        browser.get(hostile_page)
        results = browser.execute_async_script(HOSTILE_JS, server.url)
        # the form's POST lands in the frame: wait until the server has answered both uploads
        wait_until(lambda: len([a for a in access_lines(caplog) if a["method"] == "POST"]) == 2, timeout_s=30)
        answered = access_lines(caplog)
    assert [a["status"] for a in answered if a["method"] == "POST"] == [403, 403]  # both uploads refused
    assert [a for a in answered if a["method"] == "DELETE"] == []  # its preflight failed: never sent
    assert results["post"].startswith("error") and results["del"].startswith("error")
    assert results["get"] == "error: TypeError"  # served, but its body is not the page's to read
    assert stored(data_dir) == before


@pytest.mark.console_errors(
    r"status of 400", r"WebSocket connection to .* failed", r"Cross-Origin-Opener-Policy header has been ignored"
)
def test_a_rebound_name_gets_400_on_every_kind_of_route(browser, data_dir, caplog):
    before = stored(data_dir)
    paths = ("/", "/api/datasets", "/api/datasets/qm9/map/panel/1")
    with ServerThread(create_app(data_dir)) as server, caplog.at_level(logging.INFO, logger="orientscope.access"):
        rebound = f"http://rebind.test:{server.port}"
        for path in paths:
            browser.get(rebound + path + ("?dataset=qm9&molecule=1" if path == "/" else ""))
            wait_until(lambda: "--allowed-hosts" in browser.find_element(By.TAG_NAME, "body").text, timeout_s=30)
        # the websocket a rebound page would open to run callbacks
        opened = browser.execute_async_script(
            """const done = arguments[arguments.length - 1], ws = new WebSocket(arguments[0]);
               ws.onopen = () => done('open'); ws.onerror = () => done('refused');""",
            f"ws://rebind.test:{server.port}/_dash-ws-callback",
        )
        answered = access_lines(caplog)
    assert opened == "refused"
    assert [a["status"] for a in answered if a["path"] in paths] == [400, 400, 400]
    assert stored(data_dir) == before


@pytest.fixture(scope="module")
def private_url(data_dir):
    server = ServerThread(create_app(data_dir, token=WRITE_TOKEN, read_token=READ_TOKEN))
    server.server.config.lifespan = "on"  # Dash answers its page paths (/upload) once its start-up has run
    with server:
        yield server.url


@pytest.mark.console_errors(r"status of 401")  # the page opened without signing in first
def test_a_private_server_signs_in_from_a_link_then_the_whole_dashboard_works(
    browser, private_url, data_dir, qm9_small, tmp_path
):
    browser.delete_all_cookies()
    browser.get(private_url + "/?dataset=qm9&view=map")
    wait_until(lambda: browser.find_element(By.ID, "sign-in").is_displayed(), timeout_s=30)
    open_page(browser, f"{private_url}/?dataset=qm9&token={READ_TOKEN}&view=map")
    assert "token" not in browser.current_url and "dataset=qm9" in browser.current_url
    cookie = browser.get_cookies()[0]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax" and READ_TOKEN not in cookie["value"]
    # a click on the map selects a molecule
    graph = browser.find_element(By.CSS_SELECTOR, "#orientation-map .map-stage")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", graph)
    target = isolated_point_pixel(browser)
    ActionChains(browser).move_to_element_with_offset(graph, int(round(target["dx"])), int(round(target["dy"]))).pause(
        0.3
    ).click().perform()
    wait_until(lambda: "molecule=" in browser.current_url and text_of(browser, "molecule-id"), timeout_s=40)
    # a SMARTS search highlights its matches
    box = browser.find_element(By.ID, "smarts")
    box.clear()
    box.send_keys("C=O", Keys.ENTER)
    wait_until(lambda: any(t["kind"] == "highlight" and t["n"] > 0 for t in map_traces(browser) or []), timeout_s=40)
    # an upload with the write token typed in
    path = tmp_path / "page.extxyz"
    write_extxyz(path, qm9_small.subset(np.arange(20)))
    browser.get(private_url + "/upload")
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "#upload-file input[type=file]"))[0].send_keys(str(path))
    browser.find_element(By.ID, "upload-name").send_keys("Private upload")
    browser.find_element(By.ID, "upload-token").send_keys(WRITE_TOKEN)
    browser.find_element(By.ID, "upload-submit").click()
    status = browser.find_element(By.ID, "upload-status")
    wait_until(lambda: status.text.startswith(("done", "failed")), timeout_s=120)
    assert status.text.startswith("done"), status.text
    assert stored(data_dir)["datasets"]["private-upload"] == "Private upload"
