"""Packaging: a plain (non-editable) install must carry every module and data file."""

from __future__ import annotations

import tomllib

from setuptools import find_packages

from conftest import REPO


def _source_dirs() -> set[str]:
    dirs = set()
    for top in ("hlo", "solver", "service"):
        for path in (REPO / top).rglob("*.py"):
            dirs.add(".".join(path.parent.relative_to(REPO).parts))
    return dirs


def test_every_source_directory_is_an_installed_package() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    installed = set(find_packages(where=str(REPO), include=include))
    missing = sorted(_source_dirs() - installed)
    assert not missing, f"directories with modules but no __init__.py (left out of wheels): {missing}"


def test_builtin_targets_are_package_data() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["hlo"]
    shipped = {p.name for pattern in patterns for p in (REPO / "hlo").glob(pattern)}
    on_disk = {p.name for p in (REPO / "hlo" / "targets").glob("*.toml")}
    assert on_disk and on_disk <= shipped


def test_explorer_page_and_examples_are_package_data() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["service"]
    shipped = {p for pattern in patterns for p in (REPO / "service").glob(pattern)}
    folder = REPO / "service" / "explorer"
    on_disk = {p for p in (folder / "static").iterdir()} | set((folder / "examples").glob("*.hlo"))
    assert {p.name for p in on_disk} >= {"index.html", "explorer.js", "explorer.css"}
    assert on_disk <= shipped
