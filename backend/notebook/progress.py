"""Progress bars of the Python API: tqdm's notebook bar in Jupyter, its text bar elsewhere."""

from __future__ import annotations

import functools
import inspect
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


__all__ = ["Progress", "check_options", "checked_options", "progress_bar"]
