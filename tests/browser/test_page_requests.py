"""PageRequests (tests/browser/chrome.py), which every origin check of the browser tests uses: it counts the
requests of the page under test, never the browser's own pages loading in the same tab."""

from __future__ import annotations

import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.browser.chrome import PageRequests, make_driver, quit_driver
from tests.harness import wait_until


@pytest.fixture
def plain_site(tmp_path):
    """A page on 127.0.0.1 that asks another origin (localhost, same port) for an image: (page URL, image URL)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(tmp_path)))
    port = server.server_address[1]
    (tmp_path / "page.html").write_text(f'<html><body><img src="http://localhost:{port}/elsewhere.png"></body></html>')
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}/page.html", f"http://localhost:{port}/elsewhere.png"
    server.shutdown()
    thread.join()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.mark.console_errors(r"favicon\.ico .*404")  # a plain file server: no icon
def test_the_browsers_own_pages_do_not_count_and_the_pages_off_origin_request_does(plain_site):
    page, elsewhere = plain_site
    drv = make_driver()
    try:
        requests = PageRequests(drv)
        # Chromium's new-tab page in the tab's own frame: hundreds of chrome:// requests, some of which
        # arrive after the next navigation (as with a start page still loading when a test navigates)
        drv.get("chrome://new-tab-page/")
        drv.get(page)
        wait_until(lambda: drv.execute_script("return document.images[0].complete"))
        wait_until(lambda: elsewhere in requests.urls())
        assert requests.urls()[0] == page
        assert requests.off_origin(page) == [elsewhere]
        assert len(requests.browser_own) > 50
        # whatever Chromium's own page asks for (chrome://, data:, its own web resources), never the servers under test
        mine = [u for u in requests.browser_own if u.startswith((page.rsplit("/", 1)[0], elsewhere.rsplit("/", 1)[0]))]
        assert mine == [] and any(u.startswith("chrome://") for u in requests.browser_own), mine
    finally:
        quit_driver(drv)
