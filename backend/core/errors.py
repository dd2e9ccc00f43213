"""Exceptions shared by every layer; the API maps them to 4xx answers."""


class OrientScopeError(Exception):
    """Base class for errors a user can fix."""


class DatasetError(OrientScopeError, ValueError):
    """Invalid molecule data; the message names the molecule and what is wrong."""


class NotFoundError(OrientScopeError, KeyError):
    """An unknown dataset, molecule, job or result."""

    def __str__(self) -> str:  # KeyError quotes its message otherwise
        return str(self.args[0]) if self.args else "not found"
