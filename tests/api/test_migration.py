"""A dataset stored before the sharded layout is refused with the `orientscope migrate` hint, never migrated by
the server; after `orientscope migrate` it opens with the report its stored results held.

Served over real HTTP; the migration is the real command line.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from orientscope.pipeline.migrate import needs_migration
from orientscope.pipeline.precompute import make_params
from orientscope.services import cache
from orientscope.store import datasets as ds
from orientscope.store.results import ResultStore
from orientscope.store.shards import SHARD_SIZE_ENV
from tests.api.conftest import ServerThread
from tests.harness import wait_until

EXE = str(Path(sys.executable).parent / "orientscope")
HINT = "orientscope migrate old"
PAGES = [{"limit": 50, "offset": 30, "sort": "-classifier_score"}, {"limit": 7, "offset": 143}]


def get(client: httpx.Client, url: str, **params) -> dict:
    r = client.get(url, params=params)
    assert r.status_code == 200, r.text
    return r.json()


def answers(client: httpx.Client) -> dict:
    """What a user sees of dataset "old": its summary (the report), pages, one molecule and its neighbours."""
    out = {"summary": get(client, "/api/datasets/old/summary")}
    out["pages"] = [get(client, "/api/datasets/old/molecules", **p) for p in PAGES]
    mol_id = out["pages"][1]["items"][0]["id"]
    out["molecule"] = get(client, f"/api/datasets/old/molecules/{mol_id}")
    out["neighbours"] = [
        get(client, f"/api/datasets/old/neighbors/{mol_id}", by=by, k=5) for by in ("pose", "chemistry")
    ]
    return out


def stored_report(data: Path) -> tuple[dict, dict]:
    """(report, control) figures as the old store's result sections hold them, read without any reader of the layout."""
    store = ResultStore(data, "old", make_params(seed=0))
    report, control = {}, {}
    for stage in store.completed_stages():
        report.update(store.section(stage).get("report", {}))
        control.update(store.section(stage).get("control", {}))
    return report, control


@pytest.fixture()
def data(tmp_path, old_layout_store, monkeypatch):
    """The old store copied into a data folder; shards of 40 once migrated."""
    monkeypatch.setenv(SHARD_SIZE_ENV, "40")
    shutil.copytree(old_layout_store, tmp_path / "data")
    yield tmp_path / "data"
    cache.clear_cache()


def test_an_old_layout_dataset_is_refused_with_the_hint_and_after_migrate_opens_with_the_same_report(data):
    from orientscope.server import create_app

    report, control = stored_report(data)
    app = create_app(data, dashboard=False, warm=True)
    with ServerThread(app) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        listed = {d["id"]: d for d in get(client, "/api/datasets")}
        assert listed["old"]["status"] == "needs_migration" and HINT in listed["old"]["message"]
        for url in ("/api/datasets/old/summary", "/api/datasets/old/molecules", "/api/datasets/old/map"):
            r = client.get(url)
            assert r.status_code == 409 and HINT in r.json()["detail"], (url, r.status_code, r.text)
        # 600 s: a bound for a busy machine, not a timing assertion
        wait_until(lambda: not get(client, "/api/health")["warming"], 600, "the warm-up to end", 0.2)
        assert get(client, "/api/health")["datasets"]["needs_migration"] == 1
    assert needs_migration(data, "old")  # the server converted nothing

    refused = subprocess.run([EXE, "report", "old", "--data-dir", str(data)], capture_output=True, text=True)
    assert refused.returncode != 0 and HINT in refused.stderr
    done = subprocess.run([EXE, "migrate", "old", "--data-dir", str(data)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert [s["n_molecules"] for s in ds.read_meta(data, "old")["shards"]] == [40, 40, 40, 30]

    with ServerThread(create_app(data, dashboard=False)) as server:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            assert get(client, "/api/datasets/old")["status"] == "ready"
            summary = get(client, "/api/datasets/old/summary")
    assert summary["n_molecules"] == 150
    for key in ("kl", "kl_sign_invariant", "ks", "n_degenerate", "classifiers", "regression", "reference_molecule"):
        assert summary[key] == report[key], key
    for key in ("kl", "kl_sign_invariant", "ks", "classifiers"):
        assert summary["control"][key] == control[key], key


def test_migrate_writes_the_read_arrays_and_a_server_answers_the_same_without_them(data, tmp_path, monkeypatch):
    """`orientscope migrate` writes every result's memory-mapped columns and map (``pipeline.read_arrays``); a copy
    of the migrated store without them (as the layout migration alone left it) has them written on first open,
    and both answer the same: summary, pages, molecule, neighbours (per-shard fingerprints) and the map."""
    from orientscope.server import create_app

    done = subprocess.run([EXE, "migrate", "old", "--data-dir", str(data)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    results = sorted((ds.dataset_dir(data, "old") / "results").iterdir())
    assert f"columns and map arrays current for {len(results)} result(s)" in done.stdout and len(results) == 2
    for result in results:  # the active one and a --limit one
        assert (result / "columns" / "columns.json").is_file()
        assert all((result / "map" / table / "map.json").is_file() for table in ("original", "control"))
    again = subprocess.run([EXE, "migrate", "old", "--data-dir", str(data)], capture_output=True, text=True)
    assert again.returncode == 0 and "already sharded" in again.stdout  # run twice: nothing to convert
    bare = tmp_path / "bare"
    shutil.copytree(data, bare)
    shutil.rmtree(ResultStore(bare, "old", make_params(seed=0)).dir / "columns")
    shutil.rmtree(ResultStore(bare, "old", make_params(seed=0)).dir / "map")
    monkeypatch.setenv("ORIENTSCOPE_COLUMNS_DIR", str(tmp_path / "columns"))
    seen = []
    for where in (data, bare):
        cache.clear_cache()
        with ServerThread(create_app(where, read_only=True, dashboard=False)) as server:
            with httpx.Client(base_url=server.url, timeout=60) as client:
                out = answers(client)
                drawn = client.get("/api/datasets/old/map")
                assert drawn.status_code == 200, drawn.text
                out["map"] = drawn.content
                seen.append(out)
    assert seen[1] == seen[0]
    assert (ResultStore(bare, "old", make_params(seed=0)).dir / "columns" / "columns.json").is_file()
