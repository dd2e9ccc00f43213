"""A writable server migrates single-folder datasets to shards in the background; a read-only one never does.

Both serve a copy of the same single-folder store over real HTTP; answers are
the same before and after the migration.
"""

from __future__ import annotations

import shutil
import time

import httpx
import pytest

from orientscope.pipeline.migrate import needs_migration
from orientscope.services import cache
from orientscope.store import datasets as ds
from orientscope.store.shards import SHARD_SIZE_ENV
from tests.api.conftest import ServerThread

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


@pytest.fixture()
def stores(tmp_path, old_layout_store, monkeypatch):
    monkeypatch.setenv(SHARD_SIZE_ENV, "40")
    for name in ("read-only", "writable"):
        shutil.copytree(old_layout_store, tmp_path / name)
    yield tmp_path / "read-only", tmp_path / "writable"
    cache.clear_cache()


def test_read_only_server_serves_the_old_layout_and_never_migrates(stores):
    from orientscope.server import create_app

    read_only, _ = stores
    app = create_app(read_only, read_only=True, dashboard=False, migrate=True)
    assert app.state.migration is None
    with ServerThread(app) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        seen = answers(client)
        assert seen["summary"]["n_molecules"] == 150 and "kl" in seen["summary"]
        assert client.get("/api/datasets/old").json()["status"] == "ready"
    assert needs_migration(read_only, "old")


def test_writable_server_migrates_in_the_background_and_answers_the_same(stores):
    from orientscope.server import create_app

    read_only, writable = stores
    with ServerThread(create_app(read_only, read_only=True, dashboard=False)) as server:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            before = answers(client)
    app = create_app(writable, dashboard=False, migrate=True, warm=True)
    with ServerThread(app) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        deadline = time.monotonic() + 600  # a bound for a busy machine, not a timing assertion
        while get(client, "/api/health")["warming"] and time.monotonic() < deadline:  # served meanwhile
            time.sleep(0.2)
        # The warm-up waits for the migration, so once it is over the new layout is in place.
        assert not get(client, "/api/health")["warming"] and not app.state.migration.is_alive()
        meta = ds.read_meta(writable, "old")
        assert meta["layout"] == "sharded" and [s["n_molecules"] for s in meta["shards"]] == [40, 40, 40, 30]
        after = answers(client)
        assert client.get("/api/datasets/old").json()["status"] == "ready"
    assert after == before


def test_a_migrated_dataset_served_from_memory_mapped_columns_answers_the_same(stores, tmp_path, monkeypatch):
    """The large-set serving path (ColumnView, per-shard fingerprints) reads the re-cut results too."""
    from orientscope.pipeline.migrate import migrate_dataset
    from orientscope.server import create_app

    read_only, writable = stores
    with ServerThread(create_app(read_only, read_only=True, dashboard=False)) as server:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            before = answers(client)
    migrate_dataset(writable, "old")
    monkeypatch.setenv("ORIENTSCOPE_COLUMNS_DIR", str(tmp_path / "columns"))
    monkeypatch.setenv(cache.COLUMN_VIEW_ABOVE_ENV, "1")
    assert isinstance(cache.get_view(writable, "old"), cache.ColumnView)
    with ServerThread(create_app(writable, read_only=True, dashboard=False)) as server:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            after = answers(client)
    assert after == before
