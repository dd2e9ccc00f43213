"""The byte-bounded cache: the bound holds, least recently used goes first, oversize items are not kept."""

import sys

import numpy as np
import pytest
from dash import html

from orientscope.services.bytecache import CACHE_MB_ENV, MB, ByteBudgetCache, budget_bytes, nbytes


def _block(n_bytes: int, fill: int = 0) -> np.ndarray:
    return np.full(n_bytes, fill, np.uint8)


def test_total_bytes_stay_within_the_budget_and_the_least_recently_used_go_first():
    cache = ByteBudgetCache(max_bytes=10_000)
    for i in range(5):
        cache.put("maps", i, _block(3_000, i))
        assert cache.current_bytes <= 10_000
    # 3 blocks of 3,000 fit in 10,000: the last three stay
    assert [cache.get("maps", i) is not None for i in range(5)] == [False, False, True, True, True]
    cache.get("maps", 2)  # touch: now 3 is the least recently used
    cache.put("figures", "a", _block(3_000))
    assert cache.get("maps", 3) is None and cache.get("maps", 2) is not None
    assert cache.current_bytes == 9_000


def test_an_item_larger_than_the_budget_is_served_but_not_kept():
    cache = ByteBudgetCache(max_bytes=1_000)
    cache.put("maps", "small", _block(400))
    builds = []

    def build():
        builds.append(1)
        return _block(5_000, 7)

    for _ in range(2):
        value = cache.get_or_build("maps", "big", build)
        assert value.size == 5_000 and value[0] == 7
    assert len(builds) == 2  # built each time, never cached
    assert cache.get("maps", "big") is None
    assert cache.get("maps", "small") is not None  # and it evicted nothing


def test_get_or_build_builds_once_and_keeps_none_results():
    cache = ByteBudgetCache(max_bytes=1_000)
    calls = []
    for _ in range(3):
        assert cache.get_or_build("codes", "k", lambda: calls.append(1)) is None
    assert len(calls) == 1


def test_clear_one_namespace():
    cache = ByteBudgetCache(max_bytes=10_000)
    cache.put("a", 1, _block(10))
    cache.put("b", 1, _block(10))
    cache.clear("a")
    assert cache.get("a", 1) is None and cache.get("b", 1) is not None


def test_nbytes_counts_arrays_strings_containers_and_shared_objects_once():
    arr = _block(1_000)
    assert nbytes(arr) == 1_000
    assert 2_000 <= nbytes({"x": arr, "y": _block(1_000)}) < 2_500
    assert nbytes([arr, arr]) < 1_200  # the same array twice counts once
    assert nbytes("a" * 5_000) >= 5_000

    class Sized:
        def cache_nbytes(self):
            return 123

    assert nbytes(Sized()) == 123
    assert nbytes(html.Div("x" * 3_000, id="d")) >= 3_000  # a component: what it sends


def test_nbytes_of_a_list_of_scalars_counts_every_element():
    ids = [f"gdb_{i:06d}" for i in range(10_000)]
    assert nbytes(ids) == sys.getsizeof(ids) + sum(sys.getsizeof(s) for s in ids)
    mixed = [1, 2.5, None, True, b"xy", "z" * 1_000]
    assert nbytes(mixed) == sys.getsizeof(mixed) + sum(sys.getsizeof(v) for v in mixed)
    assert nbytes(["a" * 1_000, _block(5_000)]) >= 6_000  # not all scalars: walked, the array counted in full


def test_budget_from_the_environment(monkeypatch):
    monkeypatch.delenv(CACHE_MB_ENV, raising=False)
    assert budget_bytes() == 256 * MB
    monkeypatch.setenv(CACHE_MB_ENV, "0.5")
    assert budget_bytes() == MB // 2
    for bad in ("lots", "-1"):
        monkeypatch.setenv(CACHE_MB_ENV, bad)
        with pytest.raises(ValueError, match=CACHE_MB_ENV):
            budget_bytes()


def test_a_zero_budget_keeps_nothing():
    cache = ByteBudgetCache(max_bytes=0)
    assert cache.put("a", 1, _block(1)) is False
    assert len(cache) == 0


def test_nbytes_of_frames_and_kd_trees():
    import pandas as pd
    from scipy.spatial import cKDTree

    df = pd.DataFrame({"x": np.zeros(10_000), "s": ["abc" * 10] * 10_000})
    assert nbytes(df) >= 80_000 + 10_000 * 8  # the floats and at least a pointer per string
    points = np.random.default_rng(0).random((10_000, 4))
    tree = cKDTree(points)
    assert nbytes(tree) >= points.nbytes + 10_000 * 8  # its own copy of the points and their order


def test_a_second_budget_reads_its_own_setting(monkeypatch):
    monkeypatch.setenv("ORIENTSCOPE_MAP_CACHE_MB", "2")
    monkeypatch.setenv(CACHE_MB_ENV, "3")
    assert budget_bytes("map_cache_mb") == 2 * MB
    monkeypatch.delenv("ORIENTSCOPE_MAP_CACHE_MB")
    assert budget_bytes("map_cache_mb") == 1024 * MB


def test_entry_size_is_the_size_kept():
    cache = ByteBudgetCache(max_bytes=10_000)
    cache.put("a", 1, _block(10), size=500)
    assert cache.entry_size("a", 1) == 500 and cache.entry_size("a", 2) is None
    cache.put("a", 1, cache.get("a", 1), size=700)  # re-weighed in place
    assert cache.entry_size("a", 1) == 700 and cache.current_bytes == 700


def test_memory_mapped_arrays_weigh_nothing_but_their_copies_do(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(1000, dtype=np.float64))
    mapped = np.load(tmp_path / "a.npy", mmap_mode="r")
    assert nbytes(mapped) == 0 and nbytes(mapped[10:20]) == 0
    assert nbytes(mapped[[1, 2, 3]]) == 24 and nbytes(np.array(mapped)) == 8000


def test_nbytes_of_scalar_dicts_and_object_arrays_counts_every_item():
    import sys

    ids = [f"gdb_{i}" for i in range(1_000, 3_000)]
    index = {mol_id: i for i, mol_id in enumerate(ids, start=1_000)}  # ints past the small-int cache
    expected = sys.getsizeof(index) + sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in index.items())
    assert nbytes(index) == expected
    smiles = np.array(["C" * (i % 30 + 1) for i in range(2_000)], dtype=object)
    assert nbytes(smiles) == smiles.nbytes + sum(sys.getsizeof(s) for s in smiles)
    numpy_keys = {k: v for k, v in zip(np.array(ids), range(1_000, 3_000), strict=True)}  # np.str_ keys
    assert nbytes(numpy_keys) == sys.getsizeof(numpy_keys) + sum(
        sys.getsizeof(k) + sys.getsizeof(v) for k, v in numpy_keys.items()
    )
    mixed = np.array([_block(100), "x"], dtype=object)  # not all scalars: recursed
    assert nbytes(mixed) >= 100
