"""Give a dataset in a private data folder a new id, before it is published into the store.

A set made in Python is computed under a temporary id (``orientscope.notebook``); saving it
under a name renames its folder and the id written in its meta, result manifests and audits.
"""

from __future__ import annotations

import os
from pathlib import Path

from orientscope.store import datasets as ds
from orientscope.store.atomic import atomic_write_json, read_json
from orientscope.store.audits import RECORD, audits_root
from orientscope.store.results import MANIFEST


def move_dataset(data_dir: Path, old_id: str, new_id: str, name: str) -> dict:
    """Rename ``old_id`` to ``new_id`` (display name ``name``) inside ``data_dir``; its meta afterwards."""
    if new_id != old_id:
        os.rename(ds.dataset_dir(data_dir, old_id), ds.dataset_dir(data_dir, new_id))
    folder = ds.dataset_dir(data_dir, new_id)
    for path in [*(folder / "results").glob(f"*/{MANIFEST}"), *audits_root(data_dir, new_id).glob(f"*/{RECORD}")]:
        atomic_write_json(path, {**read_json(path), "dataset": new_id})
    return ds.update_meta(data_dir, new_id, id=new_id, name=name)
