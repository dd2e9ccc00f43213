"""A token-guarded store, for the edge tests over HTTP and in the browser: its tokens, and what a refused
request must leave alone."""

from __future__ import annotations

import json

WRITE_TOKEN = "write-token-0123456789"
READ_TOKEN = "read-token-9876543210"


def stored(data_dir) -> dict:
    """Dataset id -> display name, and the job records: what a refused request must leave alone."""
    names = {p.name: json.loads((p / "dataset.json").read_text())["name"] for p in (data_dir / "datasets").iterdir()}
    jobs = sorted(p.name for p in (data_dir / "jobs").glob("*.json")) if (data_dir / "jobs").exists() else []
    return {"datasets": names, "jobs": jobs}
