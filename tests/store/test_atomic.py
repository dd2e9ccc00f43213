import subprocess
import sys

import pytest

from orientscope.store import atomic
from tests.harness import exited, wait_until
from tests.kill_timing import sigkill_after


def test_failed_write_keeps_old_file_and_leaves_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "x.json"
    atomic.atomic_write_json(target, {"v": 1})

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(atomic.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic.atomic_write_json(target, {"v": 2})
    assert atomic.read_json(target) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_json_rejects_nan(tmp_path):
    with pytest.raises(ValueError):
        atomic.atomic_write_json(tmp_path / "n.json", {"v": float("nan")})
    assert not (tmp_path / "n.json").exists()


WRITER = """
import sys
from orientscope.store.atomic import atomic_write_bytes
from pathlib import Path
i = 0
while True:
    i += 1
    payload = (str(i) + "\\n") * 200000
    atomic_write_bytes(Path(sys.argv[1]), payload.encode())
"""


def test_sigkill_during_writes_never_leaves_a_torn_file(tmp_path):
    target = tmp_path / "big.txt"
    for delay in (0.05, 0.13, 0.21, 0.34):
        target.unlink(missing_ok=True)
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target)])
        # this writer is under way once its first file is complete (however long its start-up took) ...
        wait_until(target.exists, timeout_s=120, what="the writer's first file", poll_s=0.01, give_up=exited(proc))
        assert target.exists(), "the writer wrote no file"
        sigkill_after(proc, delay)  # ... and is killed anywhere in a later write
        lines = target.read_text().splitlines()
        assert len(lines) == 200000 and len(set(lines)) == 1, "torn file"
    # Killed runs may leave hidden temp files behind, never a torn target.
    assert all(p.name.startswith(".") or p == target for p in tmp_path.iterdir())


@pytest.mark.parametrize("sizes", [[7, 0, 5, 88], [100], [0, 0, 100], [1] * 100])
def test_table_slices_are_consecutive_runs_of_the_asked_sizes(tmp_path, sizes, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"i": list(range(100)), "s": [f"m{i}" for i in range(100)]}), path, row_group_size=9)
    monkeypatch.setattr(pq.ParquetFile, "iter_batches", _small_batches(pq.ParquetFile.iter_batches))
    parts = list(atomic.iter_table_slices(path, sizes))
    assert [p.num_rows for p in parts] == sizes
    assert [i for p in parts for i in p.column("i").to_pylist()] == list(range(100))
    assert list(atomic.iter_table_slices(path, [3], columns=["s"]))[0].to_pydict() == {"s": ["m0", "m1", "m2"]}


def _small_batches(original):
    """Batches of 4 rows, so that slices span several batches and row groups."""

    def iter_batches(self, batch_size=65_536, **kwargs):
        return original(self, batch_size=4, **kwargs)

    return iter_batches


def test_table_slices_past_the_end_fail(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"i": [1, 2, 3]}), tmp_path / "t.parquet")
    with pytest.raises(ValueError, match="fewer rows"):
        list(atomic.iter_table_slices(tmp_path / "t.parquet", [2, 2]))


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two renames"])
def test_swap_dirs_exchanges_two_folders(tmp_path, exchange, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "new").write_text("new")
    (b / "old").write_text("old")
    if not exchange:  # a kernel or file system without RENAME_EXCHANGE
        monkeypatch.setattr(atomic, "_RENAME_EXCHANGE", 1 << 30)  # an unknown flag: EINVAL
    atomic.swap_dirs(a, b)
    assert [p.name for p in b.iterdir()] == ["new"] and [p.name for p in a.iterdir()] == ["old"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_swap_dirs_with_a_missing_folder_changes_nothing(tmp_path):
    a = tmp_path / "a"
    a.mkdir()
    with pytest.raises(OSError):
        atomic.swap_dirs(a, tmp_path / "gone")
    assert [p.name for p in tmp_path.iterdir()] == ["a"]
