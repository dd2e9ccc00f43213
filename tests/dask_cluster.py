"""A real Dask cluster on loopback (`dask scheduler` and `dask worker` processes) for the engine tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.harness import free_port

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
STARTUP_S = 90


class DaskOnLoopback:
    """`dask scheduler` plus `dask worker` processes, each in its own session so it can be killed whole."""

    def __init__(self, n_workers: int, log_dir: Path):
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        self.log_dir = log_dir
        self.scheduler = self._start("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", str(self.port)])
        # A task that read a setting on a worker (rather than receiving it from the client) would fail here.
        broken = {**self.env, "ORIENTSCOPE_SETTINGS": "{not json", "ORIENTSCOPE_MAX_ATOMS_PER_MOLECULE": "none"}
        self.workers = [
            self._start(f"worker{k}", ["worker", self.address, "--nworkers", "1", "--nthreads", "1"], broken)
            for k in range(n_workers)
        ]

    def _start(self, name: str, args: list[str], env: dict | None = None) -> subprocess.Popen:
        log = open(self.log_dir / f"{name}.log", "w")  # noqa: SIM115 - closed with the process in stop()
        cmd = [str(BIN / "dask"), *args, "--no-dashboard"]
        return subprocess.Popen(cmd, stdout=log, stderr=log, env=env or self.env, cwd=ROOT, start_new_session=True)

    def wait_for_workers(self, n: int) -> None:
        from distributed import Client

        with Client(self.address, timeout=f"{STARTUP_S}s") as client:
            client.wait_for_workers(n, timeout=STARTUP_S)

    def kill(self, proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)

    def stop(self) -> None:
        for proc in [*self.workers, self.scheduler]:
            self.kill(proc)
