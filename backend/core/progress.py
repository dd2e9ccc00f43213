"""The one progress callback type of every long task (loading, stages, ingest, audits) and its helpers.

A :class:`Progress` is called as ``progress(fraction, message, stage)``:
``fraction`` is how much of the whole task is done (0-1), ``message`` says what
it is doing, and ``stage`` names the part of the task ("load", "frames", ...;
"" when the reporter does not know). A sub-task gets :func:`scaled`, which
maps its own 0-1 onto a slice of its parent's.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def __call__(self, fraction: float, message: str, stage: str = "") -> None: ...


def quiet(fraction: float, message: str, stage: str = "") -> None:
    """A :class:`Progress` that reports nothing."""


def scaled(progress: Progress | None, start: float, end: float, stage: str | None = None, prefix: str = "") -> Progress:
    """A :class:`Progress` for a sub-task whose 0-1 covers ``start``-``end`` of ``progress``.

    ``stage`` replaces the sub-task's own stage name (None keeps it);
    ``prefix`` goes in front of its messages.
    """
    if progress is None:
        return quiet
    parent = progress

    def report(fraction: float, message: str, sub_stage: str = "") -> None:
        parent(start + (end - start) * fraction, prefix + message, sub_stage if stage is None else stage)

    return report
