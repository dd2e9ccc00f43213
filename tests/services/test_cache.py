"""The view cache: alignment with the frames table, invalidation, LRU and unknown ids."""

import numpy as np
import pandas as pd
import pytest

from backend.core.errors import NotFoundError
from backend.pipeline.precompute import make_params, precompute
from backend.services.cache import ViewCache, get_view
from backend.services.results import open_result
from tests.services.conftest import TOY_IDS, TOY_SCORES, toy_set


def test_view_is_aligned_with_the_stored_molecules(toy_dir):
    view = get_view(toy_dir, "toy")
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
    from backend.store.datasets import save_dataset

    save_dataset(tmp_path, "sub", toy_set(), name="Sub", source="constructed")
    precompute(tmp_path, "sub", make_params(seed=0, limit=3), stages=["frames"])
    view = get_view(tmp_path, "sub")
    assert len(view) == 3
    mols = toy_set()
    for i, mol_id in enumerate(view.ids):
        np.testing.assert_array_equal(view.atoms(i)[1], mols.atoms_of(mols.index_of(mol_id))[1])


def test_view_is_rebuilt_when_the_manifest_changes(tmp_path):
    from backend.store.datasets import save_dataset

    save_dataset(tmp_path, "t", toy_set(), name="T", source="constructed")
    precompute(tmp_path, "t", make_params(seed=0), stages=["frames"])
    cache = ViewCache()
    first = cache.get(tmp_path, "t")
    assert cache.get(tmp_path, "t") is first
    open_result(tmp_path, "t").write_stage(
        "models", {}, {"scores": pd.DataFrame({"id": TOY_IDS, "classifier_score": TOY_SCORES})}, 0.0
    )
    second = cache.get(tmp_path, "t")
    assert second is not first and second.has_stage("models")
    np.testing.assert_allclose(second.scores, TOY_SCORES)


def test_lru_keeps_at_most_max_views(toy_dir):
    cache = ViewCache(max_views=1)
    a = cache.get(toy_dir, "toy")
    cache.get(toy_dir, "plain")
    assert cache.get(toy_dir, "toy") is not a


@pytest.mark.parametrize("dataset_id", ["nosuch", "../etc", "UPPER"])
def test_unknown_or_malformed_ids_are_not_found(toy_dir, dataset_id):
    with pytest.raises(NotFoundError, match="unknown dataset"):
        get_view(toy_dir, dataset_id)


def test_unknown_molecule_names_it(toy_dir):
    with pytest.raises(NotFoundError, match="'nope'.*'toy'"):
        get_view(toy_dir, "toy").row_of("nope")
