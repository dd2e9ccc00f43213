"""A short, bounded version of the load test (``make loadtest``): 8 simulated users for 5 s against the
small test store, mixing page loads, Dash callbacks (map recolouring, clicks) and REST reads.

Not part of the default suite (it runs for a fixed time; the file name does not match ``test_*.py``):
run it with ``pytest tests/bench/load_short.py``. ``make loadtest`` checks the same things on full QM9
(no errors, no 5xx, ``coverage_problems``) and writes them to BENCHMARKS.md.
"""

import asyncio

from orientscope.server import create_app
from orientscope.store.datasets import read_molecule_columns
from tests.api.conftest import ServerThread
from tests.bench.loadtest import build_scenario, coverage_problems, drive
from tests.services.conftest import api_data  # noqa: F401  (shared session fixture)


def test_eight_users_for_five_seconds_get_no_errors(api_data):  # noqa: F811
    ids = [str(x) for x in read_molecule_columns(api_data, "qm9", ["id"])["id"]]
    with ServerThread(create_app(api_data, read_only=True)) as server:
        scenario = build_scenario(server.url, ids)
        result = asyncio.run(drive(server.url, scenario, users=8, duration_s=5.0, think=(0.0, 0.2), seed=1))
    assert result["server_errors"] == 0 and result["errors"] == 0, result["examples"]
    assert coverage_problems(result) == []
