"""The landing page's density pair is built once: cached per view state and map data (not per layers object,
which a large view is too big to keep), and built by the server's warm-up before the first visitor."""

import gc

import pytest

from orientscope.app.first_paint import page_first_paint, warm_landing
from orientscope.app.initial_view import resolve_view
from orientscope.figures import mapfigure
from orientscope.server import _warm
from orientscope.services.bytecache import shared_cache


@pytest.fixture
def binnings(monkeypatch):
    """How many times the density view binned its points."""
    calls = []
    real = mapfigure.density_grids

    def counted(point_sets, region=None):
        calls.append(len(point_sets))
        return real(point_sets, region)

    monkeypatch.setattr(mapfigure, "density_grids", counted)
    shared_cache().clear()
    yield calls
    shared_cache().clear()


def test_the_density_pair_is_reused_when_its_layers_were_not_kept(qm9_store, binnings):
    st = resolve_view(qm9_store, "").state
    assert st.view == "density"  # the landing view
    first, layers = mapfigure.density_pair_json(qm9_store, st)
    assert binnings == [2]  # the dataset and its control, binned together
    shared_cache().clear("map_layers")  # as a 10M-molecule view's layers (30M points) would not be kept
    again, rebuilt = mapfigure.density_pair_json(qm9_store, st)
    assert rebuilt is not layers
    assert again is first and binnings == [2]
    # another view state is another density
    other = st.with_(axes="1")
    mapfigure.density_pair_json(qm9_store, other)
    assert binnings == [2, 2]


def test_the_warm_up_builds_the_landing_pages_first_paint(qm9_store, binnings):
    gc.unfreeze()
    try:
        _warm(qm9_store, delay_s=0, landing=warm_landing)
    finally:
        gc.unfreeze()
    assert binnings == [2]
    page = page_first_paint(qm9_store, "")
    assert '"maps":' in page.body  # the density pair's static paint
    assert binnings == [2]  # from the warm-up's cache


def test_the_landing_pages_density_paint_is_written_once_per_density_pair(qm9_store, binnings, monkeypatch):
    from orientscope.app import plane_paint

    written = []
    real = plane_paint.density_map
    monkeypatch.setattr(plane_paint, "density_map", lambda payload: written.append(1) or real(payload))
    page = page_first_paint(qm9_store, "")
    assert page_first_paint(qm9_store, "") == page and written == [1, 1]  # the dataset's map and its control's
    shared_cache().clear("density_pair")  # a new pair (e.g. a dataset recomputed) is painted again
    assert page_first_paint(qm9_store, "") == page and written == [1, 1, 1, 1] and binnings == [2, 2]
