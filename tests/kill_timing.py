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
