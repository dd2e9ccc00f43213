"""Progress bars of the Python API: tqdm's notebook bar in Jupyter, its text bar elsewhere."""

from __future__ import annotations

import functools
import inspect
import logging
import warnings
from contextlib import contextmanager

from orientscope.core.progress import Progress, quiet


@contextmanager
def progress_bar(desc: str, show: bool = True):
    """A :class:`~orientscope.core.progress.Progress` drawn as one bar from 0 to 100 %, closed afterwards."""
    if not show:
        yield quiet
        return
    from tqdm.auto import tqdm  # the notebook bar needs ipywidgets; tqdm.auto falls back to text without them

    bar = tqdm(total=100, desc=desc, bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed} {postfix}")

    def report(fraction: float, message: str, stage: str = "") -> None:
        bar.n = int(round(100 * fraction))
        bar.set_postfix_str((f"{stage}: {message}" if stage else message)[:60])

    try:
        yield report
    finally:
        bar.close()


class _Collect(logging.Handler):
    def __init__(self, into: list[str]):
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record.getMessage())


@contextmanager
def collected_warnings(silence: bool):
    """Collect the warnings OrientScope's stages log (and Python warnings) into the yielded list.

    ``silence``: they are not printed (``progress=False``); otherwise they are printed as usual too.
    """
    messages: list[str] = []
    logger = logging.getLogger("orientscope")
    handler, propagate = _Collect(messages), logger.propagate
    logger.addHandler(handler)
    if silence:
        logger.propagate = False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            yield messages
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
    for w in caught:
        messages.append(str(w.message))
        if not silence:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)


def check_options(function: str, options, allowed: list[str]) -> None:
    """TypeError naming ``function``, the unknown keywords among ``options`` and the ``allowed`` ones."""
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise TypeError(f"{function}: unknown option(s) {unknown}; allowed: {allowed}")


def checked_options(function):
    """``function`` with an unknown keyword refused by a TypeError that lists the keywords it takes."""
    allowed = [
        name
        for name, p in inspect.signature(function).parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        check_options(function.__name__, kwargs, allowed)
        return function(*args, **kwargs)

    return wrapper


__all__ = ["Progress", "check_options", "checked_options", "collected_warnings", "progress_bar"]
