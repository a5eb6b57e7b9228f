"""The Dockerfile's structure (no Docker engine runs here, so the image is not built in tests)."""

from __future__ import annotations

import json
import re
import tomllib

from conftest import REPO


def instructions() -> list[tuple[str, str]]:
    text = (REPO / "Dockerfile").read_text()
    text = re.sub(r"\\\n\s*", " ", text)  # join continuation lines
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def test_slim_python_311_base_and_single_stage() -> None:
    froms = [rest for kw, rest in instructions() if kw == "FROM"]
    assert froms == ["python:3.11-slim"]


def test_dependencies_are_installed_before_the_code_is_copied() -> None:
    steps = instructions()
    copies = [i for i, (kw, _) in enumerate(steps) if kw == "COPY"]
    deps = next(i for i, (kw, rest) in enumerate(steps) if kw == "RUN" and "requirements" in rest)
    assert steps[copies[0]][1].startswith("pyproject.toml")
    assert copies[0] < deps < min(i for i in copies if "service" in steps[i][1])
    # The dependency layer installs exactly the project's dependency list.
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["dependencies"] and "['project']['dependencies']" in steps[deps][1]


def test_runs_as_a_non_root_user() -> None:
    users = [rest for kw, rest in instructions() if kw == "USER"]
    assert users and users[-1] not in ("root", "0")
    # USER comes after the last install step, so the server process is unprivileged.
    steps = instructions()
    last_user = max(i for i, (kw, _) in enumerate(steps) if kw == "USER")
    assert all(kw != "RUN" or "pip" not in rest for kw, rest in steps[last_user:])


def test_healthcheck_hits_healthz_and_cmd_serves_on_all_interfaces() -> None:
    steps = dict((kw, rest) for kw, rest in instructions())
    assert "/healthz" in steps["HEALTHCHECK"] and "CMD" in steps["HEALTHCHECK"]
    cmd = json.loads(steps["CMD"])
    assert cmd[:2] == ["hlo-layout", "serve"] and cmd[cmd.index("--host") + 1] == "0.0.0.0"
    port = cmd[cmd.index("--port") + 1]
    assert steps["EXPOSE"] == port and f":{port}/healthz" in steps["HEALTHCHECK"]


def test_dockerignore_keeps_the_context_small() -> None:
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".git", "tests"} <= set(ignored)


def test_build_imports_the_installed_service() -> None:
    # Every code directory being an installed package is checked in tests/test_packaging.py;
    # the image build also imports the installed service from outside the source tree.
    steps = instructions()
    smoke = [rest for kw, rest in steps if kw == "RUN" and "import service.app" in rest]
    assert smoke and "service.layout_operations" in smoke[0] and smoke[0].startswith("cd / ")


def test_build_compiles_the_dual_bounds_sweeps_into_a_shared_cache() -> None:
    # numba compiles solver.trws on first use; the image does it at build time, into a
    # cache directory set before that step and readable by the non-root user.
    steps = instructions()
    warm = [i for i, (kw, rest) in enumerate(steps) if kw == "RUN" and "trws.warm()" in rest]
    cache = [i for i, (kw, rest) in enumerate(steps)
             if kw == "ENV" and "NUMBA_CACHE_DIR=/var/cache/numba" in rest]
    user = [i for i, (kw, _) in enumerate(steps) if kw == "USER"]
    assert warm and cache and user and cache[0] < warm[0] < user[0]
    assert "chmod -R a+rwX /var/cache/numba" in steps[warm[0]][1]
