"""Serve the dashboard for browser tests: python server.py DATA_DIR PORT [--read-only].

Uses the project's API app when it exists, else a bare FastAPI app with the dashboard mounted.
"""

from __future__ import annotations

import sys
from pathlib import Path

import uvicorn


def build(data_dir: Path, read_only: bool):
    try:
        from backend.api.main import create_app
    except ImportError:
        create_app = None
    if create_app is not None:
        try:
            return create_app(data_dir, read_only=read_only, token=None)
        except TypeError:
            pass
    from fastapi import FastAPI

    from app.dashboard import create_dash

    server = FastAPI()
    create_dash(server, data_dir, read_only=read_only)
    return server


if __name__ == "__main__":
    server = build(Path(sys.argv[1]), "--read-only" in sys.argv)
    uvicorn.run(server, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
