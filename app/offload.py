"""Run Dash callbacks in worker threads.

Dash 4's FastAPI backend calls a plain (sync) callback on the event loop, so
one slow callback would stall every other request of the process, REST calls
included. Registering callbacks as coroutines that hand the work to a thread
keeps the loop free; ``asyncio.to_thread`` copies the context, so
``dash.callback_context`` still works inside the callback.
"""

from __future__ import annotations

import asyncio
import functools


def off_loop(fn):
    """The callback ``fn`` as a coroutine function that runs it in a worker thread."""

    @functools.wraps(fn)
    async def run_in_thread(*args, **kwargs):
        return await asyncio.to_thread(fn, *args, **kwargs)

    return run_in_thread


def offloaded(register):
    """Wrap ``app.callback`` so every callback it registers runs off the event loop."""

    def with_dependencies(*args, **kwargs):
        add = register(*args, **kwargs)

        def decorate(fn):
            add(off_loop(fn))
            return fn

        return decorate

    return with_dependencies
