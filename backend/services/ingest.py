"""Writes to the dataset store that the API offers: rename and delete (uploads are ingest jobs, services/jobs)."""

from __future__ import annotations

from pathlib import Path

from orientscope.pipeline import ingest
from orientscope.services.datasets import DatasetInfo, dataset_info
from orientscope.store import datasets as ds


def rename_dataset(data_dir: Path, dataset_id: str, name: str) -> DatasetInfo:
    """Give a dataset a new display name (NotFoundError for unknown ids); its info afterwards."""
    ds.read_meta(data_dir, dataset_id)
    ingest.rename_dataset(data_dir, dataset_id, name)
    return dataset_info(data_dir, dataset_id)


def delete_dataset(data_dir: Path, dataset_id: str) -> None:
    """Delete a dataset and its results (NotFoundError for unknown ids; no other dataset is touched)."""
    ds.read_meta(data_dir, dataset_id)
    ingest.delete_dataset(data_dir, dataset_id)
