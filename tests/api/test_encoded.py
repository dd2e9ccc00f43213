"""Hot-read answers: gzip encoded once, orjson records, and cold reads kept off the event loop."""

import asyncio
import json
import threading

import pytest

from orientscope.api.encoded import answer
from orientscope.services.cache import WouldBlock, clear_cache, warm_only
from orientscope.services.datasets import summary_json


def test_summary_is_the_same_object_with_and_without_gzip(client):
    zipped = client.get("/api/datasets/qm9/summary", headers={"Accept-Encoding": "gzip"})
    plain = client.get("/api/datasets/qm9/summary", headers={"Accept-Encoding": "identity"})
    assert zipped.headers["content-encoding"] == "gzip"
    assert "content-encoding" not in plain.headers
    assert "accept-encoding" in zipped.headers["vary"].lower()
    assert zipped.json() == plain.json()
    assert int(zipped.headers["content-length"]) < len(plain.content)


def test_molecule_record_is_plain_json_with_nulls_for_missing_values(client):
    r = client.get("/api/datasets/qm9/molecules/1")
    body = json.loads(r.content)  # strict parser: NaN would not load here
    assert r.headers["content-type"] == "application/json"
    assert body["id"] == "1"
    assert len(body["rotation"]) == 3 and all(len(row) == 3 for row in body["rotation"])


def test_warm_only_refuses_to_load_and_answer_loads_in_a_worker_thread(api_data):
    clear_cache()
    with pytest.raises(WouldBlock):
        warm_only(summary_json, api_data, "qm9")

    loaded_on = []

    def traced(data_dir, dataset_id):
        loaded_on.append(threading.current_thread())
        return summary_json(data_dir, dataset_id)

    raw = asyncio.run(answer(traced, api_data, "qm9"))
    assert json.loads(raw)["dataset"] == "qm9"
    # First the inline attempt on the loop's thread, which gave up; then the real call on a worker.
    assert loaded_on[0] is threading.main_thread() and loaded_on[-1] is not threading.main_thread()
    # Now warm: answered inline, without a thread.
    assert warm_only(summary_json, api_data, "qm9") == raw
