import os
import signal
import subprocess
import sys
import time

import pytest

from backend.store import atomic


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
from backend.store.atomic import atomic_write_bytes
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
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target)])
        time.sleep(delay + 0.3)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if target.exists():
            lines = target.read_text().splitlines()
            assert len(lines) == 200000 and len(set(lines)) == 1, "torn file"
    # Killed runs may leave hidden temp files behind, never a torn target.
    assert all(p.name.startswith(".") or p == target for p in tmp_path.iterdir())
    assert os.path.getsize(target) > 0
