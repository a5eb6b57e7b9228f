"""Dependency graphs of a module (networkx lives behind this module only)."""

from __future__ import annotations

import networkx as nx  # noqa: F401
