"""The ``orientscope`` command as a user runs it, in a process of its own."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

EXE = shutil.which("orientscope", path=str(Path(sys.executable).parent)) or "orientscope"


def run(*args, env_dir=None, check=True) -> subprocess.CompletedProcess:
    """``orientscope *args`` (the installed command beside this Python); AssertionError with its stderr if it
    fails and ``check``. ``env_dir`` sets ORIENTSCOPE_DATA_DIR."""
    env = None
    if env_dir is not None:
        import os

        env = {**os.environ, "ORIENTSCOPE_DATA_DIR": str(env_dir)}
    proc = subprocess.run([EXE, *args], capture_output=True, text=True, env=env, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(proc.stderr)
    return proc
