"""Writing a dataset's molecules in the single-folder layout of stores made before the sharded one.

Only tests of ``orientscope migrate`` and of the refusal need it; the product no longer writes this layout.
"""

from __future__ import annotations

from pathlib import Path

from orientscope.core.dataset import MoleculeSet
from orientscope.store import datasets as ds


def write_old_layout(data_dir: Path, dataset_id: str, mols: MoleculeSet, name: str = "Old", source: str = "t") -> dict:
    """``molecules.parquet`` and ``atoms.parquet`` in the dataset folder, then a meta without a layout; the meta."""
    ds.write_molecule_tables(ds.dataset_dir(data_dir, dataset_id), mols)
    meta = ds.meta_of(dataset_id, mols, name, source)
    ds.write_meta(data_dir, dataset_id, meta)
    return meta
