"""A short, bounded version of the load test (``make loadtest``): 8 simulated users for 5 s against the
small test store, mixing page loads, Dash callbacks (map recolouring, clicks) and REST reads."""

import asyncio

import pyarrow.parquet as pq

from backend.server import create_app
from tests.api.conftest import ServerThread
from tests.bench.loadtest import build_scenario, drive


def test_eight_users_for_five_seconds_get_no_errors(api_data):
    ids = [str(x) for x in pq.read_table(api_data / "datasets" / "qm9" / "molecules.parquet", columns=["id"])["id"]]
    with ServerThread(create_app(api_data, read_only=True)) as server:
        scenario = build_scenario(server.url, ids)
        result = asyncio.run(drive(server.url, scenario, users=8, duration_s=5.0, think=(0.0, 0.2), seed=1))
    classes = result["classes"]
    assert result["server_errors"] == 0 and result["errors"] == 0, result["examples"]
    # Every kind of request was exercised, and every click opened a molecule panel.
    assert {"callback: map recolour", "callback: click", "callback: molecule panel", "page /"} <= set(classes)
    assert any(name.startswith("rest: ") for name in classes)
    assert classes["callback: click"]["n"] == classes["callback: molecule panel"]["n"]
