"""Progress bars of the Python API: tqdm's notebook bar in Jupyter, its text bar elsewhere."""

from __future__ import annotations

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


__all__ = ["Progress", "progress_bar"]
