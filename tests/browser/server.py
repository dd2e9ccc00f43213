"""Serve the dashboard for browser tests: python server.py DATA_DIR PORT [--read-only] [--warm].

Builds the app through the composition root, as ``orientscope serve`` does; ``--warm`` also runs its
start-up warm-up (the map kernels compiled, the datasets loaded), as a served app does.
"""

from __future__ import annotations

import sys
from pathlib import Path

import uvicorn

from orientscope.server import create_app

if __name__ == "__main__":
    server = create_app(Path(sys.argv[1]), read_only="--read-only" in sys.argv, token=None, warm="--warm" in sys.argv)
    uvicorn.run(server, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
