"""A SMARTS pattern on a large sharded set: the map says the search runs, the page follows the job, then
the map shows the matches from the kept result.

A small sharded set (3 shards) stands in for a large one: ``ORIENTSCOPE_SMARTS_JOB_ABOVE`` is lowered.
"""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from orientscope.app import ids, smarts_progress
from orientscope.figures.mapview import map_layers
from orientscope.figures.state import ViewState
from orientscope.pipeline.sharded_ingest import ingest_files
from orientscope.pipeline.smarts_jobs import SMARTS_JOB_ABOVE_ENV
from orientscope.pipeline.synth import SynthSpec, write_synth
from orientscope.services import cache, jobs
from orientscope.services.bytecache import shared_cache
from tests.api.conftest import ServerThread

N = 1200


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory, qm9_small):
    root = tmp_path_factory.mktemp("smarts-app")
    write_synth(root / "npz", SynthSpec(n=N, bias="qm9", seed=4, shard_size=500), source=qm9_small)
    ingest_files(root / "data", [root / "npz"], "big", cluster="in-process", shard_size=500)
    mp = pytest.MonkeyPatch()
    mp.setenv(SMARTS_JOB_ABOVE_ENV, "500")
    mp.setenv("ORIENTSCOPE_EXPORT_DIR", str(root / "exports"))
    yield root / "data"
    mp.undo()
    cache.clear_cache()
    shared_cache().clear()


def test_the_map_draws_without_the_pattern_while_the_search_runs_then_with_its_matches(data_dir):
    st = ViewState(dataset="big", smarts="[#7]~[#6]", view="map")
    pending = map_layers(data_dir, st)
    assert pending.pending and pending.n_matches is None and pending.errors == []
    assert any("runs in the background" in note for note in pending.notes)
    job, poll_disabled, text, done = smarts_progress.follow(data_dir, {"dataset": "big", "smarts": "[#7]~[#6]"})
    if job is not None:  # still running: the page polls it
        assert job["job_id"].startswith("q") and poll_disabled is False and text.startswith("SMARTS search")
        finished = jobs.manager(data_dir).wait(job["job_id"])
        assert finished["state"] == "done" and finished["shards"] == [3, 3]
    shown = map_layers(data_dir, st)
    assert not shown.pending and 50 < shown.n_matches < N
    assert map_layers(data_dir, st) is shown  # now cached like any view
    job, poll_disabled, text, done = smarts_progress.follow(data_dir, {"dataset": "big", "smarts": "[#7]~[#6]"})
    assert (job, poll_disabled, text) == (None, True, "") and done["job_id"].startswith("q")
    np.testing.assert_array_equal(np.flatnonzero(shown.match).size, shown.n_matches)


def test_a_view_without_a_pattern_or_with_a_bad_one_follows_no_job(data_dir):
    for asked in (None, {}, {"dataset": "big", "smarts": "C("}):
        assert smarts_progress.follow(data_dir, asked)[:3] == (None, True, "")
    assert map_layers(data_dir, ViewState(dataset="big", smarts="C(", view="map")).errors


def test_the_page_redraws_the_map_when_a_search_is_done(data_dir):
    from orientscope.server import create_app

    with (
        ServerThread(create_app(data_dir, dashboard=True)) as srv,
        httpx.Client(base_url=srv.url, timeout=60) as c,
    ):
        deps = c.get("/_dash-dependencies").json()
    draw = next(d for d in deps if f"{ids.MAP_PAINT}.data" in d["output"])
    assert {"id": ids.SMARTS_DONE, "property": "data"} in draw["inputs"]
    follow = next(d for d in deps if f"{ids.SMARTS_JOB}.data" in d["output"])
    assert follow["inputs"] == [{"id": ids.SMARTS_ASK, "property": "data"}]
