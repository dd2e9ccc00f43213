"""The view cache: alignment with the frames table, invalidation, LRU and unknown ids."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest

from orientscope.core.errors import NotFoundError
from orientscope.pipeline.precompute import make_params, precompute
from orientscope.services.cache import ViewCache, get_view
from orientscope.services.results import open_result
from tests.services.conftest import TOY_IDS, TOY_SCORES, toy_set


def test_view_is_aligned_with_the_stored_molecules(toy_dir):
    view = get_view(toy_dir, "toy")
    assert view.resident and view.cache_nbytes() > 0  # small columns are read into memory, and counted
    mols = toy_set()
    assert list(view.ids) == TOY_IDS
    for i in range(len(view)):
        z, pos = view.atoms(i)
        np.testing.assert_array_equal(z, mols.atoms_of(i)[0])
        canonical = view.canonical_positions(i)
        np.testing.assert_allclose(canonical, (pos - view.centroids[i]) @ view.rotations[i].T)
    np.testing.assert_allclose(view.scores, TOY_SCORES)
    assert np.isnan(get_view(toy_dir, "plain").scores).all()


def test_result_with_a_limit_maps_rows_by_id(tmp_path):
    from orientscope.store.shards import save_sharded

    save_sharded(tmp_path, "sub", toy_set(), name="Sub", source="constructed")
    precompute(tmp_path, "sub", make_params(seed=0, limit=3), stages=["frames"])
    view = get_view(tmp_path, "sub")
    assert len(view) == 3
    mols = toy_set()
    for i, mol_id in enumerate(view.ids):
        np.testing.assert_array_equal(view.atoms(i)[1], mols.atoms_of(mols.index_of(mol_id))[1])


def test_view_is_rebuilt_when_the_manifest_changes(tmp_path):
    from orientscope.store.shards import save_sharded

    save_sharded(tmp_path, "t", toy_set(), name="T", source="constructed")
    precompute(tmp_path, "t", make_params(seed=0), stages=["frames"])
    cache = ViewCache()
    first = cache.get(tmp_path, "t")
    assert cache.get(tmp_path, "t") is first
    open_result(tmp_path, "t").write_stage(
        "models", {}, {"scores": pd.DataFrame({"id": TOY_IDS, "classifier_score": TOY_SCORES})}, 0.0
    )
    second = cache.get(tmp_path, "t")
    assert second is not first and "models" in second.manifest["stages"]
    np.testing.assert_allclose(second.scores, TOY_SCORES)


def _sizes(data_dir, ids):
    """Bytes of each dataset's freshly loaded view."""
    return [ViewCache(max_bytes=1 << 40).get(data_dir, i).cache_nbytes() for i in ids]


