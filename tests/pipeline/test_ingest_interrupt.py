"""Ctrl-C during the chemistry stage of `orientscope ingest`, while RDKit searches a costly molecule's bond orders.

RDKit's bond-order search catches SIGINT itself and returns as if it had finished; before the guard, the
ingest went on to the next molecule and Ctrl-C was lost. Here SIGINT goes to the whole process group, as a
terminal's Ctrl-C does (Dask's workers included), and the ingest must end without publishing a dataset,
keeping the stages before chemistry for the next run. How fast it ends is measured in tests/bench
(BENCHMARKS.md, "chemistry on real-chemistry-like sets"), not asserted here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from orientscope.core.dataset import from_molecules
from orientscope.loaders.extxyz import write_extxyz
from orientscope.store.datasets import list_dataset_ids
from tests.harness import takes_ctrl_c, wait_until
from tests.molecules import COSTLY_SMILES, embedded

EXE = str(Path(sys.executable).parent / "orientscope")
N_COSTLY = 12  # each spends its whole bond-order budget: the stage lasts many seconds


def _costly_set(path: Path) -> None:
    z, pos = embedded(COSTLY_SMILES)
    copies = [(z, pos + [0.0, 0.0, 50.0 * k]) for k in range(N_COSTLY)]
    write_extxyz(path, from_molecules(copies, ids=[f"coa{k}" for k in range(N_COSTLY)], charges=[0] * N_COSTLY))


def _wait_for(path: Path, text: str, proc: subprocess.Popen, timeout_s: float = 300) -> None:
    def exited() -> str | None:
        return None if proc.poll() is None else path.read_text(errors="replace")[-2000:]

    wait_until(lambda: text in path.read_text(errors="replace"), timeout_s, f"{text!r} in {path}", 0.05, exited)


@pytest.mark.parametrize("cluster", [[], ["--cluster", "local:2"]], ids=["in-process", "local:2"])
def test_ctrl_c_in_the_chemistry_stage_ends_the_ingest_and_keeps_the_earlier_stages(tmp_path, cluster):
    data_dir, upload, log = tmp_path / "data", tmp_path / "costly.extxyz", tmp_path / "stderr.txt"
    _costly_set(upload)
    with open(log, "w") as err:
        proc = subprocess.Popen([EXE, "ingest", str(upload), "--name", "Costly", "--data-dir", str(data_dir), *cluster],
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                                preexec_fn=takes_ctrl_c)  # fmt: skip
    try:
        _wait_for(log, "chemistry: graphs, fingerprints, scaffolds: 0/", proc)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches every process of the terminal's group
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    text = log.read_text(errors="replace")
    assert proc.returncode == 130, text[-2000:]
    assert "chemistry: done" not in text and list_dataset_ids(data_dir) == []
    # The frames and statistics the interrupted run recorded wait for the next run.
    (manifest,) = (data_dir / "jobs" / ".staging").glob("*/datasets/*/results/*/manifest.json")
    assert set(json.loads(manifest.read_text())["stages"]) == {"frames", "statistics"}
    assert np.isfinite(json.loads((manifest.parent / "statistics.json").read_text())["report"]["kl"]["value"])
