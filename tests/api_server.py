"""The API (no dashboard) served by uvicorn in a process of its own, on a free port: what a crash or a Ctrl-C
of the server does to its jobs, and the ingest API's upload limit, need a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.harness import free_port, start_server

# The ingest API's tests: a writable server needs this token, and uploads are limited to this size.
TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
UPLOAD_LIMIT_MB = 2

SERVER = """
import sys, uvicorn
from orientscope.server import create_app
data_dir, port, read_only, token = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4] or None
uvicorn.run(create_app(data_dir, read_only=read_only, token=token, dashboard=False), host="127.0.0.1", port=port,
            log_level="warning")
"""


def start_api_server(
    data_dir: Path, read_only: bool = False, token: str = "", env: dict | None = None, prelude: str = ""
) -> tuple[subprocess.Popen, str]:
    """(process, base URL) once /api/health answers. ``token`` "" means none; ``env`` replaces the process's
    environment (default: this one's); ``prelude`` is Python run first in the server's process (a patch)."""
    port = free_port()
    argv = [sys.executable, "-c", prelude + SERVER, str(data_dir), str(port), "1" if read_only else "0", token]
    return start_server(argv, port, env=os.environ.copy() if env is None else env)


def start_ingest_server(data_dir: Path, read_only: bool, token: str) -> tuple[subprocess.Popen, str]:
    """The API with the ingest tests' upload limit (UPLOAD_LIMIT_MB)."""
    env = {**os.environ, "ORIENTSCOPE_MAX_UPLOAD_MB": str(UPLOAD_LIMIT_MB)}
    return start_api_server(data_dir, read_only, token, env)
