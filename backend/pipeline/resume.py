"""Per-shard steps that a re-run after a crash takes over instead of computing them again.

Every engine pass of a stage goes through :class:`ResumingEngine`. A task that
finishes writes a marker, ``<result>/<stage>/done/<pass>-<step>-NNNNN.pkl``, holding
its key and its (small) result; the marker is written atomically and after the
files the task wrote itself, so a marker that is there vouches for them. The
key is a digest of everything that fixes the task's result:

* the package version, the stage, the stage's rule (``pipeline.stage.STAGE_RULES``) and the step;
* the settings of its module the step declares (``@depends_on("N_CANDIDATES")``, see
  ``pipeline.depends``), and no other: a module constant it does not declare may change
  without invalidating finished shards;
* the task's inputs: the run's parameters, its shard (name, first global index,
  size; not where the data dir is, which moves from staging to the store) and
  whatever earlier merges handed it.

A re-run with reuse on reads the markers whose key matches and sends only the
other tasks to the engine; the merges then get the same partial results, so the
stage's report is the one an uninterrupted run writes. A run with other
parameters or settings finds other keys and computes every task.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import pickle
import shutil
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from orientscope import __version__
from orientscope.pipeline.depends import declared_settings
from orientscope.pipeline.engine import Engine
from orientscope.pipeline.shard_stages import ShardJob
from orientscope.pipeline.stage import STAGE_RULES
from orientscope.store.atomic import atomic_write_bytes, atomic_write_pickle

log = logging.getLogger(__name__)

DONE = "done"
DEFLATE_MAX_BYTES = 64 << 20  # larger markers are written as they are
PICKLE_START = pickle.PROTO  # an uncompressed marker (pickle protocol 2+); zlib's start with 0x78


def markers_dir(result_dir: Path, stage: str) -> Path:
    return Path(result_dir) / stage / DONE


def _feed(h, obj) -> None:
    """Feed a canonical form of ``obj`` (a task's inputs) to the hash ``h``."""
    if isinstance(obj, ShardJob):
        ref = obj.ref
        _feed(h, ("shard", obj.dataset_id, ref.number, Path(ref.folder).name, ref.start, ref.n_molecules, obj.params))
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        h.update(type(obj).__qualname__.encode())
        for f in dataclasses.fields(obj):
            _feed(h, (f.name, getattr(obj, f.name)))
    elif isinstance(obj, dict):
        h.update(b"{")
        for key in sorted(obj, key=repr):
            _feed(h, (key, obj[key]))
        h.update(b"}")
    elif isinstance(obj, list | tuple):
        h.update(b"(")
        for item in obj:
            _feed(h, item)
        h.update(b")")
    elif isinstance(obj, np.ndarray):
        h.update(f"array{obj.dtype.str}{obj.shape}".encode())
        h.update(repr(obj.tolist()).encode() if obj.dtype == object else np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, slice):
        _feed(h, ("slice", obj.start, obj.stop, obj.step))
    else:
        h.update(f"{type(obj).__name__}:{obj!r};".encode())


def shard_number(item) -> int | None:
    """The shard a task works on (None for a task over several shards or none)."""
    shard = item if isinstance(item, ShardJob) else getattr(item, "shard", None)
    return shard.ref.number if isinstance(shard, ShardJob) else None


@dataclasses.dataclass(frozen=True)
class Step:
    """One task and where its marker goes."""

    fn: Callable
    item: object
    marker: str
    key: str


def run_step(step: Step):
    """Run the task, then write its marker (last: it vouches for the files the task wrote)."""
    result = step.fn(step.item)
    # Streamed: a large result (the models' training features, 0.5 GB for 200,000 molecules) is not
    # copied into memory once more. A small one that is mostly zeros (the statistics' fine angle counts,
    # 4 MB a shard) is deflated, tenfold smaller; dense ones barely shrink. Not fsynced: a marker lost or
    # torn by a power failure is unreadable or absent, and its task runs again.
    marker = Path(step.marker)
    atomic_write_pickle(marker, {"key": step.key, "result": result}, durable=False)
    if marker.stat().st_size <= DEFLATE_MAX_BYTES:
        data = marker.read_bytes()
        if data.count(0) > len(data) // 2:
            atomic_write_bytes(marker, zlib.compress(data, 1), durable=False)
    return result


_MISSING = object()


def _taken_over(step: Step):
    """The result a marker with the step's key holds, else _MISSING."""
    path = Path(step.marker)
    if not path.is_file():
        return _MISSING
    try:
        data = path.read_bytes()
        saved = pickle.loads(data if data[:1] == PICKLE_START else zlib.decompress(data))
    except (OSError, EOFError, zlib.error, pickle.UnpicklingError, AttributeError, ImportError) as err:
        log.warning("ignoring unreadable marker %s: %s", path, err)
        return _MISSING
    return saved["result"] if saved.get("key") == step.key else _MISSING


class ResumingEngine:
    """An engine for one stage whose passes take over the tasks an interrupted run finished.

    ``reuse`` False (``--force``) computes every task, still writing markers.
    :meth:`note` says how many tasks of the pass under way were taken over (for
    progress messages), :meth:`summary` how many shards of the stage.
    """

    def __init__(self, engine: Engine, result_dir: Path, stage: str, n_shards: int, reuse: bool = True):
        self.engine = engine
        self.folder = markers_dir(result_dir, stage)
        self.stage = stage
        self.n_shards = n_shards
        self.reuse = reuse
        self._shards_reused: set[int] = set()
        self._pass: tuple[int, int, str] = (0, 0, "shards")
        self._passes = 0

    @property
    def spec(self):
        return self.engine.spec

    def describe(self) -> dict:
        return self.engine.describe()

    def note(self) -> str:
        """``"; reused 3 of 8 shards"`` (or ``tasks``, for a pass not over shards) for the pass under way, or ``""``."""
        reused, total, unit = self._pass
        return f"; reused {reused} of {total} {unit}" if reused else ""

    def _steps(self, fn: Callable, items: list) -> list[Step]:
        base = hashlib.sha256()
        rule = STAGE_RULES.get(self.stage, 1)  # a task of an older rule is never taken over
        _feed(base, (__version__, self.stage, rule, fn.__module__, fn.__qualname__, declared_settings(fn)))
        steps = []
        for k, item in enumerate(items):
            h = base.copy()
            _feed(h, item)
            marker = self.folder / f"{self._passes}-{fn.__name__}-{k:05d}.pkl"
            steps.append(Step(fn, item, str(marker), h.hexdigest()))
        self._passes += 1  # one stage may map the same function twice (run_job)
        return steps

    def _count(self, items: list, taken: list[bool]) -> None:
        """Note the pass's reused shards (or tasks, for a pass not over shards)."""
        shards = [(n, t) for n, t in zip(map(shard_number, items), taken, strict=True) if n is not None]
        self._shards_reused.update(n for n, t in shards if t)
        if shards:  # a pass over shards (some also hold tasks of no shard) counts its shards
            self._pass = (sum(t for _, t in shards), len(shards), "shards")
        else:
            self._pass = (sum(taken), len(items), "tasks")

    def map(self, fn: Callable, items: Sequence, progress=None, weights: Sequence[int] | None = None,
            on: Engine | None = None) -> list:  # fmt: skip
        """``[fn(item) for item in items]`` as :meth:`Engine.map` (on ``on`` if given, e.g. a local cluster started
        for one pass), taking over the tasks whose marker matches."""
        items = list(items)
        weights = [1] * len(items) if weights is None else [int(w) for w in weights]
        steps = self._steps(fn, items)
        results = [_taken_over(s) if self.reuse else _MISSING for s in steps]
        todo = [k for k, r in enumerate(results) if r is _MISSING]
        reused = sum(w for w, r in zip(weights, results, strict=True) if r is not _MISSING)
        self._count(items, [r is not _MISSING for r in results])
        if len(todo) < len(items):
            log.info("%s %s: reused %d of %d tasks of an interrupted run", self.stage, fn.__name__,
                     len(items) - len(todo), len(items))  # fmt: skip

        def on_progress(done: int, total: int) -> None:
            progress(reused + done, sum(weights))

        computed = (on or self.engine).map(
            run_step, [steps[k] for k in todo], on_progress if progress else None, weights=[weights[k] for k in todo]
        )
        for k, result in zip(todo, computed, strict=True):
            results[k] = result
        return results

    def summary(self) -> dict:
        """``{"shards": n, "reused": k}``: the stage's shards, and those of which some finished work was taken over."""
        return {"shards": self.n_shards, "reused": len(self._shards_reused)}

    def clear(self) -> None:
        """Remove the markers once the stage is recorded (a later run of it starts afresh)."""
        shutil.rmtree(self.folder, ignore_errors=True)
