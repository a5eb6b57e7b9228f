"""The one base exception of :mod:`service.xla`."""

from __future__ import annotations


class XlaError(Exception):
    """Something the XLA path could not do; ``message`` says what, for a user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class XlaUnavailable(XlaError):
    """jax/jaxlib are not installed (they come with the ``xla`` extra)."""
