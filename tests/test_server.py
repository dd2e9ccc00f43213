"""Server process settings: warming the store, then exempting it from garbage collection; the factory's write rule."""

import gc

import pytest

from backend.server import _warm
from backend.services.cache import get_view
from backend.services.map_raster import _nearest, _region_stats
from tests.services.conftest import api_data  # noqa: F401  (shared session fixture)


def test_warming_loads_the_store_then_freezes_it_out_of_garbage_collection(api_data):  # noqa: F811
    gc.unfreeze()
    try:
        _warm(api_data, delay_s=0)
        view = get_view(api_data, "qm9")  # the warmed view, from the read cache
        assert gc.is_tracked(view)
        assert gc.get_freeze_count() > 0
        assert _region_stats.signatures and _nearest.signatures  # the map kernels were compiled
        # Frozen objects are in no generation, so no later collection walks them.
        assert not any(o is view for o in gc.get_objects())
        late = [view]  # made after the freeze: collected as usual
        assert any(o is late for o in gc.get_objects())
    finally:
        gc.unfreeze()


def test_factory_applies_the_write_rule(tmp_path, monkeypatch):
    from backend.core.settings import UnsafeServerError
    from backend.server import app_from_env

    monkeypatch.setenv("ORIENTSCOPE_DATA_DIR", str(tmp_path))
    for name in (
        "ORIENTSCOPE_TOKEN",
        "ORIENTSCOPE_READ_ONLY",
        "ORIENTSCOPE_HOST",
        "ORIENTSCOPE_ALLOW_ANONYMOUS_WRITES",
    ):
        monkeypatch.delenv(name, raising=False)
    # uvicorn does not pass its address to the factory: unknown counts as reachable.
    with pytest.raises(UnsafeServerError, match="ORIENTSCOPE_TOKEN"):
        app_from_env()
    monkeypatch.setenv("ORIENTSCOPE_HOST", "0.0.0.0")
    with pytest.raises(UnsafeServerError, match="--read-only"):
        app_from_env()
    monkeypatch.setenv("ORIENTSCOPE_READ_ONLY", "1")
    assert app_from_env().state.settings.read_only
