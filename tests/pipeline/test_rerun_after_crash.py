"""A run killed in the middle of a stage: the re-run keeps the shards that finished and computes
only the others, and its report equals an uninterrupted run's."""

from __future__ import annotations

import importlib
import signal
from pathlib import Path

import numpy as np
import pytest

from orientscope.pipeline.precompute import make_params, precompute
from orientscope.pipeline.resume import markers_dir
from orientscope.services.report import build_report
from orientscope.store.results import ResultStore
from orientscope.store.shards import save_sharded, shard_array_path, shard_table_path
from tests.kill_timing import precompute_killed_at_shard

SHARD = 40  # 150 molecules: shards 0-3
N_SHARDS = 4
KILL_AT = 2  # the process dies as it is about to write this shard's table
# stage -> (module whose write_shard_table dies, the tables of a finished shard; the first is the one it dies on)
KILLS = {
    "frames": ("shard_stages", ("original", "control")),
    "chemistry": ("shard_chemistry", ("molecules",)),
    "models": ("shard_models", ("scores", "control_scores")),
}


def _identity(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns


def _killed_run(data_dir: Path, module: str, table: str) -> None:
    """Precompute in a child process that SIGKILLs itself as it is about to write shard KILL_AT's ``table``."""
    done = precompute_killed_at_shard(data_dir, module, table, KILL_AT, seed=4, timeout_s=600)
    assert done.returncode == -signal.SIGKILL, done.stderr


def _report(data_dir: Path) -> dict:
    """The report without what may differ between two runs of the same numbers: timings, the place they ran."""
    report = build_report(data_dir, "set")
    for where in ("stages", "dataset", "engine"):
        report.pop(where)
    return report


# The re-run on a Dask cluster too: its workers write the markers, the client reads them (a pass whose every
# task is taken over sends none).
@pytest.mark.parametrize(("stage", "cluster"), [(stage, "in-process") for stage in KILLS] + [("chemistry", "local:1")])
def test_a_rerun_after_a_kill_reuses_the_finished_shards(tmp_path, qm9_small, stage, cluster):
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    sub = qm9_small.subset(np.arange(150))
    for d in (killed, clean):
        save_sharded(d, "set", sub, name="Set", source="test", shard_size=SHARD)
    module, tables = KILLS[stage]
    _killed_run(killed, module, tables[0])
    store = ResultStore(killed, "set", make_params(seed=4))
    assert not store.completed(stage)
    finished = {
        (table, k): _identity(shard_table_path(store.dir, stage, table, k)) for table in tables for k in range(KILL_AT)
    }
    assert not shard_table_path(store.dir, stage, tables[0], KILL_AT).exists()

    messages = []
    precompute(killed, "set", make_params(seed=4), cluster=cluster, progress=lambda f, m, s="": messages.append(m))
    assert any(m.endswith(f"; reused {KILL_AT} of {N_SHARDS} shards") for m in messages), messages
    # The shards the killed run finished are the same files, untouched; the others were written now.
    assert {key: _identity(shard_table_path(store.dir, stage, *key)) for key in finished} == finished
    assert all(shard_table_path(store.dir, stage, t, k).is_file() for t in tables for k in range(N_SHARDS))
    assert store.manifest()["stages"][stage]["reused"]["shards"] == N_SHARDS
    assert store.manifest()["stages"][stage]["reused"]["reused"] >= KILL_AT
    assert not markers_dir(store.dir, stage).exists()  # the stage is recorded: its markers are gone
    precompute(clean, "set", make_params(seed=4), cluster="in-process")
    clean_manifest = ResultStore(clean, "set", make_params(seed=4)).manifest()
    assert clean_manifest["stages"][stage]["reused"] == {"shards": N_SHARDS, "reused": 0}
    a, b = _report(killed), _report(clean)
    assert a.keys() == b.keys()
    for field in a:
        assert a[field] == b[field], field

    # --force computes every shard again.
    precompute(killed, "set", make_params(seed=4), stages=["frames", stage], force=True, cluster="in-process")
    assert all(_identity(shard_table_path(store.dir, stage, *key)) != ident for key, ident in finished.items())


# A declared setting: pass 1 (graphs_shard) declares the coupling's number of pairs; the graph chunks
# (pipeline.shard_graphs) and the groups pass, which do not depend on it, are taken over. Declared by no task: the expected parse time
# from which the RDKit chunks run on local workers, which changes where they run, not what they give.
@pytest.mark.parametrize(
    ("module", "setting", "change", "declared"),
    [("shard_chemistry", "N_PAIRS", -1, True), ("shard_graphs", "PARALLEL_FROM_S", 1.0, False)],
)
def test_a_changed_setting_runs_again_the_tasks_that_declare_it_and_no_others(
    tmp_path, qm9_small, monkeypatch, module, setting, change, declared
):
    where = importlib.import_module(f"orientscope.pipeline.{module}")
    data_dir = tmp_path / "data"
    save_sharded(data_dir, "set", qm9_small.subset(np.arange(150)), name="Set", source="test", shard_size=SHARD)
    _killed_run(data_dir, "shard_chemistry", "molecules")  # pass 1 finished every shard, pass 2 shards 0-1
    store = ResultStore(data_dir, "set", make_params(seed=4))
    pass_1 = {k: _identity(shard_array_path(store.dir, "chemistry", "fingerprints", k)) for k in range(N_SHARDS)}
    pass_2 = {k: _identity(shard_table_path(store.dir, "chemistry", "molecules", k)) for k in range(KILL_AT)}
    monkeypatch.setattr(where, setting, getattr(where, setting) + change)
    precompute(data_dir, "set", make_params(seed=4), cluster="in-process")
    kept_1 = [_identity(shard_array_path(store.dir, "chemistry", "fingerprints", k)) == v for k, v in pass_1.items()]
    kept_2 = [_identity(shard_table_path(store.dir, "chemistry", "molecules", k)) == v for k, v in pass_2.items()]
    # Either way every shard's graph chunks were taken over.
    assert store.manifest()["stages"]["chemistry"]["reused"] == {"shards": N_SHARDS, "reused": N_SHARDS}
    # The groups pass (pass 2) does not depend on the number of pairs: its finished shards are taken over either way.
    assert all(kept_2)
    assert not any(kept_1) if declared else all(kept_1)  # pass 1 ran again only for the setting it declares
