"""A real uvicorn server on a free loopback port, serving the API over the test store."""

from __future__ import annotations

import socket
import threading

import httpx
import pytest
import uvicorn

from tests.harness import wait_until
from tests.services.conftest import api_data  # noqa: F401  (shared session fixture)


class ServerThread:
    """uvicorn in a background thread, listening on an already-bound socket (no port race)."""

    def __init__(self, app):
        self.app = app
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        self.thread.start()
        ended = lambda: not self.thread.is_alive() and "its thread ended"  # noqa: E731
        wait_until(lambda: self.server.started, timeout_s=30, what="uvicorn to start", poll_s=0.02, give_up=ended)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
        # uvicorn runs no lifespan here (lifespan="off"): the app's shutdown handlers, such as the end of the
        # dashboard's encoder swap (app/dashboard.py), run as the server stops, so that no test leaves them
        for handler in getattr(getattr(self.app, "router", None), "on_shutdown", []):
            handler()


@pytest.fixture(scope="session")
def api_url(api_data) -> str:  # noqa: F811
    from orientscope.server import create_app

    with ServerThread(create_app(api_data, dashboard=False)) as server:
        yield server.url


@pytest.fixture()
def client(api_url):
    with httpx.Client(base_url=api_url, timeout=60) as c:
        yield c