def test_views_are_bounded_by_bytes_not_count(toy_dir):
    toy, plain = _sizes(toy_dir, ["toy", "plain"])
    assert toy > 0 and plain > 0
    roomy = ViewCache(max_bytes=2 * (toy + plain))  # both fit: no count limit sends one away
    a, b = roomy.get(toy_dir, "toy"), roomy.get(toy_dir, "plain")
    assert roomy.get(toy_dir, "toy") is a and roomy.get(toy_dir, "plain") is b
    assert roomy.current_bytes == a.cache_nbytes() + b.cache_nbytes()
    tight = ViewCache(max_bytes=max(toy, plain) + min(toy, plain) // 2)  # room for one: the least recent goes
    a = tight.get(toy_dir, "toy")
    b = tight.get(toy_dir, "plain")
    assert tight.current_bytes == b.cache_nbytes()
    assert tight.get(toy_dir, "toy") is not a


def test_a_view_larger_than_the_budget_is_served_but_not_kept(toy_dir):
    (size,) = _sizes(toy_dir, ["toy"])
    cache = ViewCache(max_bytes=size - 1)
    first = cache.get(toy_dir, "toy")
    assert list(first.ids) == TOY_IDS and first.cache_nbytes() == size
    second = cache.get(toy_dir, "toy")
    assert second is not first and list(second.ids) == TOY_IDS
    assert cache.current_bytes == 0


def test_lazy_pieces_count_against_the_budget(toy_dir):
    cache = ViewCache(max_bytes=1 << 30)
    view = cache.get(toy_dir, "toy")
    loaded = cache.current_bytes
    assert loaded == view.cache_nbytes()
    view.extra("big_piece", lambda: np.zeros(100_000))  # 800,000 bytes
    assert cache.get(toy_dir, "toy") is view  # a hit re-weighs it
    assert cache.current_bytes == loaded + 800_000


def test_concurrent_gets_load_each_view_once_and_stay_aligned(toy_dir):
    cache = ViewCache(max_bytes=1 << 30)
    ids = ["toy", "plain"] * 16

    def get(dataset_id):
        view = cache.get(toy_dir, dataset_id)
        assert view.dataset_id == dataset_id and list(view.ids) == TOY_IDS
        return view

    with ThreadPoolExecutor(max_workers=8) as pool:
        views = list(pool.map(get, ids))
    assert len({id(v) for v in views if v.dataset_id == "toy"}) == 1  # one loader per dataset
    assert len({id(v) for v in views if v.dataset_id == "plain"}) == 1


def test_concurrent_gets_with_room_for_one_view_stay_correct(toy_dir):
    toy, plain = _sizes(toy_dir, ["toy", "plain"])
    cache = ViewCache(max_bytes=max(toy, plain) + min(toy, plain) // 2)  # the two datasets keep evicting each other
    rng = np.random.default_rng(0)
    ids = [str(x) for x in rng.choice(["toy", "plain"], 40)]

    def get(dataset_id):
        view = cache.get(toy_dir, dataset_id)
        return view.dataset_id, list(view.ids), view.cache_nbytes()

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(get, ids))
    assert [a[0] for a in answers] == ids and all(a[1] == TOY_IDS for a in answers)
    assert cache.current_bytes <= cache.max_bytes


@pytest.mark.parametrize("dataset_id", ["nosuch", "../etc", "UPPER"])
def test_unknown_or_malformed_ids_are_not_found(toy_dir, dataset_id):
    with pytest.raises(NotFoundError, match="unknown dataset"):
        get_view(toy_dir, dataset_id)


def test_unknown_molecule_names_it(toy_dir):
    with pytest.raises(NotFoundError, match="'nope'.*'toy'"):
        get_view(toy_dir, "toy").row_of("nope")


def _charged_set(n: int = 30):
    """``n`` constructed molecules cycling water, CO2, methane, benzene and asymmetric clouds, with total
    charges (-1, 0, +1, unknown) as an ion set's file gives them."""
    from orientscope.core.dataset import from_molecules
    from tests.molecules import CO2, METHANE, WATER, asymmetric, benzene

    shapes = [WATER, CO2, METHANE, benzene(), *(asymmetric(seed=s) for s in range(3))]
    mols = [shapes[i % len(shapes)] for i in range(n)]
    charges = np.array([[-1.0, 0.0, 1.0, np.nan][i % 4] for i in range(n)])
    ids = [f"m{i:03d}" for i in range(n)]
    props = pd.DataFrame({"energy": np.arange(n, dtype=float)})
    return from_molecules(mols, ids=ids, properties=props, charges=charges)


def test_a_limit_result_across_shards_reads_as_its_stored_tables(tmp_path, monkeypatch):
    """A --limit result's view holds the subset its frames hold, in their order, with atoms, charges, properties
    and scores of each id as the dataset's tables and the result's tables give them; its columns are written
    with the result (the precompute's read arrays)."""
    from orientscope.store.shards import SHARD_SIZE_ENV, save_sharded

    monkeypatch.setenv(SHARD_SIZE_ENV, "7")  # 30 molecules in 5 shards; the subset of 11 in 2 of its own
    mols = _charged_set()
    save_sharded(tmp_path, "ions", mols, name="Ions", source="constructed")
    params = make_params(seed=0, limit=11)
    store = precompute(tmp_path, "ions", params, stages=["frames"])
    assert (store.dir / "columns" / "columns.json").is_file()
    frames = store.table("frames", "original").to_pandas()
    ids = frames["id"].astype(str).tolist()
    scores = np.linspace(0.1, 0.9, len(ids))
    store.write_stage("models", {"report": {}}, {"scores": pd.DataFrame({"id": ids, "classifier_score": scores})}, 0.0)
    view = get_view(tmp_path, "ions")
    assert list(view.ids) == ids and len(view) == 11 and len(set(ids)) == 11
    np.testing.assert_allclose(view.scores, scores)  # the models stage came after: the columns were rebuilt
    for i, mol_id in enumerate(ids):
        row = mols.index_of(mol_id)
        assert view.row_of(mol_id) == i
        z, pos = view.atoms(i)
        np.testing.assert_array_equal(z, mols.atoms_of(row)[0])
        np.testing.assert_array_equal(pos, mols.atoms_of(row)[1])
        np.testing.assert_array_equal(view.cell("charges", i), mols.charge_of(row))
        assert view.cell("property_values", i)[0] == mols.properties["energy"][row]
        np.testing.assert_array_equal(
            view.cell("rotations", i),
            frames.loc[i, [f"r{a}{b}" for a in range(3) for b in range(3)]].to_numpy(float).reshape(3, 3),
        )
    with pytest.raises(NotFoundError, match="m001"):  # in the dataset, not in the subset
        view.row_of("m001")


def test_a_store_written_without_columns_gets_them_on_first_open(tmp_path):
    """A result stored before the pipeline wrote columns (no ``columns/``) opens: they are written then, into it."""
    import shutil

    from orientscope.store.shards import save_sharded

    save_sharded(tmp_path, "t", toy_set(), name="T", source="constructed")
    store = precompute(tmp_path, "t", make_params(seed=0), stages=["frames"])
    shutil.rmtree(store.dir / "columns")
    view = ViewCache().get(tmp_path, "t")
    assert view.columns_dir == store.dir / "columns" and (view.columns_dir / "columns.json").is_file()
    assert list(view.ids) == TOY_IDS
    np.testing.assert_array_equal(view.atoms(3)[1], toy_set().atoms_of(3)[1])
