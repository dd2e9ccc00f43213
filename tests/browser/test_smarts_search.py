"""A SMARTS pattern typed on a large sharded set: the search runs as a job, then the map highlights its matches.

A small sharded set (3 shards) stands in for a large one: the server's
``ORIENTSCOPE_SMARTS_JOB_ABOVE`` is lowered below its size.
"""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from orientscope.pipeline.engine import Engine, parse_cluster
from orientscope.pipeline.precompute import make_params
from orientscope.pipeline.shard_smarts import search_shards
from orientscope.pipeline.sharded_ingest import ingest_files
from orientscope.pipeline.synth import SynthSpec, write_synth
from orientscope.store.results import ResultStore
from tests.browser.chrome import PageRequests, map_traces, serve
from tests.browser.pages import open_page, wait_for

pytestmark = pytest.mark.browser
N = 1200


@pytest.fixture(scope="module")
def big(tmp_path_factory, qm9_small):
    """(data dir, the C=O matches' count, server URL)."""
    root = tmp_path_factory.mktemp("smarts-browser")
    write_synth(root / "npz", SynthSpec(n=N, bias="qm9", seed=4, shard_size=500), source=qm9_small)
    meta = ingest_files(root / "data", [root / "npz"], "big", cluster="in-process", shard_size=500)
    with Engine(parse_cluster("in-process")) as engine:
        found = search_shards(engine, ResultStore(root / "data", meta["id"], make_params()).dir, "C=O")
    env = {"ORIENTSCOPE_SMARTS_JOB_ABOVE": "500", "ORIENTSCOPE_EXPORT_DIR": str(root / "exports")}
    with serve(root / "data", env=env) as url:
        yield root / "data", len(found.indices), url


def test_a_pattern_on_a_large_set_is_searched_in_the_background_then_highlighted(driver, big):
    _, n_match, url = big
    assert 50 < n_match < N
    open_page(driver, url + "/?dataset=big&view=map")
    requests = PageRequests(driver)  # only what the search asks for is checked
    box = driver.find_element(By.ID, "smarts")
    box.clear()
    box.send_keys("C=O", Keys.ENTER)
    wait_for(
        lambda: next(t for t in map_traces(driver) if t["kind"] == "highlight")["n"] == 3 * n_match,
        what="highlighted matches",
    )
    # The map may draw the kept result before the progress line's next poll says the job is done.
    wait_for(
        lambda: (t := driver.find_element(By.ID, "smarts-progress").text) == "" or t.startswith("SMARTS search done"),
        what="the progress line to say the search is done",
    )
    assert requests.off_origin(url) == []
    urls = requests.urls()
    # One job searched the pattern: the page followed it at /api/jobs, or found it already done.
    assert len({u.rsplit("/", 1)[1] for u in urls if "/api/jobs/q" in u}) <= 1
