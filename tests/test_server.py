"""Server process settings: warming the store, then exempting it from garbage collection; the factory's write rule;
two malloc arenas."""

import ctypes
import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orientscope.science.nearest_point import _nearest
from orientscope.server import MALLOC_ARENAS, _warm
from orientscope.services.cache import get_view
from orientscope.services.map_raster import _region_stats
from tests.harness import wait_until
from tests.services.conftest import api_data  # noqa: F401  (shared session fixture)

# Starlette's TestClient sends this Host; the server answers it only when told to, as for a tunnel's name.
TEST_CLIENT_HOST = ("testserver",)


def test_warming_loads_the_store_then_freezes_it_out_of_garbage_collection(api_data):  # noqa: F811
    gc.unfreeze()
    try:
        _warm(api_data, delay_s=0)
        view = get_view(api_data, "qm9")  # the warmed view, from the read cache
        assert gc.is_tracked(view)
        assert gc.get_freeze_count() > 0
        assert _region_stats.signatures and _nearest.signatures  # the map kernels were compiled
        # the SMARTS index is built: the first search does not wait for it (it took 14 s on QM9, issue 40)
        assert len(view.extra("smarts_index", lambda: pytest.fail("the warm-up left the index out"))) == len(view)
        # Frozen objects are in no generation, so no later collection walks them.
        assert not any(o is view for o in gc.get_objects())
        late = [view]  # made after the freeze: collected as usual
        assert any(o is late for o in gc.get_objects())
    finally:
        gc.unfreeze()


def test_warming_imports_the_hover_previews_drawing_code(api_data):  # noqa: F811
    # in a process of its own: another test may have drawn a depiction in this one already
    code = (
        "import sys; from pathlib import Path; from orientscope.server import _warm;"
        f"_warm(Path({str(api_data)!r}), delay_s=0); print('rdkit.Chem.Draw.rdMolDraw2D' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True)
    assert out.stdout.strip().splitlines()[-1] == "True"


# The factory as `uvicorn --factory` runs it, in a process of its own: a served app tunes its process (switch
# interval, malloc arenas) and starts its warm-up thread, none of which may happen inside pytest.
_FACTORY = """
import json, os, sys, threading
from orientscope.core.settings import UnsafeServerError
from orientscope.server import app_from_env
for env in json.loads(sys.argv[1]):
    os.environ.update(env)
    try:
        app = app_from_env()
    except UnsafeServerError as err:
        print(json.dumps({"refused": str(err)}))
        continue
    threads = [t.name for t in threading.enumerate()]
    print(json.dumps({"read_only": app.state.settings.read_only, "switch_s": sys.getswitchinterval(), "threads": threads}))
"""


def test_factory_applies_the_write_rule_and_tunes_its_process(tmp_path):
    from orientscope.server import GIL_SWITCH_S

    env = {k: v for k, v in os.environ.items() if not k.startswith("ORIENTSCOPE_")}
    env["ORIENTSCOPE_DATA_DIR"] = str(tmp_path)
    steps = [
        {},
        {"ORIENTSCOPE_HOST": "0.0.0.0"},
        {"ORIENTSCOPE_READ_ONLY": "1"},
        # What `serve --workers N` hands its workers: one value, which overrides the single variables.
        {"ORIENTSCOPE_SETTINGS": json.dumps({"read_only": False, "data_dir": str(tmp_path)})},
        {"ORIENTSCOPE_SETTINGS": json.dumps({"read_only": True, "host": "127.0.0.1", "data_dir": str(tmp_path)})},
    ]  # each adds to the last
    root = Path(__file__).resolve().parents[1]  # `python -c` imports from its working directory
    done = subprocess.run(
        [sys.executable, "-c", _FACTORY, json.dumps(steps)], env=env, cwd=root, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    unknown, public, read_only, serialised_writable, serialised = (
        json.loads(line) for line in done.stdout.splitlines()
    )
    # uvicorn does not pass its address to the factory: unknown counts as reachable.
    assert "ORIENTSCOPE_TOKEN" in unknown["refused"]
    assert "--read-only" in public["refused"]
    assert read_only["read_only"] and read_only["switch_s"] == GIL_SWITCH_S
    assert "orientscope-warm" in read_only["threads"]
    assert "--read-only" in serialised_writable["refused"]  # ORIENTSCOPE_READ_ONLY=1 overridden
    assert serialised["read_only"]


_ARENAS = """
import ctypes, sys, tempfile, threading
import numpy as np
if sys.argv[1] == "limit":
    from orientscope.server import limit_malloc_arenas
    assert limit_malloc_arenas()
barrier = threading.Barrier(8)
def work():
    barrier.wait()
    keep = [np.ones(2000) for _ in range(200)]  # 16 kB blocks: below the mmap threshold, from an arena
    barrier.wait()
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
with tempfile.NamedTemporaryFile(suffix=".xml") as f:
    fp = ctypes.c_void_p(libc.fopen(f.name.encode(), b"w"))
    libc.malloc_info(0, fp)
    libc.fclose(fp)
    print(open(f.name).read().count("<heap nr="))
"""


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "malloc_info"), reason="glibc only")
def test_a_serving_process_keeps_its_threads_to_two_malloc_arenas():
    def arenas(mode: str) -> int:
        root = Path(__file__).resolve().parents[1]  # `python -c` imports from its working directory
        done = subprocess.run(
            [sys.executable, "-c", _ARENAS, mode], capture_output=True, text=True, check=True, cwd=root
        )
        return int(done.stdout)

    assert arenas("default") > MALLOC_ARENAS  # eight allocating threads: glibc would give them their own
    assert arenas("limit") <= MALLOC_ARENAS


def test_health_says_warming_until_the_background_warm_up_ends(api_data):  # noqa: F811

    from fastapi.testclient import TestClient

    from orientscope.server import create_app

    gc.unfreeze()
    try:
        with TestClient(create_app(api_data, dashboard=False, warm=True, allowed_hosts=TEST_CLIENT_HOST)) as client:
            seen = []
            warmed = lambda: seen.append(client.get("/api/health").json()["warming"]) or seen[-1] is False  # noqa: E731
            wait_until(warmed, timeout_s=300, what="the warm-up to end", poll_s=0.2)
        assert seen[0] is True and seen[-1] is False  # the thread waits 2 s before it starts loading
        with TestClient(
            create_app(api_data, dashboard=False, allowed_hosts=TEST_CLIENT_HOST)
        ) as client:  # no warm-up asked: never warming
            assert client.get("/api/health").json()["warming"] is False
    finally:
        gc.unfreeze()


def test_the_server_module_defers_datashader_and_scipy_stats_to_first_use():
    """Importing the server (what `orientscope serve` does before `/api/health` answers) leaves out datashader
    (with dask.dataframe) and scipy.stats, about 1.5 s of its start: the warm-up or the first request that
    needs them imports them."""
    heavy = ["datashader", "dask.dataframe", "scipy.stats"]
    code = f"import json, sys, orientscope.server; print(json.dumps([m for m in {heavy!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
