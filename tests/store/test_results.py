import pandas as pd
import pytest

from orientscope.core.errors import NotFoundError
from orientscope.store.results import ResultStore, list_result_keys, result_key

PARAMS = {"frame": "pca", "sign": "max", "seed": 3, "limit": None}


def test_result_key_names_every_parameter():
    assert result_key(PARAMS) == "pca-max-s3"
    assert result_key({**PARAMS, "limit": 50}) == "pca-max-s3-n50"


def test_stage_counts_only_once_the_manifest_names_it(tmp_path, monkeypatch):
    (tmp_path / "datasets" / "d1").mkdir(parents=True)
    store = ResultStore(tmp_path, "d1", PARAMS)
    store.write_stage("frames", {"report": {"a": 1}}, {"t": pd.DataFrame({"x": [1, 2]})}, 0.1, {"k": 5})
    assert store.completed("frames")
    assert store.section("frames")["report"] == {"a": 1}
    assert store.table("frames", "t").num_rows == 2
    manifest = store.manifest()
    assert manifest["params"] == PARAMS and manifest["seed"] == 3 and manifest["version"]
    assert manifest["stages"]["frames"]["rows"] == {"t": 2}

    # Simulated crash after the data files but before the manifest update.
    from orientscope.store import results as mod

    real = mod.atomic_write_json

    def crash_on_manifest(path, obj):
        if path.name == "manifest.json":
            raise KeyboardInterrupt("killed")
        return real(path, obj)

    monkeypatch.setattr(mod, "atomic_write_json", crash_on_manifest)
    with pytest.raises(KeyboardInterrupt):
        store.write_stage("statistics", {"report": {}}, {}, 0.1)
    monkeypatch.setattr(mod, "atomic_write_json", real)
    assert not store.completed("statistics")
    assert store.completed("frames")
    with pytest.raises(NotFoundError, match="statistics"):
        store.section("statistics")
    assert list_result_keys(tmp_path, "d1") == ["pca-max-s3"]
