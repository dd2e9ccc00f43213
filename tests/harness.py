"""The tests' one way to wait, to pick a port and to start a server process.

Every test and benchmark polls through :func:`wait_until` and takes its ports from :func:`free_port`;
``tests/test_harness.py`` fails if a second definition of either, or a test module importing another
test module, appears.
"""

from __future__ import annotations

import math
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any

import httpx


class GaveUp(AssertionError):
    """A wait ended before its deadline because what it waited on cannot happen any more (a process exited)."""


def takes_ctrl_c() -> None:
    """``preexec_fn`` of a child that a test or benchmark sends Ctrl-C (SIGINT): a shell starts a background job
    (``nohup … &``) with SIGINT ignored and every child inherits that, so the child would never see the signal
    and a Ctrl-C row would time a whole run (exit code 0, not 130)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the OS's pick: never 8050)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(
    predicate: Callable[[], Any],
    timeout_s: float = 120.0,
    what: str = "condition",
    poll_s: float = 0.25,
    give_up: Callable[[], Any] | None = None,
) -> Any:
    """The first truthy value of ``predicate()``, polled every ``poll_s`` until ``timeout_s`` has passed.

    An exception raised by ``predicate`` counts as "not yet" (a page mid-render, a server not listening yet),
    except an AssertionError, which fails at once; the last value or exception is in the AssertionError
    raised at the deadline, with ``what``.
    ``give_up`` returns a reason (truthy) to stop early, e.g. a process has exited: when it did so before a try
    that still fails, :class:`GaveUp`.
    """
    if not (isinstance(timeout_s, (int, float)) and math.isfinite(timeout_s) and timeout_s > 0):
        raise ValueError(f"timeout_s must be a finite number of seconds > 0, got {timeout_s!r}")
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while True:
        reason = give_up() if give_up is not None else None  # read first: the try below is then the last one
        try:
            last = predicate()
        except AssertionError:  # a check inside the predicate failed: that is an answer, not "not yet"
            raise
        except Exception as err:  # not ready yet; kept for the message
            last = err
        else:
            if last:
                return last
        if reason:
            raise GaveUp(f"gave up waiting for {what}: {reason}; last value {last!r}")
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}; last value {last!r}")
        time.sleep(poll_s)


ENDED = ("done", "failed")  # a job's or a model audit's states once it stops ("queued" and "running" before)


def wait_job(http: httpx.Client | str, path: str, until=ENDED, timeout_s=120.0, poll_s=0.05, each=None) -> dict:
    """The record at GET ``path`` (a job, a model audit) once its ``state`` is one of ``until``.

    ``http`` is a client with a ``base_url`` or a base URL; ``each(record)`` runs on every record read
    (a check on its progress: an AssertionError there fails the wait at once).
    """

    def reached() -> dict | None:
        r = http.get(path, timeout=10) if isinstance(http, httpx.Client) else httpx.get(http + path, timeout=10)
        record = r.json()
        if each is not None:
            each(record)
        return record if record["state"] in until else None

    return wait_until(reached, timeout_s=timeout_s, what=f"{path} to be {' or '.join(until)}", poll_s=poll_s)


def exited(proc: subprocess.Popen) -> Callable[[], str | None]:
    """A ``give_up`` for :func:`wait_until`: the process has exited (its return code)."""
    return lambda: None if proc.poll() is None else f"the process exited with {proc.returncode}"


def answers(url: str) -> bool:
    """GET ``url`` answers 200 (an exception while it is not listening yet)."""
    return httpx.get(url, timeout=2).status_code == 200


def wait_healthy(base_url: str, proc: subprocess.Popen | None = None, timeout_s: float = 120.0, path="/api/health"):
    """Until the server at ``base_url`` answers ``path`` with 200; :class:`GaveUp` if ``proc`` exits first."""
    wait_until(
        lambda: answers(base_url + path),
        timeout_s=timeout_s,
        what=f"{base_url}{path} to answer 200",
        poll_s=0.05,
        give_up=exited(proc) if proc is not None else None,
    )


def wait_warm(base_url: str, timeout_s: float = 600.0) -> None:
    """Until /api/health stops reporting the server's start-up warm-up."""
    wait_until(
        lambda: httpx.get(base_url + "/api/health", timeout=5).json()["warming"] is False,
        timeout_s=timeout_s,
        what="the server's warm-up to end",
        poll_s=0.2,
    )


def start_server(
    argv: list[str], port: int, timeout_s: float = 120.0, path: str = "/api/health", **popen
) -> tuple[subprocess.Popen, str]:
    """Run ``argv`` (a process that serves HTTP on 127.0.0.1:``port``) until ``path`` answers 200.

    Returns (process, base URL). A process that exits or never answers is stopped and the wait's error raised.
    ``popen`` goes to :class:`subprocess.Popen` (``env``, ``stdout``, ...).
    """
    proc = subprocess.Popen(argv, **popen)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, timeout_s=timeout_s, path=path)
    except BaseException:
        stop(proc)
        raise
    return proc, url


def stop(proc: subprocess.Popen, timeout_s: float = 10.0) -> None:
    """Terminate ``proc``; kill it if it has not ended within ``timeout_s``."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
