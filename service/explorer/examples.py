"""The example modules bundled with the explorer: XLA:CPU's input to layout assignment
(``NAME.hlo``) and XLA's own answer for it (``NAME.xla.hlo``), from the corpus."""

from __future__ import annotations

from importlib import resources

__all__ = ["example", "example_names"]

_FOLDER = "examples"


def example_names() -> list[str]:
    files = resources.files(__package__).joinpath(_FOLDER)
    return sorted(f.name[: -len(".hlo")] for f in files.iterdir()
                  if f.name.endswith(".hlo") and not f.name.endswith(".xla.hlo"))


def example(name: str) -> tuple[str, str | None] | None:
    """``(module text, XLA's laid-out text or None)``, or None for an unknown name."""
    if name not in example_names():
        return None
    folder = resources.files(__package__).joinpath(_FOLDER)
    xla = folder.joinpath(f"{name}.xla.hlo")
    return (folder.joinpath(f"{name}.hlo").read_text(),
            xla.read_text() if xla.is_file() else None)
