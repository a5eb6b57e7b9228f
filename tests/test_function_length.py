"""No function in the product code (hlo, solver, service) is longer than 80 lines: the
orchestrators read as named steps. Counted from ``def`` to the last line of the body."""

from __future__ import annotations

import ast

from conftest import REPO

LIMIT = 80


def _long_functions() -> list[str]:
    found = []
    for package in ("hlo", "solver", "service"):
        for path in sorted((REPO / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > LIMIT:
                        found.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}: {lines}")
    return found


def test_no_product_function_is_longer_than_the_limit() -> None:
    assert _long_functions() == []

