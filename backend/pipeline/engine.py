"""Where per-shard work runs: in this process, on a local Dask cluster, or on an existing scheduler.

``--cluster`` (else ``$ORIENTSCOPE_CLUSTER``) takes

* ``in-process``: a plain loop in the calling process (today's behaviour);
* ``local:W``: a ``distributed.LocalCluster`` of W single-threaded worker processes;
* ``tcp://HOST:PORT``: an existing Dask scheduler. Its workers must import
  this project and see the same ``--data-dir`` (a shared file system), because
  tasks carry paths and parameters, never arrays.

Without a setting, sets below ``$ORIENTSCOPE_LOCAL_CLUSTER_ABOVE`` molecules
(default 2,000,000) run in process, larger ones on a local cluster with one
worker per core.

Tasks are retried (``TASK_RETRIES``) when they raise, and Dask reschedules the
task of a worker that dies; task functions are pure functions of a shard, so a
retried shard gives the same result. Each worker's BLAS/OpenMP pools are
capped at one thread (the nanny's environment and threadpoolctl), so W
workers use W cores instead of fighting over them.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from orientscope.core.settings import env_name, settings

log = logging.getLogger(__name__)

CLUSTER_ENV = env_name("cluster")
LOCAL_ABOVE_ENV = env_name("local_cluster_above")
IN_PROCESS = "in-process"
TASK_RETRIES = 2
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")
MAIN_GUARD = re.compile(r"""^if\s+__name__\s*==\s*['"]__main__['"]\s*:""", re.M)
ACCEPTED = "'in-process', 'local:W' (W >= 1 worker processes) or 'tcp://HOST:PORT'"


def _dask_warnings_only() -> int:
    """Raise Dask's logger to WARNING (if lower) while a local cluster runs; returns the level to restore.

    The local scheduler runs in this process and logs at INFO (workers joining and leaving, the scheduler
    closing); through the root handler of the CLI those lines would fill the terminal. Warnings (a worker
    lost) still show. LocalCluster's own ``silence_logs`` covers its start only.
    """
    logger = logging.getLogger("distributed")
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    return level


# progress(shards_done, shards_total)
ShardProgress = Callable[[int, int], None]


@dataclass(frozen=True)
class ClusterSpec:
    """A parsed ``--cluster`` value."""

    kind: str  # "in-process" | "local" | "tcp"
    workers: int = 1
    address: str = ""
    by_size: bool = False  # picked by the set's size, not by --cluster or $ORIENTSCOPE_CLUSTER

    @property
    def label(self) -> str:
        """How the report names it: ``in-process``, ``local:W`` or the scheduler's address."""
        return {"in-process": IN_PROCESS, "local": f"local:{self.workers}", "tcp": self.address}[self.kind]


def parse_cluster(text: str) -> ClusterSpec:
    """``in-process`` | ``local:W`` | ``tcp://HOST:PORT`` -> ClusterSpec; ValueError naming the accepted forms."""
    value = str(text).strip()
    if value == IN_PROCESS:
        return ClusterSpec(IN_PROCESS)
    if value.startswith("local:"):
        count = value.removeprefix("local:")
        if count.isdigit() and int(count) >= 1:
            return ClusterSpec("local", workers=int(count))
    if value.startswith("tcp://"):
        host, _, port = value.removeprefix("tcp://").rpartition(":")
        if host and port.isdigit() and 0 < int(port) < 65536:
            return ClusterSpec("tcp", address=value)
    raise ValueError(f"unknown cluster {value!r}; expected {ACCEPTED}")


def spawn_safe() -> bool:
    """Whether local worker processes can start here without running the user's code again.

    Dask starts workers by spawning, and a spawned process runs the main module again (as
    ``__mp_main__``): a script or ``python -m module`` without an ``if __name__ == "__main__":`` guard
    would run again in every worker. Safe are a session with no main file (Jupyter, the REPL,
    ``python -c``), a package's ``__main__`` (not run again) and a main module with that guard (pip's
    console scripts such as ``orientscope`` and ``pytest`` have it).
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    spec = getattr(main, "__spec__", None)
    if not path or (spec is not None and spec.name.endswith("__main__")):
        return True
    try:
        source = Path(path).read_text(errors="replace")
    except OSError:
        return False
    return MAIN_GUARD.search(source) is not None


def local_cluster_above() -> int:
    return settings().local_cluster_above


def choose_cluster(requested: str | None, n_molecules: int) -> ClusterSpec:
    """``--cluster``, else ``$ORIENTSCOPE_CLUSTER``, else by size: in process or one local worker per core."""
    if requested:
        return parse_cluster(requested)
    chosen = settings().cluster
    if chosen:
        try:
            return parse_cluster(chosen)
        except ValueError as err:
            raise ValueError(f"{CLUSTER_ENV}: {err}") from None
    if n_molecules < local_cluster_above():
        return ClusterSpec(IN_PROCESS, by_size=True)
    return ClusterSpec("local", workers=max(os.cpu_count() or 1, 1), by_size=True)


def cap_threads() -> None:
    """One BLAS/OpenMP thread in this (worker) process."""
    for name in THREAD_ENV:
        os.environ[name] = "1"
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # threadpoolctl comes with scikit-learn; without it the env vars still apply to new pools
        return
    threadpool_limits(1)


def task_threads() -> int:
    """Threads a task's own thread pools may use: 1 where they are capped (the engine's workers, see
    :func:`cap_threads`, or a user's ``OMP_NUM_THREADS=1``), else every core (-1), as in process."""
    return 1 if os.environ.get(THREAD_ENV[0]) == "1" else -1


