"""Exceptions shared by every layer; the API maps them to 4xx answers."""


class OrientScopeError(Exception):
    """Base class for errors a user can fix."""


class DatasetError(OrientScopeError, ValueError):
    """Invalid molecule data; the message names the molecule and what is wrong."""


class NotFoundError(OrientScopeError, KeyError):
    """An unknown dataset, molecule, job or result."""

    def __str__(self) -> str:  # KeyError quotes its message otherwise
        return str(self.args[0]) if self.args else "not found"


class TooLarge(OrientScopeError):
    """A request asks for more than a documented limit allows on this route; the message names the alternative."""


class NotReady(OrientScopeError):
    """The thing exists but is not finished yet (a running export); the message says where to follow it."""


class OldLayout(NotReady):
    """A dataset stored before the sharded layout (store format 2); the message names ``orientscope migrate``."""


class Busy(OrientScopeError):
    """Too much work is already queued; try again after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: int = 30):
        super().__init__(message)
        self.retry_after = retry_after


class Unavailable(OrientScopeError):
    """The server cannot do this in its current setup (e.g. no writable export folder); the message says why."""
