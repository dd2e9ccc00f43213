"""Server process settings: warming the store, then exempting it from garbage collection."""

import gc

from backend.server import _warm
from backend.services.cache import get_view
from tests.services.conftest import api_data  # noqa: F401  (shared session fixture)


def test_warming_loads_the_store_then_freezes_it_out_of_garbage_collection(api_data):  # noqa: F811
    gc.unfreeze()
    try:
        _warm(api_data, delay_s=0)
        view = get_view(api_data, "qm9")  # the warmed view, from the read cache
        assert gc.is_tracked(view)
        assert gc.get_freeze_count() > 0
        # Frozen objects are in no generation, so no later collection walks them.
        assert not any(o is view for o in gc.get_objects())
        late = [view]  # made after the freeze: collected as usual
        assert any(o is late for o in gc.get_objects())
    finally:
        gc.unfreeze()
