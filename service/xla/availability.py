"""Whether jax/jaxlib can be used here, without importing them (that takes seconds)."""

from __future__ import annotations

import importlib.util

from service.xla.errors import XlaUnavailable

#: The version the path was measured with (ORACLES): the ``xla`` extra pins it.
JAX_VERSION = "0.10.2"

INSTALL_HINT = (
    f"this needs jax and jaxlib {JAX_VERSION} (XLA:CPU): pip install 'hlo-layout[xla]'"
)


def xla_available() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in ("jax", "jaxlib"))


def require_xla() -> None:
    """Raise :class:`XlaUnavailable` with the install hint when jax/jaxlib are missing."""
    if not xla_available():
        raise XlaUnavailable(INSTALL_HINT)
