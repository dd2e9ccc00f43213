"""Everything the dashboard adds to the server besides Dash itself, in one place: its middleware, its
routes outside the REST API, and its patches of Dash. The composition root calls :func:`mount_dashboard`
once.

- ``DashRequestGuard`` (app/request_guard.py): Dash's own routes answer bad input with a 4xx, not a 500.
- ``PageQueryMiddleware`` (app/initial_view.py): ``/_dash-layout`` carries the page's view (the page sends its
  query, app/compat.py), cached.
- ``FirstPaintMiddleware`` and the index addition (app/first_paint.py): the page's HTML carries the map's
  first paint data and the script that draws it.
- Dash's callback route run in worker threads, and its answers encoded by orjson (app/compat.py).

Each reliance on Dash's markup or internals has a canary test (marked ``dash_canary``).
"""

from __future__ import annotations

from pathlib import Path

import dash
from fastapi import FastAPI

from orientscope.app.compat import dispatch_in_threads, install_answer_encoder, send_page_query_with_layout
from orientscope.app.dashboard import create_dash
from orientscope.app.first_paint import FirstPaintMiddleware
from orientscope.app.first_paint import install as install_first_paint
from orientscope.app.initial_view import PageQueryMiddleware, datasets_version
from orientscope.app.request_guard import DashRequestGuard


def mount_dashboard(server: FastAPI, data_dir: Path, read_only: bool = False) -> dash.Dash:
    """Mount the dashboard at "/" of ``server`` with everything it adds to the server; return the Dash app."""
    data_dir = Path(data_dir)
    app = create_dash(server, data_dir, read_only)
    # Added after Dash's own middleware, so they run first.
    server.add_middleware(DashRequestGuard, dash_app=app)
    server.add_middleware(PageQueryMiddleware, version=lambda: (read_only, datasets_version(data_dir)))
    server.add_middleware(FirstPaintMiddleware, data_dir=data_dir, path=app.config.routes_pathname_prefix)
    send_page_query_with_layout(app)
    install_first_paint(app)
    dispatch_in_threads(server, app.config.routes_pathname_prefix)
    # A process-wide swap (app/compat.py): ended when this server shuts down, so that a process that
    # built and closed a dashboard (tests, benchmarks) is left with Dash's own encoder.
    server.router.on_shutdown.append(install_answer_encoder())
    return app
