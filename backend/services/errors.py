"""Errors raised by the read services; the API maps them to HTTP answers.

``InvalidInput`` (422) names the offending parameter or body field in ``loc``;
``NotComputed`` (409) says which pipeline stage a request needs.
"""

from __future__ import annotations

from backend.core.errors import DatasetError, OrientScopeError


class InvalidInput(DatasetError):
    """A request parameter or body field is malformed; ``loc`` locates it, e.g. ("query", "limit")."""

    def __init__(self, message: str, loc: tuple = ()):
        super().__init__(message)
        self.loc = tuple(loc)


class NotComputed(OrientScopeError):
    """The data exist but the pipeline stage this read needs has not been computed."""
