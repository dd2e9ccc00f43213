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
import logging

from starlette.exceptions import HTTPException

log = logging.getLogger(__name__)

# What a callback raises when a hand-made request feeds it values the page never sends
# (a string where the page sends a dict, a negative click count, ...).
MALFORMED_INPUT = (AttributeError, TypeError, KeyError, ValueError, IndexError)


def off_loop(fn):
    """The callback ``fn`` as a coroutine function that runs it in a worker thread.

    Malformed inputs become a 422 naming the callback (logged with the traceback)
    instead of Dash's 500.
    """

    @functools.wraps(fn)
    async def run_in_thread(*args, **kwargs):
        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        except MALFORMED_INPUT as err:
            log.warning("callback %s rejected its input", fn.__name__, exc_info=True)
            detail = f"callback {fn.__name__!r} cannot use its inputs: {type(err).__name__}: {str(err)[:200]}"
            raise HTTPException(422, detail) from None

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
