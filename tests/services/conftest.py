"""A data dir with the small real-QM9 store plus a constructed "toy" dataset.

"toy" holds tiny molecules with known answers and, written here, the optional
stages other parts of the pipeline add (models scores, chemistry molecules,
fingerprints and groups), so the read services are tested on exact values.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.molecules import CO2, METHANE, WATER, asymmetric, benzene

TOY_IDS = ["water", "co2", "methane", "benzene", "a1", "a2", "a3", "a4"]
TOY_SMILES = ["O", "O=C=O", "C", "c1ccccc1", "", "", "", ""]
# 8-bit fingerprints with known Tanimoto similarities to "water" (row 0).
TOY_FPS = np.array(
    [
        [1, 1, 1, 1, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 0, 0, 0],  # 3/4
        [1, 1, 0, 0, 0, 0, 0, 0],  # 2/4
        [1, 0, 0, 0, 0, 0, 0, 1],  # 1/5
        [0, 0, 0, 0, 1, 1, 1, 1],  # 0
        [1, 1, 1, 1, 1, 0, 0, 0],  # 4/5
        [0, 0, 0, 0, 0, 0, 0, 0],  # 0
        [1, 1, 1, 1, 0, 0, 0, 0],  # 1
    ],
    dtype=bool,
)
TOY_SCORES = [0.9, 0.1, 0.5, 0.7, 0.2, 0.3, 0.8, 0.6]
TOY_SCAFFOLDS = ["", "", "", "c1ccccc1", "s1", "s1", "s2", "s1"]


def toy_set():
    from orientscope.core.dataset import from_molecules

    mols = [WATER, CO2, METHANE, benzene(), *(asymmetric(seed=s) for s in range(4))]
    props = pd.DataFrame({"energy": np.arange(8, dtype=float) - 3.0})
    return from_molecules(mols, ids=TOY_IDS, smiles=TOY_SMILES, properties=props, property_units={"energy": "eV"})


def add_toy(data_dir: Path) -> None:
    """Store "toy" with the frames stage, then the optional stages as other engineers' stages write them."""
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.store.results import ResultStore
    from orientscope.store.shards import save_sharded

    save_sharded(data_dir, "toy", toy_set(), name="Toy", source="constructed")
    params = make_params(seed=0)
    precompute(data_dir, "toy", params, stages=["frames"])
    store = ResultStore(data_dir, "toy", params)
    store.write_stage(
        "models", {"report": {}}, {"scores": pd.DataFrame({"id": TOY_IDS, "classifier_score": TOY_SCORES})}, 0.0
    )
    chem = pd.DataFrame(
        {"id": TOY_IDS, "formula": ["H2O", "CO2", "CH4", "C6H6", "X", "X", "X", "X"], "scaffold": TOY_SCAFFOLDS}
    )
    # Packed 64-bit words in columns fp00, fp01, ... as the chemistry stage stores them.
    words = np.packbits(TOY_FPS, axis=1, bitorder="little").astype(np.uint64)[:, 0]
    fps = pd.DataFrame({"id": TOY_IDS, "fp00": words, "fp01": np.zeros(8, np.uint64)})
    groups = pd.DataFrame({"group": ["s1", "c1ccccc1", "s2", ""], "kl": [0.5, 0.1, 0.2, 0.0]})
    store.write_stage(
        "chemistry", {"report": {}}, {"molecules": chem, "fingerprints": fps, "groups_scaffold": groups}, 0.0
    )


@pytest.fixture(scope="session")
def api_data(qm9_store, tmp_path_factory) -> Path:
    """qm9 (400 real molecules, every registered stage), toy (constructed), pending (no results
    yet) and nochem (60 real molecules with frames and statistics only, no chemistry stage)."""
    import numpy as np

    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.store.datasets import load_dataset
    from orientscope.store.shards import save_sharded

    data_dir = tmp_path_factory.mktemp("api-data")
    shutil.copytree(Path(qm9_store) / "datasets", data_dir / "datasets")
    add_toy(data_dir)
    save_sharded(data_dir, "pending", toy_set(), name="Pending", source="constructed")
    nochem = load_dataset(data_dir, "qm9").subset(np.arange(60))
    save_sharded(data_dir, "nochem", nochem, name="No chemistry", source="qm9 slice")
    precompute(data_dir, "nochem", make_params(seed=0), stages=["frames", "statistics"])
    return data_dir


@pytest.fixture(scope="module")
def toy_dir(tmp_path_factory) -> Path:
    """Only constructed data: "toy" (with optional stages) and "plain" (frames only)."""
    from orientscope.pipeline.precompute import make_params, precompute
    from orientscope.store.shards import save_sharded

    data_dir = tmp_path_factory.mktemp("toy-data")
    add_toy(data_dir)
    save_sharded(data_dir, "plain", toy_set(), name="Plain", source="constructed")
    precompute(data_dir, "plain", make_params(seed=0), stages=["frames"])
    return data_dir
