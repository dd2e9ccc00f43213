"""Errors raised by the read services; the API maps them to HTTP answers.

``InvalidInput`` (422) names the offending parameter or body field in ``loc``;
``NotComputed`` (409) says which pipeline stage a request needs; ``SearchPending``
(409) names the background SMARTS search job to follow.
"""

from __future__ import annotations

from orientscope.core.errors import DatasetError, NotReady, OrientScopeError


class InvalidInput(DatasetError):
    """A request parameter or body field is malformed; ``loc`` locates it, e.g. ("query", "limit")."""

    def __init__(self, message: str, loc: tuple = ()):
        super().__init__(message)
        self.loc = tuple(loc)


class NotComputed(OrientScopeError):
    """The data exist but the pipeline stage this read needs has not been computed."""


class SearchPending(NotReady):
    """A SMARTS search of a large set has not finished (or not started); ``job`` is its record, if any."""

    def __init__(self, message: str, job: dict | None = None):
        super().__init__(message)
        self.job = job