def _threads_plugin():
    from distributed.diagnostics.plugin import WorkerPlugin

    class CapThreads(WorkerPlugin):
        """Caps the thread pools on every worker, also on clusters started without our nanny settings."""

        name = "orientscope-cap-threads"

        def setup(self, worker) -> None:
            cap_threads()

    return CapThreads()


class Engine:
    """Runs a pure per-shard function over many shards; use as a context manager.

    Examples
    --------
    >>> with Engine(parse_cluster("in-process")) as engine:
    ...     engine.map(abs, [-1, -2])
    [1, 2]
    """

    def __init__(self, spec: ClusterSpec):
        self.spec = spec
        self._cluster = None
        self._client = None
        self._dask_level: int | None = None  # Dask's log level to restore at close

    def __enter__(self) -> Engine:
        if self.spec.kind == IN_PROCESS:
            return self
        from distributed import Client, LocalCluster

        try:
            if self.spec.kind == "local":
                self._dask_level = _dask_warnings_only()
                self._cluster = LocalCluster(
                    n_workers=self.spec.workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=":0",  # a free port: never clashes with another cluster's 8787
                    silence_logs=logging.ERROR,
                    env={name: "1" for name in THREAD_ENV},
                )
                self._client = Client(self._cluster)
            else:
                self._client = Client(self.spec.address, timeout="30s")
            self._client.register_plugin(_threads_plugin())
        except BaseException:  # neither a started cluster nor Dask's raised log level outlives a failed start
            self.close()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            self.abort()
        self.close()

    def abort(self) -> None:
        """Kill this engine's local worker processes at once (Ctrl-C): closing then does not wait for their tasks.

        A graceful close of a local cluster waits for a busy worker (4 s, then it kills it; RDKit's bond-order
        search does not yield), so Ctrl-C took 6 s on two workers. A remote scheduler's workers are not ours.
        """
        for nanny in getattr(self._cluster, "workers", {}).values():
            pid = getattr(getattr(getattr(nanny, "process", None), "process", None), "pid", None)
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
        if self._dask_level is not None:
            logging.getLogger("distributed").setLevel(self._dask_level)
            self._dask_level = None

    @property
    def n_workers(self) -> int:
        if self._client is None:
            return 1
        return len(self._client.scheduler_info(n_workers=-1)["workers"])

    def describe(self) -> dict:
        """``{"where": "in-process" | "local:W" | scheduler address, "workers": n}`` for the report."""
        return {"where": self.spec.label, "workers": self.n_workers}

    def map(
        self, fn: Callable, items: Sequence, progress: ShardProgress | None = None, weights: Sequence[int] | None = None
    ) -> list:
        """``[fn(item) for item in items]``, in order; ``progress(done, total)`` as tasks finish.

        ``done`` and ``total`` count tasks, or with ``weights`` (one per item, e.g. its molecules) sum
        them. ``fn`` must be an importable module-level function and ``items`` small (paths and
        parameters), since they travel to the workers.
        """
        items = list(items)
        weights = [1] * len(items) if weights is None else [int(w) for w in weights]
        total = sum(weights)
        if progress:
            progress(0, total)
        if self._client is None:
            out, done = [], 0
            for item, weight in zip(items, weights, strict=True):
                out.append(fn(item))
                done += weight
                if progress:
                    progress(done, total)
            return out
        from distributed import as_completed

        futures = self._client.map(fn, items, retries=TASK_RETRIES, pure=False)
        position = {f.key: k for k, f in enumerate(futures)}
        done = 0
        for future in as_completed(futures):
            done += weights[position[future.key]]
            if progress:
                progress(done, total)
        return self._client.gather(futures)

    def as_completed(self, fn: Callable, items: Sequence) -> Iterator[tuple[int, object]]:
        """``(position, fn(item))`` as each task finishes (in order in process), for streaming results.

        Closing the generator early (e.g. at a time limit) cancels the tasks not yet finished.
        """
        items = list(items)
        if self._client is None:
            for position, item in enumerate(items):
                yield position, fn(item)
            return
        from distributed import as_completed

        futures = self._client.map(fn, items, retries=TASK_RETRIES, pure=False)
        position = {f.key: k for k, f in enumerate(futures)}
        try:
            for future in as_completed(futures):
                yield position[future.key], future.result()
        finally:
            self._client.cancel([f for f in futures if not f.done()])
