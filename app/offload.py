"""Callbacks that answer malformed input with a 422 naming the callback, instead of Dash's 500.

The callbacks run in worker threads once ``orientscope.app.compat.dispatch_in_threads`` has
replaced Dash's callback route; that route turns :class:`orientscope.app.compat.RejectedInput`
into the 422.
"""

from __future__ import annotations

import functools
import logging

from orientscope.app.compat import RejectedInput

log = logging.getLogger(__name__)

# What a callback raises when a hand-made request feeds it values the page never sends
# (a string where the page sends a dict, a negative click count, ...).
MALFORMED_INPUT = (AttributeError, TypeError, KeyError, ValueError, IndexError)


def rejecting_malformed(fn):
    """The callback ``fn``, except that malformed inputs raise :class:`RejectedInput` naming it
    (logged with the traceback) instead of giving Dash's 500."""

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MALFORMED_INPUT as err:
            log.warning("callback %s rejected its input", fn.__name__, exc_info=True)
            detail = f"callback {fn.__name__!r} cannot use its inputs: {type(err).__name__}: {str(err)[:200]}"
            raise RejectedInput(detail) from None

    return checked


def guarded(register):
    """Wrap ``orientscope.app.callback`` so every callback it registers answers malformed input with a 422."""

    def with_dependencies(*args, **kwargs):
        add = register(*args, **kwargs)

        def decorate(fn):
            add(rejecting_malformed(fn))
            return fn

        return decorate

    return with_dependencies
