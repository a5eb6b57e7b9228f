"""The ``hlo-layout`` command line.

Exit codes: 0 success, 1 verification failed, 2 bad input (``FILE:LINE:COL: error: ...``).
Each command group lives in its own module ``service/cli/*_commands.py`` and
exposes ``register(app)``; the app picks every such module up, in name order.
"""

from __future__ import annotations

import importlib
import pkgutil

import typer


def build_app() -> typer.Typer:
    app = typer.Typer(
        name="hlo-layout",
        help="Optimal physical layouts for XLA HLO modules.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    @app.callback()
    def root() -> None:
        """Optimal physical layouts for XLA HLO modules."""

    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.endswith("_commands"))
    for name in names:
        importlib.import_module(f"{__name__}.{name}").register(app)
    return app


def main() -> None:
    build_app()()
