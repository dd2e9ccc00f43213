"""Precomputed results per (dataset, parameters).

``datasets/<id>/results/<key>/`` holds one file set per pipeline stage
(``<stage>.json`` for the report section, ``<stage>.<table>.parquet`` for
per-molecule arrays) and ``manifest.json``, which lists the completed stages
with their parameters, seed, package version and row counts. Every file is
written atomically and a stage counts only once the manifest names it, so a
killed run leaves only complete stages behind.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pandas as pd
import pyarrow as pa

from orientscope import __version__
from orientscope.core.errors import NotFoundError
from orientscope.store.atomic import atomic_write_json, atomic_write_table, read_json, read_table
from orientscope.store.datasets import dataset_dir, file_lock
from orientscope.store.shards import open_shard_arrays, shard_table_paths

# Shard arrays (``<stage>/<name>-NNNNN.npy``) that also read as a table: name ->
# (the stage's table whose "id" column is row-aligned with the arrays, column name prefix).
ARRAY_TABLES = {"fingerprints": ("molecules", "fp")}

MANIFEST = "manifest.json"
IN_PROCESS_ENGINE = {"where": "in-process", "workers": 1}


def result_key(params: dict) -> str:
    """Readable folder name from the parameters that change the results."""
    key = f"{params['frame']}-{params['sign']}-s{params['seed']}"
    if params.get("limit"):
        key += f"-n{params['limit']}"
    if params.get("kl_limits"):
        key += "-kl-" + "-".join(f"{name}{value}" for name, value in sorted(params["kl_limits"].items()))
    return key


def result_dir(data_dir: Path, dataset_id: str, key: str) -> Path:
    return dataset_dir(data_dir, dataset_id) / "results" / key


def list_result_keys(data_dir: Path, dataset_id: str) -> list[str]:
    root = dataset_dir(data_dir, dataset_id) / "results"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / MANIFEST).is_file())


@contextmanager
def all_results_locked(data_dir: Path, dataset_id: str) -> Iterator[list[str]]:
    """Hold the lock of every result folder of the dataset, waiting for running pipelines (a first run
    too, whose manifest is not written yet); the keys of the stored results."""
    root = dataset_dir(data_dir, dataset_id) / "results"
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) if root.is_dir() else []
    with ExitStack() as stack:
        for folder in folders:
            stack.enter_context(file_lock(folder / ".lock"))
        yield list_result_keys(data_dir, dataset_id)


def _without_stage(skipped: dict[str, str], stage: str) -> dict[str, str]:
    return {k: v for k, v in skipped.items() if k != stage and not k.startswith(stage + ".")}


class ResultStore:
    """Read and write one result folder."""

    def __init__(self, data_dir: Path, dataset_id: str, params: dict):
        self.dataset_id = dataset_id
        self.params = dict(params)
        self.key = result_key(params)
        self.dir = result_dir(data_dir, dataset_id, self.key)

    # --------------------------------------------------------------- manifest
    def manifest(self) -> dict:
        path = self.dir / MANIFEST
        if path.is_file():
            return read_json(path)
        return {
            "dataset": self.dataset_id,
            "key": self.key,
            "params": self.params,
            "seed": self.params.get("seed"),
            "version": __version__,
            "stages": {},
            "skipped_stages": {},
        }

    def completed(self, stage: str) -> bool:
        return stage in self.manifest()["stages"]

    def completed_stages(self) -> list[str]:
        return list(self.manifest()["stages"])

    @contextmanager
    def lock(self):
        """Exclusive lock so two processes never compute the same result at once."""
        with file_lock(self.dir / ".lock"):
            yield

    # ------------------------------------------------------------------ write
    def write_stage(
        self,
        stage: str,
        section: dict,
        tables: dict[str, pd.DataFrame | pa.Table],
        seconds: float,
        settings: dict | None = None,
        skipped: dict[str, str] | None = None,
        engine: dict | None = None,
        shard_rows: dict[str, int] | None = None,
        reused: dict[str, int] | None = None,
        rule: int | None = None,
    ) -> None:
        """Write a stage's files, then record it in the manifest (last, atomically).

        ``skipped`` maps the stage (or ``"<stage>.<part>"``) to the reason it did
        not run; it replaces whatever an earlier run of this stage recorded.
        ``engine`` says where the stage ran: ``{"where": "in-process" | "local:W" | address, "workers": n}``.
        ``shard_rows`` names per-shard tables or arrays the stage's tasks already wrote, with their total rows.
        ``reused``: ``{"shards": n, "reused": k}``, the k shards whose work an interrupted run had finished.
        ``rule``: the version of the rule that made the stage's results (see ``pipeline.stage.STAGE_RULES``).
        """
        rows = dict(shard_rows or {})
        for name, table in tables.items():
            tab = table if isinstance(table, pa.Table) else pa.Table.from_pandas(table, preserve_index=False)
            atomic_write_table(self.dir / f"{stage}.{name}.parquet", tab)
            rows[name] = tab.num_rows
        atomic_write_json(self.dir / f"{stage}.json", section)
        manifest = self.manifest()
        manifest["stages"][stage] = {
            "tables": sorted(rows),
            "rows": rows,
            "seconds": round(seconds, 3),
            "completed_at": time.time(),
            "version": __version__,
            "settings": settings or {},
            "engine": engine or IN_PROCESS_ENGINE,
            **({"reused": reused} if reused else {}),
            **({"rule": int(rule)} if rule is not None else {}),
        }
        manifest["skipped_stages"] = {**_without_stage(manifest.get("skipped_stages", {}), stage), **(skipped or {})}
        manifest["version"] = __version__
        atomic_write_json(self.dir / MANIFEST, manifest)

    def stage_rule(self, stage: str) -> int:
        """The rule version a stored stage was made by (1 for a stage stored before rules were recorded)."""
        return int(self.manifest()["stages"].get(stage, {}).get("rule", 1))

    def drop_stage(self, stage: str) -> None:
        manifest = self.manifest()
        if manifest["stages"].pop(stage, None) is not None:
            manifest["skipped_stages"] = _without_stage(manifest.get("skipped_stages", {}), stage)
            atomic_write_json(self.dir / MANIFEST, manifest)

    def skipped_stages(self) -> dict[str, str]:
        """{"<stage>" or "<stage>.<part>": reason} for every stage or part that could not run."""
        return dict(self.manifest().get("skipped_stages", {}))

    # ------------------------------------------------------------------- read
    def section(self, stage: str) -> dict:
        if not self.completed(stage):
            raise NotFoundError(f"stage {stage!r} of {self.dataset_id}/{self.key} is not computed")
        return read_json(self.dir / f"{stage}.json")

    def table(self, stage: str, name: str, columns: list[str] | None = None) -> pa.Table:
        """One per-molecule table; a sharded result's shard tables are concatenated in shard order."""
        if not self.completed(stage):
            raise NotFoundError(f"stage {stage!r} of {self.dataset_id}/{self.key} is not computed")
        path = self.dir / f"{stage}.{name}.parquet"
        shards = [] if path.is_file() else shard_table_paths(self.dir, stage, name)
        if shards:
            return pa.concat_tables([read_table(p, columns=columns) for p in shards])
        if not path.is_file() and name in ARRAY_TABLES:
            arrays = open_shard_arrays(self.dir, stage, name)
            if arrays:
                return self._array_table(stage, name, arrays, columns)
        return read_table(path, columns=columns)

    def _array_table(self, stage: str, name: str, arrays: list, columns: list[str] | None) -> pa.Table:
        """Shard arrays as one table: the row-aligned ids and one column per array column."""
        id_table, prefix = ARRAY_TABLES[name]
        ids = self.table(stage, id_table, columns=["id"]).column("id")
        width = arrays[0].shape[1]
        data = {"id": ids, **{f"{prefix}{i:02d}": pa.chunked_array([a[:, i] for a in arrays]) for i in range(width)}}
        table = pa.table(data)
        return table.select(columns) if columns else table
