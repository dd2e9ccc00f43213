"""The one fixed sleep the tests keep: the moment at which a crash test kills a process.

The test chooses that moment (seeded) as its input, anywhere in the run, and asserts only what the killed run
left behind. Nothing is waited for, so there is no condition to wait on instead; tests/test_no_fixed_waits.py
allows ``time.sleep`` here and, everywhere else, only in a loop with a deadline.
"""

from __future__ import annotations

import signal
import subprocess
import time


def sigkill_after(proc: subprocess.Popen, delay_s: float) -> None:
    """SIGKILL ``proc`` ``delay_s`` seconds from now, and reap it.

    Why a fixed sleep: the delay is the kill moment the test chose, not a wait for something to happen.
    """
    time.sleep(delay_s)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def precompute_killed_at_shard(data_dir, module: str, table: str, shard: int, seed: int, timeout_s: float):
    """Run precompute of dataset "set" in a child process that SIGKILLs itself as it is about to write shard
    ``shard``'s ``table`` (through ``orientscope.pipeline.<module>.write_shard_table``); the finished child."""
    import os
    import sys
    import textwrap
    from pathlib import Path

    script = textwrap.dedent(f"""
        import os, signal
        from orientscope.pipeline import {module} as target
        from orientscope.pipeline.precompute import make_params, precompute
        write = target.write_shard_table
        def write_or_die(result, stage, table, number, frame):
            if table == {table!r} and number == {shard}:
                os.kill(os.getpid(), signal.SIGKILL)
            return write(result, stage, table, number, frame)
        target.write_shard_table = write_or_die
        precompute({str(data_dir)!r}, "set", make_params(seed={seed}), cluster="in-process")
    """)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=timeout_s)
